// Admission per tenant on one node (issue #28): before a request is served or proposed, the
// tenant owning its key (the longest owned prefix) must have a token in its reads or writes
// bucket and a free slot among its concurrent requests (watches have their own quotas on each
// node: src/watch/tenant-quotas.ts, which refuses through `refuse` here). Refused here, a request costs a table lookup and an error: no body read (the HTTP edge
// looks first), no proposal, no ReadIndex. Only that tenant is refused. The node also counts every
// refusal it answers, admission and hard quotas alike, for baton_tenant_rejections_total.
// Time and randomness are injected (the core takes neither itself).
import { QuotaExceededError } from './errors.js';
import { TenantBuckets, type Admission } from './tenant-buckets.js';
import { admissionError, retryAfterSeconds, tenantOfKey, type Quota, type TenantRecord } from './tenants.js';

export type RequestKind = 'read' | 'write';

export interface TenantAdmissionDeps {
  /** The tenant table as applied on this node (the store keeps it decoded; [] = no tenants). */
  tenants(): readonly TenantRecord[];
  nowMs(): number;
  /** In [0, 1): spreads the Retry-After of clients refused together. */
  random(): number;
}

/** Gives a slot back; safe to call more than once (only the first counts). */
export type Release = () => void;

const nothingToRelease: Release = () => {};

export class TenantAdmission {
  private readonly buckets = new TenantBuckets();
  private readonly requests = new Map<string, number>();
  private readonly refused = new Map<string, Map<Quota, number>>();
  private knownTable: readonly TenantRecord[] = [];
  /** Requests admitted per tenant and kind in the current and the last whole second (the metrics' use). */
  private readonly perSecond = new Map<string, { startMs: number; count: number; last: number }>();

  constructor(private readonly deps: TenantAdmissionDeps) {}

  /** Whether the cell has tenants at all (without, admission costs nothing more than this). */
  active(): boolean {
    return this.table().length > 0;
  }

  /** The tenants owning any of `keys`, each once (none: an empty list, the common case). */
  tenantsOf(keys: readonly string[]): TenantRecord[] {
    const table = this.table();
    if (table.length === 0) return [];
    const found: TenantRecord[] = [];
    for (const key of keys) {
      const tenant = tenantOfKey(table, key);
      if (tenant !== null && !found.includes(tenant)) found.push(tenant);
    }
    return found;
  }

  /** The flow fair admission queues a request on `keys` in: its tenants' names, '' for none. */
  flowOf(keys: readonly string[]): string {
    const tenants = this.tenantsOf(keys);
    return tenants.length === 1 ? (tenants[0] as TenantRecord).name : tenants.map((t) => t.name).join(',');
  }

  /**
   * Throws the refusal a request on `key` would get now, taking nothing: the HTTP edge asks before
   * it reads a body, so a refused client's upload is not read. `admit` still decides.
   */
  precheck(key: string, kind: RequestKind): void {
    for (const tenant of this.tenantsOf([key])) {
      const bucket = this.buckets.takeOrWait(tenant, bucketOf(kind), this.deps.nowMs(), false);
      if (bucket !== null) throw this.refuse(bucket.error, bucket.waitMs);
      const concurrent = this.concurrencyRefusal(tenant);
      if (concurrent !== null) throw this.refuse(concurrent, 1000);
    }
  }

  /**
   * Admits a request touching `keys`: a token from each owning tenant's bucket and a slot among
   * its concurrent requests. Returns the release (call once answered), or throws quota_exceeded
   * with a Retry-After; a refused request takes nothing from any tenant.
   */
  admit(keys: readonly string[], kind: RequestKind): Release {
    const tenants = this.tenantsOf(keys);
    if (tenants.length === 0) return nothingToRelease;
    const nowMs = this.deps.nowMs();
    for (const tenant of tenants) {
      const concurrent = this.concurrencyRefusal(tenant);
      if (concurrent !== null) throw this.refuse(concurrent, 1000);
      const bucket = this.buckets.takeOrWait(tenant, bucketOf(kind), nowMs, false);
      if (bucket !== null) throw this.refuse(bucket.error, bucket.waitMs);
    }
    for (const tenant of tenants) {
      this.buckets.takeOrWait(tenant, bucketOf(kind), nowMs, true);
      this.requests.set(tenant.name, (this.requests.get(tenant.name) ?? 0) + 1);
      this.countAdmitted(`${tenant.name}\u0000${kind}`, nowMs);
    }
    return this.releaser(this.requests, tenants.map((t) => t.name));
  }

  /**
   * Counts a refusal this node answers that was decided elsewhere (a hard quota at apply): any
   * quota_exceeded naming a tenant. Other errors are ignored.
   */
  countRefusal(error: unknown): void {
    if (!(error instanceof QuotaExceededError)) return;
    const { tenant, quota } = error.details as { tenant?: unknown; quota?: unknown };
    if (typeof tenant === 'string' && typeof quota === 'string') this.count(tenant, quota as Quota);
  }

  /** Requests of `kind` admitted for `name` here in the last whole second. */
  ratePerSecond(name: string, kind: RequestKind): number {
    const window = this.perSecond.get(`${name}\u0000${kind}`);
    if (window === undefined) return 0;
    const age = this.deps.nowMs() - window.startMs;
    return age < 1000 ? window.last : age < 2000 ? window.count : 0;
  }

  /** Requests of `name` being served here now. */
  inFlight(name: string): number {
    return this.requests.get(name) ?? 0;
  }

  /** Refusals answered by this node, per tenant and quota, since it started. */
  rejections(): Array<{ tenant: string; quota: Quota; count: number }> {
    const all: Array<{ tenant: string; quota: Quota; count: number }> = [];
    for (const [tenant, byQuota] of this.refused) for (const [quota, count] of byQuota) all.push({ tenant, quota, count });
    return all;
  }

  /** The table, dropping the buckets of tenants it no longer holds when it changes. */
  private table(): readonly TenantRecord[] {
    const table = this.deps.tenants();
    if (table !== this.knownTable) {
      for (const old of this.knownTable) {
        if (table.some((t) => t.name === old.name)) continue;
        this.buckets.forget(old.name);
        this.perSecond.delete(`${old.name}\u0000read`);
        this.perSecond.delete(`${old.name}\u0000write`);
      }
      this.knownTable = table;
    }
    return table;
  }

  private countAdmitted(id: string, nowMs: number): void {
    let window = this.perSecond.get(id);
    if (window === undefined) this.perSecond.set(id, (window = { startMs: nowMs, count: 0, last: 0 }));
    const age = nowMs - window.startMs;
    if (age >= 1000) {
      window.last = age < 2000 ? window.count : 0;
      window.startMs = age < 2000 ? window.startMs + 1000 : nowMs;
      window.count = 0;
    }
    window.count++;
  }

  private concurrencyRefusal(tenant: TenantRecord): QuotaExceededError | null {
    const limit = tenant.limits.maxConcurrentRequests;
    const used = this.requests.get(tenant.name) ?? 0;
    return limit !== null && used >= limit ? admissionError(tenant.name, 'concurrent_requests', limit, used) : null;
  }

  /** Stamps `error`'s Retry-After (at least `waitMs`, with jitter) and counts it: every admission refusal of this node. */
  refuse(error: QuotaExceededError, waitMs: number): QuotaExceededError {
    error.retryAfterSeconds = retryAfterSeconds(Math.max(1, Math.ceil(waitMs / 1000)), this.deps.random);
    this.countRefusal(error);
    return error;
  }

  private count(tenant: string, quota: Quota): void {
    let byQuota = this.refused.get(tenant);
    if (byQuota === undefined) this.refused.set(tenant, (byQuota = new Map()));
    byQuota.set(quota, (byQuota.get(quota) ?? 0) + 1);
  }

  private releaser(counts: Map<string, number>, names: readonly string[]): Release {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      for (const name of names) {
        const left = (counts.get(name) ?? 1) - 1;
        if (left <= 0) counts.delete(name);
        else counts.set(name, left);
      }
    };
  }
}

function bucketOf(kind: RequestKind): Admission {
  return kind === 'read' ? 'reads_per_second' : 'writes_per_second';
}
