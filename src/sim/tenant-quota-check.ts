// The simulator's tenant checker (issue #28): lease runs with `tenants` start every member's store
// with one tenant owning the lease workload's keys (/lease/), with limits the workload reaches, so
// attaches are refused at the limit and expiries free room again, under every fault. After each
// entry a member applies, it checks that no hard quota grew past its limit (the applied state never
// exceeds a hard quota at any revision) and that the stored use equals a recount of the keys.
// A refused attach is an answer the lease workload already understands (the key is not attached).
import { concatBytes, u64Bytes } from '../mvcc/bytes.js';
import { encodeTenants, tenantsKey } from '../mvcc/tenants-record.js';
import type { ApplyOutcome, MemoryEngine, MvccStore } from '../mvcc/index.js';
import { limitOf, unlimited, type StoredQuota, type TenantRecord, type TenantUsage } from '../base/tenants.js';

/** Limits the lease workload reaches within a run (a few sessions, 1-2 keys of 4 bytes per lease). */
export const simTenants: readonly TenantRecord[] = [
  { name: 'leases', prefixes: ['/lease/'], limits: { ...unlimited, maxKeys: 10, maxBytes: 36, maxLeases: 6 } },
];

const storedQuotas: readonly StoredQuota[] = ['keys', 'bytes', 'leases'];

export class TenantQuotaCheck {
  /** Set by simulate() once the world exists. */
  report: (invariant: string, detail: string) => void = () => {};
  /** Applied entries checked, and those refused with quota_exceeded (once per member that applied them). */
  readonly counts = { checked: 0, refusals: 0 };

  constructor(readonly tenants: readonly TenantRecord[] = simTenants) {}

  /** The table in a fresh store, as version 1: every member starts from this same state. */
  bootstrap(engine: MemoryEngine): void {
    engine.write((writer) => writer.put(tenantsKey, concatBytes([u64Bytes(1), encodeTenants(this.tenants)])));
  }

  usageOf(store: MvccStore): Map<string, TenantUsage> {
    return new Map(store.tenantTable().map((tenant) => [tenant.name, store.tenantUsage(tenant.name)]));
  }

  /** After `index` applied with `outcome` on a member whose use was `before`. */
  afterApply(store: MvccStore, index: number, before: Map<string, TenantUsage>, outcome: ApplyOutcome): void {
    this.counts.checked++;
    if (outcome.type === 'failed' && outcome.error.code === 'quota_exceeded') this.counts.refusals++;
    for (const tenant of store.tenantTable()) {
      const used = store.tenantUsage(tenant.name);
      const was = before.get(tenant.name);
      for (const quota of storedQuotas) {
        const limit = limitOf(tenant.limits, quota);
        if (limit === null || used[quota] <= limit || (was !== undefined && used[quota] <= was[quota])) continue;
        this.report('tenant quota exceeded', `entry ${index}: tenant ${tenant.name} holds ${used[quota]} ${quota}, limit ${limit} (was ${was?.[quota] ?? '?'})`);
      }
      const counted = recount(store, tenant);
      if (counted.keys !== used.keys || counted.bytes !== used.bytes || counted.leases !== used.leases) {
        this.report('tenant use counted', `entry ${index}: tenant ${tenant.name} stores ${JSON.stringify(used)}, its keys hold ${JSON.stringify(counted)}`);
      }
    }
  }
}

/** A tenant's use from its current keys (the prefixes of one tenant never hold another's keys here). */
function recount(store: MvccStore, tenant: TenantRecord): TenantUsage {
  let keys = 0;
  let bytes = 0;
  const leases = new Set<number>();
  for (const prefix of tenant.prefixes) {
    for (const kv of store.range({ type: 'get', key: prefix, prefix: true }).kvs) {
      keys++;
      bytes += kv.value.length;
      if (kv.lease !== 0) leases.add(kv.lease);
    }
  }
  return { keys, bytes, leases: leases.size };
}
