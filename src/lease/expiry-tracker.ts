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
//
// Cost: a renewal only writes the lease's deadline (no heap work, no allocation). Each lease sits
// in the expiry heap exactly once, keyed at or before the next moment it needs a look (its
// deadline, a revocation's retry); renewals only ever move that moment later, so the key is left
// behind and the lease is re-filed when the old key comes up, about once per TTL. Checkpoints
// come from a scan that resumes where the previous pass stopped, a bounded number of leases per
// pass: a heap would re-file every renewed lease once per renewal period (its checkpoint moment
// moves with each renewal), which costs more than the scan, and a whole-table scan at once is a
// pause of the leader's event loop that puts wait behind.
import { assert } from '../base/assert.js';
import { IndexedMinHeap, type HeapSlots } from './indexed-heap.js';

export interface TrackedLease {
  readonly id: number;
  readonly ttlMs: number;
  /** Remaining TTL as last checkpointed through the log (the full TTL right after the grant). */
  readonly remainingMs: number;
}

/** A renewal's answer (see renew()). */
export interface Renewal {
  readonly ttlMs: number;
  readonly resetCheckpoint: boolean;
}

// Times are whole milliseconds, rounded up from the clock (a deadline is never earlier than
// promised), which also keeps them small integers in the engine (no boxed doubles per lease).
interface Deadline {
  readonly id: number;
  readonly ttlMs: number;
  expiresAtMs: number;
  /** Remaining TTL recorded by the last checkpoint this leader proposed or inherited. */
  checkpointedMs: number;
  /** Set once a revocation was proposed; cleared if it did not commit in time. */
  revokingSinceMs: number;
  /** Invariant: at or before the next look expired() must take (deadline or retry). */
  expiryKeyMs: number;
  expiryAt: number;
}

const expirySlots: HeapSlots<Deadline> = {
  key: (d) => d.expiryKeyMs,
  id: (d) => d.id,
  position: (d) => d.expiryAt,
  setPosition: (d, at) => {
    d.expiryAt = at;
  },
};

export interface ExpiryTrackerOptions {
  /** Leases named per expired() call. */
  readonly expireBatchMax: number;
  /** A proposed revocation that has not committed by then is proposed again. */
  readonly revokeRetryMs: number;
  /** Checkpoint a lease when it went unrenewed for this fraction of its TTL (0..1]. */
  readonly checkpointFraction: number;
  readonly checkpointBatchMax: number;
  /**
   * Leases looked at per expired() call, re-filing renewed ones included (about 2 µs each), so
   * that a pass stays short when many old keys come up at once (leases granted or promoted
   * together); default 10x expireBatchMax.
   */
  readonly lookBatchMax?: number;
  /**
   * Leases looked at per checkpoints() call (a slice of the scan, well under 1 µs each); a full
   * scan takes leases / checkpointScanMax passes. Default 25,000.
   */
  readonly checkpointScanMax?: number;
}

/** What one expired() pass may name: leases, and a weight per lease (its keys) with a total. */
export interface ExpiryBudget {
  readonly leasesMax: number;
  readonly weight: (id: number) => number;
  readonly weightMax: number;
}

export const defaultExpiryTrackerOptions: ExpiryTrackerOptions = {
  expireBatchMax: 1000,
  revokeRetryMs: 2000,
  checkpointFraction: 0.4,
  checkpointBatchMax: 1000,
};

export class LeaseExpiryTracker {
  private readonly lookBatchMax: number;
  private readonly checkpointScanMax: number;
  private readonly leases = new Map<number, Deadline>();
  private readonly expiryHeap = new IndexedMinHeap(expirySlots);
  /** Where the checkpoint scan resumes (Map iterators survive inserts and deletes). */
  private checkpointScan: Iterator<Deadline> | null = null;

  constructor(private readonly options: ExpiryTrackerOptions = defaultExpiryTrackerOptions) {
    assert(options.revokeRetryMs > 0 && options.checkpointFraction > 0 && options.checkpointFraction <= 1, 'tracker options');
    this.lookBatchMax = options.lookBatchMax ?? 10 * options.expireBatchMax;
    this.checkpointScanMax = options.checkpointScanMax ?? 25_000;
    assert(this.lookBatchMax >= options.expireBatchMax && this.checkpointScanMax >= options.checkpointBatchMax, 'look budgets');
  }

  get size(): number {
    return this.leases.size;
  }

  /** This node became leader: deadlines restart from the checkpointed remaining TTLs. */
  promote(leases: Iterable<TrackedLease>, nowMs: number): void {
    this.clear();
    const now = Math.ceil(nowMs);
    for (const lease of leases) {
      assert(lease.remainingMs >= 0 && lease.remainingMs <= lease.ttlMs, 'remaining TTL within the TTL');
      this.track(lease.id, lease.ttlMs, now + lease.remainingMs, lease.remainingMs);
    }
  }

  clear(): void {
    this.leases.clear();
    this.expiryHeap.clear();
    this.checkpointScan = null;
  }

  /** A grant was applied (the full TTL starts now). */
  granted(id: number, ttlMs: number, nowMs: number): void {
    this.track(id, ttlMs, Math.ceil(nowMs) + ttlMs, ttlMs);
  }

  /**
   * A move imported the lease (src/mvcc/import-keys.ts): its granted TTL, and the time it has
   * left on the source. A lease already here keeps the later of its own deadline and the
   * source's (renewals may reach it here and there during a move: neither may cut the other
   * short). The log raises its checkpoint the same way (import-keys.ts), so the tracker's view of
   * it is the larger of the two as well.
   */
  imported(id: number, ttlMs: number, remainingMs: number, nowMs: number): void {
    assert(remainingMs >= 0 && remainingMs <= ttlMs, 'an imported lease has its remaining TTL within its TTL');
    const importedAtMs = Math.ceil(nowMs) + remainingMs;
    const held = this.leases.get(id);
    if (held === undefined || held.revokingSinceMs >= 0) {
      this.track(id, ttlMs, importedAtMs, remainingMs);
      return;
    }
    this.track(id, ttlMs, Math.max(held.expiresAtMs, importedAtMs), Math.max(held.checkpointedMs, remainingMs));
    assert(this.leases.get(id)?.ttlMs === ttlMs, 'an imported lease renews to its granted TTL');
  }

  /** A revocation was applied. */
  removed(id: number): void {
    const lease = this.leases.get(id);
    if (lease === undefined) return;
    this.leases.delete(id);
    this.expiryHeap.remove(lease);
  }

  /** Whether a revocation of the lease was proposed and the lease is still here (not yet applied). */
  revoking(id: number): boolean {
    return (this.leases.get(id)?.revokingSinceMs ?? -1) >= 0;
  }

  /**
   * A keepalive. Null when the lease is unknown or being revoked. `resetCheckpoint`: the lease's
   * checkpoint is below its TTL, so the caller must commit a checkpoint of the full TTL before it
   * promises the TTL to the client. O(1): the heap key stays where it is (see the top).
   */
  renew(id: number, nowMs: number): Renewal | null {
    const lease = this.leases.get(id);
    if (lease === undefined || lease.revokingSinceMs >= 0) return null;
    lease.expiresAtMs = Math.ceil(nowMs) + lease.ttlMs;
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
    if (lease === undefined) return;
    lease.checkpointedMs = Math.max(0, lease.ttlMs - 1);
  }

  has(id: number): boolean {
    return this.leases.has(id);
  }

  remainingMs(id: number, nowMs: number): number | null {
    const lease = this.leases.get(id);
    return lease === undefined ? null : Math.min(lease.ttlMs, Math.max(0, lease.expiresAtMs - nowMs));
  }

  /**
   * Leases past their deadline whose revocation should be proposed now (bounded: expireBatchMax,
   * or the budget's leases; a budget's weight, e.g. a lease's keys, stops the pass before the
   * lease that would go past weightMax, but the first lease always goes). Each one named is
   * marked as being revoked: renew() refuses it from now on, so no renewal can be promised for
   * a lease whose revocation may be about to commit.
   */
  expired(nowMs: number, budget?: ExpiryBudget): number[] {
    const out: number[] = [];
    const retryMs = this.options.revokeRetryMs;
    const leasesMax = budget?.leasesMax ?? this.options.expireBatchMax;
    // Looks scale with a larger budget (renewed leases' old keys come up among the expired).
    const lookMax = budget === undefined ? this.lookBatchMax : Math.max(this.lookBatchMax, 4 * leasesMax);
    let weight = 0;
    for (let looked = 0; out.length < leasesMax && looked < lookMax; looked++) {
      const lease = this.expiryHeap.peek();
      if (lease === undefined || lease.expiryKeyMs > nowMs) break;
      const due = lease.revokingSinceMs >= 0
        // Proposed before and not committed since: propose again once the retry delay passed.
        ? nowMs - lease.revokingSinceMs >= retryMs
        : lease.expiresAtMs <= nowMs;
      if (due && budget !== undefined) {
        const w = budget.weight(lease.id);
        if (out.length > 0 && weight + w > budget.weightMax) break;
        weight += w;
      }
      if (due) {
        lease.revokingSinceMs = nowMs;
        out.push(lease.id);
      }
      // Re-file: a revoking lease at its retry (kept so that a lost proposal is retried), a
      // renewed one at its new deadline. Either is later than now, so this loop ends.
      lease.expiryKeyMs = lease.revokingSinceMs >= 0 ? lease.revokingSinceMs + retryMs : lease.expiresAtMs;
      assert(lease.expiryKeyMs > nowMs, 'a re-filed lease is looked at later');
      this.expiryHeap.update(lease);
    }
    return out;
  }

  /**
   * Remaining TTLs to checkpoint through the log: leases that went unrenewed for the checkpoint
   * fraction of their TTL since the last checkpoint. Marked checkpointed at once: if the proposal
   * is lost, the log keeps the older, longer value, which errs on the side of not cutting short.
   * Each call looks at the next slice of the table (at most checkpointScanMax leases) and stops
   * at the end of a full scan, so a lease is looked at once per leases / checkpointScanMax calls.
   */
  checkpoints(nowMs: number): { id: number; remainingMs: number }[] {
    const out: { id: number; remainingMs: number }[] = [];
    const scan = this.checkpointScan ?? this.leases.values();
    this.checkpointScan = scan;
    for (let looked = 0; out.length < this.options.checkpointBatchMax && looked < this.checkpointScanMax; looked++) {
      const next = scan.next();
      if (next.done === true) {
        this.checkpointScan = null; // the next call starts a new scan
        break;
      }
      const lease = next.value;
      if (lease.revokingSinceMs >= 0) continue;
      // Whole milliseconds (the log's unit), rounded up: a checkpoint never cuts a TTL short.
      const remaining = Math.min(lease.ttlMs, Math.max(0, Math.ceil(lease.expiresAtMs - nowMs)));
      if (lease.checkpointedMs - remaining >= lease.ttlMs * this.options.checkpointFraction) {
        lease.checkpointedMs = remaining;
        out.push({ id: lease.id, remainingMs: remaining });
      }
    }
    return out;
  }

  private track(id: number, ttlMs: number, expiresAtMs: number, checkpointedMs: number): void {
    const previous = this.leases.get(id);
    if (previous !== undefined) this.removed(id);
    const lease: Deadline = {
      id,
      ttlMs,
      expiresAtMs,
      checkpointedMs,
      revokingSinceMs: -1,
      expiryKeyMs: expiresAtMs,
      expiryAt: -1,
    };
    this.leases.set(id, lease);
    this.expiryHeap.push(lease);
  }
}
