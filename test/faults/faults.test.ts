// The short fault run of npm test: 20 s of reads, writes, CAS and leases through the client
// library on a real 3-member cell while the nemesis kills, pauses, partitions, slows the disk of
// and steps the clock of members; then the linearizability, durability, watch and lease checkers
// over the whole history. Its membership twin (faults-membership.test.ts) is in `npm run
// test:long`; the long run is `npm run faults -- --time 60 --seed S` (README).
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
