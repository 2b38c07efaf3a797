// The API reference (docs/api/README.md) and the server's one error table (src/base/errors.ts)
// list exactly the same codes with the same HTTP statuses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { httpStatusByCode } from '../../../src/base/errors.js';

/** The checkout this test runs from (compiled tests live under dist/, or a private build dir). */
function projectRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'docs', 'api', 'README.md'))) {
    const parent = dirname(dir);
    if (parent === dir) return process.cwd();
    dir = parent;
  }
  return dir;
}
const root = projectRoot();

test('the documented error table equals the code table', () => {
  const doc = readFileSync(join(root, 'docs', 'api', 'README.md'), 'utf8');
  const documented: Record<string, number> = {};
  for (const match of doc.matchAll(/^\| (\d{3}) \| `([a-z_]+)` \|/gm)) {
    documented[match[2] as string] = Number(match[1]);
  }
  assert.deepEqual(documented, { ...httpStatusByCode });
});
