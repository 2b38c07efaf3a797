// A short fault run of membership changes (`npm run test:long`): it starts with a grow-first cycle
// (a fresh member added and promoted, an old one removed) and then replaces members (remove, wipe,
// add back as a learner, promote) among more grow-first cycles, kills and leader partitions; the
// linearizability, durability, watch and lease checkers run over the whole history. The default
// suite's short fault run is faults.test.ts; the long run is `npm run faults -- --time 60 --seed S
// --kinds membership,grow-first,kill,partition-leader` (README).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runFaults } from './runner.js';

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
