// Admission quotas (issue #28): per-tenant token buckets for reads and writes per second, kept on
// each node and checked before a read is served or a write is proposed. Time comes from the
// caller (the core takes no clock itself), so tests and the simulator drive it exactly.
import type { QuotaExceededError } from './errors.js';
import { admissionError, type TenantRecord } from './tenants.js';

interface Bucket {
  tokens: number;
  atMs: number;
}

export type Admission = 'reads_per_second' | 'writes_per_second';

/** A refusal and how long until the bucket holds a whole token again (the Retry-After's base). */
export interface BucketRefusal {
  readonly error: QuotaExceededError;
  readonly waitMs: number;
}

export class TenantBuckets {
  private readonly buckets = new Map<string, Bucket>();

  /**
   * Take one token of `kind` for `tenant` at `nowMs`: null when admitted, else the error. A bucket
   * holds at most one second of tokens (the rate), so a burst is bounded by the rate itself.
   */
  take(tenant: TenantRecord, kind: Admission, nowMs: number): QuotaExceededError | null {
    return this.takeOrWait(tenant, kind, nowMs, true)?.error ?? null;
  }

  /** As take, and says how long to wait when refused; `take` false only looks (nothing is used). */
  takeOrWait(tenant: TenantRecord, kind: Admission, nowMs: number, take: boolean): BucketRefusal | null {
    const rate = kind === 'reads_per_second' ? tenant.limits.readsPerSecond : tenant.limits.writesPerSecond;
    if (rate === null) return null;
    const id = `${tenant.name}\u0000${kind}`;
    const bucket = this.buckets.get(id) ?? { tokens: rate, atMs: nowMs };
    const elapsed = Math.max(0, nowMs - bucket.atMs);
    bucket.tokens = Math.min(rate, bucket.tokens + (elapsed * rate) / 1000);
    bucket.atMs = Math.max(bucket.atMs, nowMs);
    this.buckets.set(id, bucket);
    if (bucket.tokens < 1) {
      // A rate of 0 never refills: a client waits the longest guidance, a minute.
      const waitMs = rate === 0 ? 60_000 : ((1 - bucket.tokens) * 1000) / rate;
      return { error: admissionError(tenant.name, kind, rate, rate), waitMs };
    }
    if (take) bucket.tokens -= 1;
    return null;
  }

  /** Forget a deleted tenant's buckets. */
  forget(name: string): void {
    this.buckets.delete(`${name}\u0000reads_per_second`);
    this.buckets.delete(`${name}\u0000writes_per_second`);
  }
}
