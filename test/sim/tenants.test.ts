// Tenants in the simulator (issue #28): lease runs whose stores start with a tenant owning the lease
// workload's keys (src/sim/tenant-quota-check.ts), with key, byte and lease limits the workload
// reaches. Under the seeds' faults (leader changes, partitions, crashes, snapshots), after every
// entry each member applies, no hard quota has grown past its limit and the stored use equals a
// recount of the keys; the lease checker still holds (a refused attach is not attached). With the
// store's tenant check broken on purpose (tenantQuotaOff) the checker reports it.
// BATON_TENANT_SEEDS=N runs more seeds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { simulateAsync, type SimResult } from '../../src/sim/index.js';

const seedCount = Number(process.env['BATON_TENANT_SEEDS'] ?? 12);

function run(seed: bigint, tenantQuotaOff = false): Promise<SimResult> {
  return simulateAsync({ seed, driver: 'server', workload: 'leases', tenants: true, ...(tenantQuotaOff ? { storeBugs: { tenantQuotaOff } } : {}) });
}

test(`no applied state exceeds a tenant's hard quota over ${seedCount} lease seeds of faults`, async () => {
  const failures: string[] = [];
  let refusals = 0;
  let checked = 0;
  for (let i = 0; i < seedCount; i++) {
    const seed = 28_000n + BigInt(i);
    const result = await run(seed);
    for (const v of result.violations) {
      failures.push(`seed ${seed}: ${v.invariant}: ${v.detail.split('\n')[0]} (npm run sim -- --seed ${seed} --workload leases --tenants --trace)`);
    }
    refusals += result.stats.tenants?.refusals ?? 0;
    checked += result.stats.tenants?.checked ?? 0;
  }
  assert.deepEqual(failures, []);
  assert.ok(checked > seedCount * 100, `entries checked: ${checked}`);
  assert.ok(refusals > seedCount, `the workload reached the limits: ${refusals} refusals applied`);
});

test('teeth: a store that skips the tenant check on puts is caught', async () => {
  let caught = 0;
  const invariants = new Set<string>();
  for (let i = 0; i < 4; i++) {
    const result = await run(28_000n + BigInt(i), true);
    if (result.violations.length > 0) caught++;
    for (const v of result.violations) invariants.add(v.invariant);
  }
  assert.ok(caught >= 3, `caught in ${caught} of 4 seeds`);
  assert.ok(invariants.has('tenant quota exceeded'), [...invariants].join(', '));
});
