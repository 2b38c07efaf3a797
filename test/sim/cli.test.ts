// `baton sim` as users run it: a clean sweep ends with "N seeds, 0 violations" and exit 0; a
// failing seed prints its invariant, its step and the exact replay command, and exits 1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const main = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src', 'cli', 'main.js');

function sim(args: readonly string[]): { status: number | null; lines: string[] } {
  const run = spawnSync(process.execPath, [main, 'sim', ...args], { encoding: 'utf8' });
  return { status: run.status, lines: run.stdout.trim().split('\n') };
}

test('a clean sweep ends with the summary line and exit 0', () => {
  const { status, lines } = sim(['--seeds', '3', '--seed-start', '40']);
  assert.equal(status, 0);
  assert.ok(lines.includes('3 seeds, 0 violations'), lines.join('\n'));
  assert.match(lines[lines.length - 1] ?? '', /seeds\/s/);
});

test('a violation names the invariant and step, gives the replay command, and exits 1', () => {
  const { status, lines } = sim(['--seed', '1', '--bug', 'doubleVote']);
  assert.equal(status, 1);
  assert.match(lines[0] ?? '', /^seed 1: one vote per term at step \d+/);
  assert.equal(lines[1], '  replay: npm run sim -- --seed 1 --trace --bug doubleVote');
  assert.ok(lines.includes('1 seeds, 1 violations'));
});

test('--trace prints one line per event, and replays identically', () => {
  const first = sim(['--seed', '9', '--trace']).lines.slice(0, -1);
  const second = sim(['--seed', '9', '--trace']).lines.slice(0, -1);
  assert.ok(first.length > 100);
  assert.deepEqual(second, first);
});

test('--workload leases runs lease holders; a broken lease rule prints its replay command', () => {
  const clean = sim(['--workload', 'leases', '--seeds', '2']);
  assert.equal(clean.status, 0, clean.lines.join('\n'));
  assert.ok(clean.lines.includes('2 seeds, 0 violations'));
  const broken = sim(['--workload', 'leases', '--seed', '1', '--lease-bug', 'promoteAtZero']);
  assert.equal(broken.status, 1);
  assert.match(broken.lines[0] ?? '', /^seed 1: lease never expires early at step \d+/);
  assert.ok(
    broken.lines.includes('  replay: npm run sim -- --seed 1 --trace --workload leases --lease-bug promoteAtZero'),
    broken.lines.join('\n'),
  );
  assert.equal(sim(['--workload', 'leases', '--driver', 'sim']).status, 2);
});
