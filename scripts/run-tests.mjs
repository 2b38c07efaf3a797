// Runs the compiled tests with Node's runner. The default suite leaves out the slow cluster tests
// listed in test/long-tests.txt so that `npm test` stays near ten minutes on two cores; `--long`
// runs only those, `--all` runs everything.
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const mode = process.argv[2] ?? '--default';
if (!['--default', '--long', '--all'].includes(mode)) {
  console.error(`usage: node scripts/run-tests.mjs [--default|--long|--all] (got ${mode})`);
  process.exit(2);
}

function testFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(path);
    return entry.name.endsWith('.test.js') ? [path] : [];
  });
}

const long = new Set(
  readFileSync('test/long-tests.txt', 'utf8')
    .split('\n')
    .map((line) => line.replace(/#.*/, '').trim())
    .filter(Boolean)
    .map((source) => join('dist', source.replace(/\.ts$/, '.js'))),
);
const all = testFiles('dist/test').sort();
for (const file of long) {
  if (!all.includes(file)) {
    console.error(`test/long-tests.txt names ${file}, which the build did not produce`);
    process.exit(2);
  }
}
const chosen = all.filter((file) => (mode === '--all' ? true : mode === '--long' ? long.has(file) : !long.has(file)));
const run = spawnSync(process.execPath, ['--test', '--test-concurrency=2', ...chosen], { stdio: 'inherit' });
process.exit(run.status ?? 1);
