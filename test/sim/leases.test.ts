// Leases in the simulator (issue 7): the production lease service on every member, on simulated
// time, under leader changes, partitions, pauses, crashes and lossy links. Lease holders renew
// every TTL/3 or abandon their leases; the lease checker (src/sim/lease-checker.ts) requires
// that no lease is deleted, or reported gone, before every grant or renewal answered to its
// holder ran out (measured from the request's send time), that each expiry is one log entry
// applied at the same index and revision everywhere and deletes every attached key, and that
// abandoned leases do expire once the faults stop. 200 seeds by default (BATON_LEASE_SEEDS,
// BATON_LEASE_SEED_START to change); failures print their replay command.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseSeed, simulateAsync, type SimOptions, type SimResult } from '../../src/sim/index.js';

const seedCount = Number(process.env['BATON_LEASE_SEEDS'] ?? 200);
const seedStart = parseSeed(process.env['BATON_LEASE_SEED_START'] ?? '1');

function describe(result: SimResult, extra: string): string[] {
  return result.violations.map(
    (v) =>
      `seed ${result.seed}: ${v.invariant} at step ${v.step} (${v.timeMs} ms): ${v.detail.split('\n')[0]}\n` +
      `  reproduce with: npm run sim -- --seed ${result.seed} --workload leases --trace${extra}`,
  );
}

function run(seed: bigint, more: Partial<SimOptions> = {}): Promise<SimResult> {
  return simulateAsync({ seed, driver: 'server', workload: 'leases', ...more });
}

test(`leases keep their promises over ${seedCount} seeds of faults`, async () => {
  const failures: string[] = [];
  const totals = { granted: 0, renewalsAcked: 0, renewalsAcrossLeaders: 0, expired: 0, abandoned: 0, keysAttached: 0 };
  let elections = 0;
  for (let i = 0; i < seedCount; i++) {
    const result = await run(seedStart + BigInt(i));
    failures.push(...describe(result, ''));
    const stats = result.stats.leases;
    assert.ok(stats !== undefined, 'a lease run reports lease stats');
    for (const name of Object.keys(totals) as (keyof typeof totals)[]) totals[name] += stats[name];
    elections += result.stats.elections;
  }
  assert.deepEqual(failures, []);
  // The sweep exercised what it claims to (not a vacuous pass): leases were renewed through
  // leader changes, and abandoned ones expired.
  if (seedCount >= 50) {
    assert.ok(totals.renewalsAcrossLeaders > 100, `renewals across leader changes: ${JSON.stringify(totals)}`);
    assert.ok(totals.expired > 100 && totals.keysAttached > 100, JSON.stringify(totals));
    assert.ok(elections > seedCount * 2, `elections: ${elections}`);
  }
});

test('teeth: a new leader that restarts leases at 0 remaining is caught', async () => {
  const caught: string[] = [];
  for (let seed = 1n; seed <= 5n; seed++) {
    const result = await run(seed, { leaseBugs: { promoteAtZero: true } });
    caught.push(...result.violations.map((v) => v.invariant));
  }
  assert.ok(caught.includes('lease never expires early'), `violations: ${caught.join(', ')}`);
});

test('a lease run replays byte for byte', async () => {
  const traceOf = async (seed: bigint): Promise<string[]> => {
    const lines: string[] = [];
    await run(seed, { profile: 'chaos', trace: (line) => lines.push(line) });
    return lines;
  };
  const first = await traceOf(7n);
  assert.ok(first.some((line) => line.includes('lease') && line.includes('revoked')), 'the trace shows expiries');
  assert.deepEqual(await traceOf(7n), first);
});
