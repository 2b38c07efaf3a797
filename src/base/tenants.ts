// Tenants (issue #28): a tenant owns key prefixes (namespaces) and has quotas. Pure functions
// shared by the state machine (hard quotas decided at apply, so every member agrees) and the
// node (admission before proposing): a record's validation, which tenant a key belongs to, and
// the quota arithmetic. Growth past a limit is refused; shrinking is always allowed, so deletes
// and compaction work and a limit lowered below use keeps the data and refuses only new growth.
import { QuotaExceededError } from './errors.js';
import { namespaceProblem } from './namespaces.js';

/** Tenants in one cell: bounds the tenant table and every lookup's work. */
export const tenantsMax = 1_000;
/** Prefixes one tenant owns. */
export const tenantPrefixesMax = 64;
/** A tenant's name: short, printable, safe in a URL path and a metric label. */
export const tenantNameBytesMax = 64;
const tenantNamePattern = /^[a-z0-9][a-z0-9._-]*$/;

/** Quotas counted in the state machine (hard, decided at apply). */
export type StoredQuota = 'keys' | 'bytes' | 'leases';
/** Admission quotas, kept on each node (src/base/tenant-admission.ts): not replicated state. */
export type AdmissionQuota =
  | 'reads_per_second' | 'writes_per_second' | 'concurrent_requests' | 'watches' | 'watch_bytes' | 'events_per_second';
/** Every quota a tenant can hit: the stored ones, the transaction size and the admission quotas. */
export type Quota = StoredQuota | 'txn_ops' | AdmissionQuota;
/** Every quota, in the order metrics and `baton tenant show` list them. */
export const quotaNames: readonly Quota[] = [
  'keys', 'bytes', 'leases', 'txn_ops', 'reads_per_second', 'writes_per_second', 'concurrent_requests', 'watches',
  'watch_bytes', 'events_per_second',
];

/** Limits; null = unlimited. */
export interface TenantLimits {
  readonly maxKeys: number | null;
  /** Value bytes (keys' names not counted). */
  readonly maxBytes: number | null;
  readonly maxLeases: number | null;
  readonly maxTxnOps: number | null;
  readonly readsPerSecond: number | null;
  readonly writesPerSecond: number | null;
  /** Requests of the tenant being served at once on one node (reads, writes, txns). */
  readonly maxConcurrentRequests: number | null;
  /** Watches of the tenant open at once on one node. */
  readonly maxWatches: number | null;
  /**
   * Undelivered watch bytes queued for the tenant's watchers on one node (src/watch/tenant-quotas.ts).
   * Added after the table's first format: an older member does not read it (see limitsAddedLater).
   */
  readonly maxWatchBytes: number | null;
  /** Watch events delivered to the tenant's watchers per second on one node: paced, never dropped. */
  readonly eventsPerSecond: number | null;
}

export interface TenantRecord {
  readonly name: string;
  readonly prefixes: readonly string[];
  readonly limits: TenantLimits;
}

/** A tenant's use of the stored quotas, kept by the state machine. */
export interface TenantUsage {
  readonly keys: number;
  readonly bytes: number;
  readonly leases: number;
}

export const zeroUsage: TenantUsage = { keys: 0, bytes: 0, leases: 0 };

export const unlimited: TenantLimits = {
  maxKeys: null, maxBytes: null, maxLeases: null, maxTxnOps: null, readsPerSecond: null, writesPerSecond: null,
  maxConcurrentRequests: null, maxWatches: null, maxWatchBytes: null, eventsPerSecond: null,
};

/**
 * Limits added after members already stored tenant tables. A member of an older build skips them
 * when it decodes the table (unlimited there), so the state machine must not refuse a table for
 * them either: at apply an invalid value reads as unlimited (both builds then store the same bytes
 * and accept the same entries); the HTTP API refuses invalid values before anything is proposed.
 */
export const limitsAddedLater: ReadonlyArray<keyof TenantLimits> = ['maxWatchBytes', 'eventsPerSecond'];

const limitOfQuota: Record<Quota, keyof TenantLimits> = {
  keys: 'maxKeys', bytes: 'maxBytes', leases: 'maxLeases', txn_ops: 'maxTxnOps',
  reads_per_second: 'readsPerSecond', writes_per_second: 'writesPerSecond',
  concurrent_requests: 'maxConcurrentRequests', watches: 'maxWatches',
  watch_bytes: 'maxWatchBytes', events_per_second: 'eventsPerSecond',
};

/** The limit of `quota` in `limits` (null = unlimited). */
export function limitOf(limits: TenantLimits, quota: Quota): number | null {
  return limits[limitOfQuota[quota]];
}

/** Why `record` is not a valid tenant on its own (a sentence), or null. Overlap is checked apart. */
export function tenantProblem(record: TenantRecord): string | null {
  const nameBytes = new TextEncoder().encode(record.name).length;
  if (nameBytes === 0 || nameBytes > tenantNameBytesMax || !tenantNamePattern.test(record.name)) {
    return `tenant name ${JSON.stringify(record.name)} must be 1-${tenantNameBytesMax} of a-z 0-9 . _ - starting with a letter or digit`;
  }
  if (record.prefixes.length === 0) return `tenant ${record.name} must own at least one prefix`;
  if (record.prefixes.length > tenantPrefixesMax) return `tenant ${record.name} owns ${record.prefixes.length} prefixes, over the limit of ${tenantPrefixesMax}`;
  for (const prefix of record.prefixes) {
    if (prefix === '/') return `tenant ${record.name} cannot own the root prefix /`;
    const problem = namespaceProblem(prefix);
    if (problem !== null) return `tenant ${record.name}: prefix ${JSON.stringify(prefix)} ${problem}`;
  }
  const own = prefixOverlap(record.prefixes, record.prefixes);
  if (own !== null) return `tenant ${record.name}: prefixes ${own[0]} and ${own[1]} overlap`;
  for (const [field, value] of Object.entries(record.limits) as Array<[string, number | null]>) {
    if (value !== null && (!Number.isSafeInteger(value) || value < 0)) return `tenant ${record.name}: ${field} must be a whole number >= 0`;
  }
  return null;
}

/**
 * Two prefixes overlap when one starts the other (both end with '/', so a key under the longer
 * is under the shorter too). The first overlapping pair of distinct entries, or null.
 */
export function prefixOverlap(a: readonly string[], b: readonly string[]): [string, string] | null {
  for (let i = 0; i < a.length; i++) {
    for (let j = 0; j < b.length; j++) {
      if (a === b && i === j) continue;
      const x = a[i] as string;
      const y = b[j] as string;
      if (x.startsWith(y) || y.startsWith(x)) return [x, y];
    }
  }
  return null;
}

/**
 * Why `record` cannot join `tenants` (a sentence), or null: its own problems, or a prefix that
 * overlaps another tenant's. A record replacing one of the same name is checked against the rest.
 */
export function tenantConflict(tenants: Iterable<TenantRecord>, record: TenantRecord): string | null {
  const problem = tenantProblem(record);
  if (problem !== null) return problem;
  let count = 0;
  for (const other of tenants) {
    if (other.name === record.name) continue;
    count++;
    const overlap = prefixOverlap(record.prefixes, other.prefixes);
    if (overlap !== null) return `prefix ${overlap[0]} of tenant ${record.name} overlaps prefix ${overlap[1]} of tenant ${other.name}`;
  }
  if (count + 1 > tenantsMax) return `the cell holds its maximum of ${tenantsMax} tenants`;
  return null;
}

/** The tenant owning `key` (the longest owned prefix that starts it), or null for no tenant. */
export function tenantOfKey(tenants: Iterable<TenantRecord>, key: string): TenantRecord | null {
  let best: TenantRecord | null = null;
  let bestLength = 0;
  for (const tenant of tenants) {
    for (const prefix of tenant.prefixes) {
      if (prefix.length > bestLength && key.startsWith(prefix)) {
        best = tenant;
        bestLength = prefix.length;
      }
    }
  }
  return best;
}

/** A change to a tenant's stored use (negative = freed). */
export interface UsageDelta {
  readonly keys: number;
  readonly bytes: number;
  readonly leases: number;
}

export function addUsage(usage: TenantUsage, delta: UsageDelta): TenantUsage {
  const next = { keys: usage.keys + delta.keys, bytes: usage.bytes + delta.bytes, leases: usage.leases + delta.leases };
  // Use cannot go below zero: a negative count means the counters and the store disagree.
  if (next.keys < 0 || next.bytes < 0 || next.leases < 0) {
    throw new Error(`tenant usage below zero: ${JSON.stringify(usage)} + ${JSON.stringify(delta)}`);
  }
  return next;
}

/**
 * The error refusing `delta` on `usage` under `tenant`'s limits, or null when it is allowed.
 * Only growth is checked: a quota whose delta is <= 0 never refuses, so deletes always work and a
 * limit lowered below use keeps the data. Deterministic: the state machine calls it at apply.
 */
export function quotaRefusal(tenant: TenantRecord, usage: TenantUsage, delta: UsageDelta): QuotaExceededError | null {
  for (const quota of ['keys', 'bytes', 'leases'] as const) {
    const limit = limitOf(tenant.limits, quota);
    const grow = delta[quota];
    if (limit === null || grow <= 0) continue;
    const used = usage[quota];
    if (used + grow > limit) return quotaError(tenant.name, quota, limit, used);
  }
  return null;
}

/** The error refusing a transaction of `ops` operations, or null. */
export function txnOpsRefusal(tenant: TenantRecord, ops: number): QuotaExceededError | null {
  const limit = tenant.limits.maxTxnOps;
  if (limit === null || ops <= limit) return null;
  return quotaError(tenant.name, 'txn_ops', limit, ops);
}

/** The one shape of a tenant's quota error: details {tenant, quota, limit, used}. */
export function quotaError(tenant: string, quota: Quota, limit: number, used: number): QuotaExceededError {
  return new QuotaExceededError(`tenant ${tenant} is over its ${quota} quota (${used} used, limit ${limit})`, {
    tenant, quota, limit, used,
  });
}

/**
 * quotaError without a stack trace: a node's admission refuses at the rate a noisy tenant sends,
 * and capturing a stack was the largest single cost of a refusal (~15 us of ~270 us per HTTP
 * refusal in a profile); the error's place is known, its stack says nothing.
 */
export function admissionError(tenant: string, quota: Quota, limit: number, used: number): QuotaExceededError {
  const saved = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return quotaError(tenant, quota, limit, used);
  } finally {
    Error.stackTraceLimit = saved;
  }
}

/**
 * Seconds a refused client should wait: `base` plus up to `base` more, so clients refused together
 * do not return together. `random` in [0, 1) is injected (the core takes no randomness itself).
 */
export function retryAfterSeconds(baseSeconds: number, random: () => number): number {
  // Whole seconds (HTTP's Retry-After): base..2*base, each equally likely, so even a base of 1 s
  // spreads its clients over 1 s and 2 s (rounding 1 + random() up would answer 2 to all).
  const base = Math.max(1, Math.ceil(baseSeconds));
  return base + Math.min(base, Math.floor(random() * (base + 1)));
}
