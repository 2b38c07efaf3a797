// The leader's in-memory view of lease deadlines. Renewals never go through the log: they only
// move a deadline here, on the leader's monotonic clock (passed in; the core reads no clock).
// Expiry is not decided here either: `expired()` only names leases for the leader to propose
// revoking through the log, in bounded batches, so a mass expiry cannot stall the cell.
//
// The rule across leader changes: a new leader gives every lease its remaining TTL as last
// checkpointed through the log. A lease that is renewed on time is never checkpointed below its
// TTL (checkpoints happen only once a lease went unrenewed for checkpointFraction of its TTL), so
// it keeps its full TTL. A lease that went quiet is checkpointed with less and less time left,
// so repeated elections cannot keep an abandoned lease alive forever (as long as leaders last at
// least checkpointFraction of the TTL; the default 0.4 stays above the client's renewal period of
// TTL/3, so leases renewed on time cost no log writes at all). A renewal of a lease whose
// checkpoint is below its TTL first resets that checkpoint through the log (renew() says so):
// only then is its full TTL promised, so no election can cut a promised TTL short.
import { assert } from '../base/assert.js';
import { MinHeap } from './min-heap.js';

export interface TrackedLease {
  readonly id: number;
  readonly ttlMs: number;
  /** Remaining TTL as last checkpointed through the log (the full TTL right after the grant). */
  readonly remainingMs: number;
}

interface Deadline {
  ttlMs: number;
  expiresAtMs: number;
  /** Remaining TTL recorded by the last checkpoint this leader proposed or inherited. */
  checkpointedMs: number;
  /** Set once a revocation was proposed; cleared if it did not commit in time. */
  revokingSinceMs: number;
}

export interface ExpiryTrackerOptions {
  /** Leases named per expired() call. */
  readonly expireBatchMax: number;
  /** A proposed revocation that has not committed by then is proposed again. */
  readonly revokeRetryMs: number;
  /** Checkpoint a lease when it went unrenewed for this fraction of its TTL (0..1]. */
  readonly checkpointFraction: number;
  readonly checkpointBatchMax: number;
}

export const defaultExpiryTrackerOptions: ExpiryTrackerOptions = {
  expireBatchMax: 1000,
  revokeRetryMs: 2000,
  checkpointFraction: 0.4,
  checkpointBatchMax: 1000,
};

export class LeaseExpiryTracker {
  private readonly leases = new Map<number, Deadline>();
  // Lazy deletion: a heap item is stale when its deadline no longer matches the lease's.
  private readonly heap = new MinHeap<number>();

  constructor(private readonly options: ExpiryTrackerOptions = defaultExpiryTrackerOptions) {}

  get size(): number {
    return this.leases.size;
  }

  /** This node became leader: deadlines restart from the checkpointed remaining TTLs. */
  promote(leases: Iterable<TrackedLease>, nowMs: number): void {
    this.clear();
    for (const lease of leases) {
      assert(lease.remainingMs >= 0 && lease.remainingMs <= lease.ttlMs, 'remaining TTL within the TTL');
      this.track(lease.id, lease.ttlMs, nowMs + lease.remainingMs, lease.remainingMs);
    }
  }

  clear(): void {
    this.leases.clear();
    this.heap.clear();
  }

  /** A grant was applied (the full TTL starts now). */
  granted(id: number, ttlMs: number, nowMs: number): void {
    this.track(id, ttlMs, nowMs + ttlMs, ttlMs);
  }

  /** A revocation was applied. */
  removed(id: number): void {
    this.leases.delete(id);
  }

  /**
   * A keepalive. Null when the lease is unknown or being revoked. `resetCheckpoint`: the lease's
   * checkpoint is below its TTL, so the caller must commit a checkpoint of the full TTL before it
   * promises the TTL to the client.
   */
  renew(id: number, nowMs: number): { ttlMs: number; resetCheckpoint: boolean } | null {
    const lease = this.leases.get(id);
    if (lease === undefined || lease.revokingSinceMs >= 0) return null;
    lease.expiresAtMs = nowMs + lease.ttlMs;
    this.heap.push(lease.expiresAtMs, id);
    this.compactHeapIfStale();
    const resetCheckpoint = lease.checkpointedMs < lease.ttlMs;
    lease.checkpointedMs = lease.ttlMs;
    return { ttlMs: lease.ttlMs, resetCheckpoint };
  }

  /**
   * A checkpoint reset that renew() asked for did not commit: the log may still hold a lower
   * remaining TTL, so the next renewal must reset it again before promising the full TTL.
   */
  resetFailed(id: number): void {
    this.checkpointLost(id);
  }

  /**
   * A proposed checkpoint did not commit: the log still holds an older value. Just below the
   * TTL means both "renewals must reset it first" and "checkpoint it again at the next pass".
   */
  checkpointFailed(ids: Iterable<number>): void {
    for (const id of ids) this.checkpointLost(id);
  }

  private checkpointLost(id: number): void {
    const lease = this.leases.get(id);
    if (lease !== undefined) lease.checkpointedMs = Math.max(0, lease.ttlMs - 1);
  }

  has(id: number): boolean {
    return this.leases.has(id);
  }

  remainingMs(id: number, nowMs: number): number | null {
    const lease = this.leases.get(id);
    return lease === undefined ? null : Math.max(0, lease.expiresAtMs - nowMs);
  }

  /** Leases past their deadline whose revocation should be proposed now (bounded). */
  expired(nowMs: number): number[] {
    const out: number[] = [];
    const retry: number[] = [];
    while (out.length < this.options.expireBatchMax) {
      const key = this.heap.peekKey();
      if (key === undefined || key > nowMs) break;
      const item = this.heap.pop() as { key: number; value: number };
      const lease = this.leases.get(item.value);
      if (lease === undefined || lease.expiresAtMs !== item.key) continue; // stale heap item
      if (lease.revokingSinceMs >= 0 && nowMs - lease.revokingSinceMs < this.options.revokeRetryMs) {
        retry.push(item.value);
        continue;
      }
      lease.revokingSinceMs = nowMs;
      out.push(item.value);
      retry.push(item.value);
    }
    // Keep revoking leases in the heap so that a lost proposal is retried.
    for (const id of retry) {
      const lease = this.leases.get(id) as Deadline;
      lease.expiresAtMs = Math.max(lease.expiresAtMs, lease.revokingSinceMs + this.options.revokeRetryMs);
      this.heap.push(lease.expiresAtMs, id);
    }
    return out;
  }

  /**
   * Remaining TTLs to checkpoint through the log: leases that went unrenewed for the checkpoint
   * fraction of their TTL since the last checkpoint. Marked checkpointed at once: if the proposal
   * is lost, the log keeps the older, longer value, which errs on the side of not cutting short.
   */
  checkpoints(nowMs: number): { id: number; remainingMs: number }[] {
    const out: { id: number; remainingMs: number }[] = [];
    for (const [id, lease] of this.leases) {
      if (out.length >= this.options.checkpointBatchMax) break;
      if (lease.revokingSinceMs >= 0) continue;
      // Whole milliseconds (the log's unit), rounded up: a checkpoint never cuts a TTL short.
      const remaining = Math.min(lease.ttlMs, Math.max(0, Math.ceil(lease.expiresAtMs - nowMs)));
      if (lease.checkpointedMs - remaining >= lease.ttlMs * this.options.checkpointFraction) {
        lease.checkpointedMs = remaining;
        out.push({ id, remainingMs: remaining });
      }
    }
    return out;
  }

  /**
   * Every renewal leaves its old heap item behind (lazy deletion), and those only leave the heap
   * once their old deadline passes: a client renewing far more often than TTL/3 would grow it
   * without bound. Rebuilding once stale items outnumber the leases keeps memory per lease
   * bounded at O(1) amortized cost per renewal.
   */
  private compactHeapIfStale(): void {
    if (this.heap.size <= 2 * this.leases.size + 1024) return;
    this.heap.clear();
    for (const [id, lease] of this.leases) this.heap.push(lease.expiresAtMs, id);
    assert(this.heap.size === this.leases.size, 'one heap item per lease after a rebuild');
  }

  private track(id: number, ttlMs: number, expiresAtMs: number, checkpointedMs: number): void {
    this.leases.set(id, { ttlMs, expiresAtMs, checkpointedMs, revokingSinceMs: -1 });
    this.heap.push(expiresAtMs, id);
  }
}
