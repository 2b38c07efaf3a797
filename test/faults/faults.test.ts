// The short fault run of npm test: 20 s of reads, writes, CAS and leases through the client
// library on a real 3-member cell while the nemesis kills, pauses, partitions, slows the disk of
// and steps the clock of members; then the linearizability, durability, watch and lease checkers
// over the whole history. A second short run starts with a grow-first cycle (a fresh member added
// and promoted, an old one removed) and then replaces members (remove, wipe, add back as a
// learner, promote) among more grow-first cycles, kills and leader partitions. The long run is
// `npm run faults -- --time 60 --seed S` (README).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runFaults } from './runner.js';

test('a short fault run stays linearizable, loses no write, watch event or live lease', { timeout: 120_000 }, async (t) => {
  const seed = BigInt(process.env['BATON_SEED'] ?? '11');
  const summary = await runFaults({ timeS: 20, seed });
  for (const line of summary.lines) t.diagnostic(line);
  // A loose floor: on a loaded machine (load averages of 20+) a 20 s run may do only ~150.
  assert.ok(summary.operations > 50, 'the clients got work done');
  assert.equal(summary.verdict, 'ok', `${summary.lines.join('\n')}\nrun again: npm run faults -- --time 20 --seed ${seed}`);
});

test('a short run of membership changes (with kills and leader partitions) keeps every checker green', { timeout: 150_000 }, async (t) => {
  const seed = BigInt(process.env['BATON_SEED'] ?? '2');
  // grow-first goes first (a fresh member in, an old one out), so the replacements, kills and
  // partitions that follow hit a cell whose members are no longer the initial ones.
  const kinds = ['membership', 'grow-first', 'kill', 'partition-leader'] as const;
  const summary = await runFaults({ timeS: 20, seed, kinds, first: ['grow-first'] });
  for (const line of summary.lines) t.diagnostic(line);
  assert.ok(summary.operations > 50, 'the clients got work done');
  assert.ok((summary.faults.get('grow-first') ?? 0) > 0, 'the cell grew and shrank back');
  assert.equal(summary.verdict, 'ok', `${summary.lines.join('\n')}\nrun again: npm run faults -- --time 20 --seed ${seed} --kinds ${kinds.join(',')} --first grow-first`);
});
