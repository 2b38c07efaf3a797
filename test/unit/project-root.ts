// The checkout a compiled test runs from: tests live under dist/ (or a private build directory
// beside a checkout), so the files they check are found by walking up to where `marker` exists.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export function projectRoot(fromUrl: string, marker: string): string {
  let dir = dirname(fileURLToPath(fromUrl));
  while (!existsSync(join(dir, marker))) {
    const parent = dirname(dir);
    if (parent === dir) return process.cwd();
    dir = parent;
  }
  return dir;
}
