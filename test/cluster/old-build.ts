// An older commit of Baton built into a temporary directory, for tests that run members of two
// versions side by side (rolling upgrades). Built from this checkout's git history (the
// dependencies are this checkout's node_modules, linked); an environment variable (BATON_OLD_BUILD
// by default) may name a tree already built instead. Without the commit in history the caller skips, saying why.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..', '..');
export const thisCli = join(repoRoot, 'dist/src/cli/main.js');

export interface OldBuild {
  readonly dir: string;
  readonly cli: string;
  cleanup(): void;
}

/** The build of `commit` (or the tree the environment variable `dirVariable` names), or why there is none. */
export function oldBuild(commit: string, dirVariable = 'BATON_OLD_BUILD'): OldBuild | string {
  const given = process.env[dirVariable];
  if (given !== undefined && given !== '') {
    const cli = join(given, 'dist/src/cli/main.js');
    return existsSync(cli) ? { dir: given, cli, cleanup: () => {} } : `no build in ${given}`;
  }
  try {
    execFileSync('git', ['-C', repoRoot, 'cat-file', '-e', `${commit}^{commit}`], { stdio: 'ignore' });
  } catch {
    return `commit ${commit} not in this checkout's history`;
  }
  const dir = mkdtempSync(join(tmpdir(), 'baton-old-'));
  const archive = execFileSync('git', ['-C', repoRoot, 'archive', commit], { maxBuffer: 1 << 30 });
  execFileSync('tar', ['-x', '-C', dir], { input: archive });
  symlinkSync(join(repoRoot, 'node_modules'), join(dir, 'node_modules'));
  execFileSync(process.execPath, [join(repoRoot, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], { cwd: dir, stdio: 'ignore' });
  return { dir, cli: join(dir, 'dist/src/cli/main.js'), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
