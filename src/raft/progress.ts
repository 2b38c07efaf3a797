// The leader's view of one follower's log: how far it matches, what to send next, and how much
// may be in flight. Probe sends one append at a time until the follower's position is known;
// replicate pipelines up to a bounded window; snapshot waits for a snapshot to be installed.
import { assert } from '../base/assert.js';

export const ProgressState = { probe: 'probe', replicate: 'replicate', snapshot: 'snapshot' } as const;
export type ProgressState = (typeof ProgressState)[keyof typeof ProgressState];

export class Progress {
  // Invariant: match < next.
  match = 0;
  next: number;
  state: ProgressState = ProgressState.probe;
  /** Probe: an append is outstanding; wait for its answer (or a heartbeat answer). */
  probeSent = false;
  /** Snapshot: the index of the snapshot being installed. */
  pendingSnapshot = 0;
  /** Heard from within the current check-quorum period. */
  recentActive = false;
  /**
   * Leader ticks since this follower last answered (any append, snapshot or heartbeat answer):
   * in contact while below the election timeout. Starts as never heard: a new leader vouches for
   * a follower only once it answered this leader (health is what the leader knows, not hopes).
   */
  ticksSinceHeard = Number.MAX_SAFE_INTEGER;
  /** Last index of each in-flight append, oldest first (replicate state only). */
  private inflights: number[] = [];

  constructor(
    next: number,
    private readonly inflightMax: number,
  ) {
    assert(next >= 1, 'next index is positive');
    this.next = next;
  }

  isPaused(): boolean {
    switch (this.state) {
      case ProgressState.probe:
        return this.probeSent;
      case ProgressState.replicate:
        return this.inflights.length >= this.inflightMax;
      case ProgressState.snapshot:
        return true;
    }
  }

  inflightFull(): boolean {
    return this.inflights.length >= this.inflightMax;
  }

  freeFirstInflight(): void {
    assert(this.state === ProgressState.replicate, 'only a pipeline has appends in flight');
    assert(this.inflights.length > 0, 'an append is in flight');
    this.inflights.shift();
  }

  becomeProbe(): void {
    // After a snapshot, resume right after it; otherwise right after the known match.
    const next =
      this.state === ProgressState.snapshot
        ? Math.max(this.match + 1, this.pendingSnapshot + 1)
        : this.match + 1;
    this.reset(ProgressState.probe);
    this.next = next;
    assert(this.match < this.next, 'match stays below next');
  }

  becomeReplicate(): void {
    assert(this.state === ProgressState.probe, 'a pipeline starts from a probe that found the match');
    this.reset(ProgressState.replicate);
    this.next = this.match + 1;
  }

  becomeSnapshot(snapshotIndex: number): void {
    assert(snapshotIndex > this.match, 'a snapshot goes only to a follower behind it');
    this.reset(ProgressState.snapshot);
    this.pendingSnapshot = snapshotIndex;
  }

  private reset(state: ProgressState): void {
    this.state = state;
    this.probeSent = false;
    this.pendingSnapshot = 0;
    this.inflights = [];
  }

  /** An append ending at `lastIndex` was sent. */
  sentAppend(lastIndex: number, entryCount: number): void {
    if (this.state === ProgressState.replicate) {
      if (entryCount > 0) {
        const newest = this.inflights[this.inflights.length - 1];
        assert(newest === undefined || lastIndex > newest, 'in-flight appends end at increasing indexes');
        assert(lastIndex >= this.next, 'a pipelined append carries entries from next on');
        this.next = lastIndex + 1;
        this.inflights.push(lastIndex);
      }
    } else if (this.state === ProgressState.probe) {
      this.probeSent = true;
    }
  }

  /** The follower matches through `index`. Returns false when the answer is stale. */
  maybeUpdate(index: number): boolean {
    let updated = false;
    if (index > this.match) {
      this.match = index;
      updated = true;
      this.probeSent = false;
    }
    this.next = Math.max(this.next, index + 1);
    while (this.inflights.length > 0 && (this.inflights[0] as number) <= index) this.inflights.shift();
    assert(this.match < this.next, 'match stays below next');
    return updated;
  }

  /**
   * The follower rejected an append at `rejected`; `hint` is the highest index that may match.
   * Returns false when the rejection is stale (answers an older append).
   */
  maybeDecrease(rejected: number, hint: number): boolean {
    if (this.state === ProgressState.replicate) {
      if (rejected <= this.match) return false;
      this.next = this.match + 1;
      return true;
    }
    if (this.next - 1 !== rejected) return false;
    this.next = Math.max(Math.min(rejected, hint + 1), this.match + 1, 1);
    this.probeSent = false;
    assert(this.match < this.next && this.next <= rejected + 1, 'a probe backs off between match and the rejected index');
    return true;
  }

  /** The follower answered this leader now. */
  heard(): void {
    this.recentActive = true;
    this.ticksSinceHeard = 0;
  }

  /** One leader tick passed (saturates: it only says "long ago" past the timeout). */
  tickSinceHeard(): void {
    if (this.ticksSinceHeard < Number.MAX_SAFE_INTEGER) this.ticksSinceHeard++;
    assert(this.ticksSinceHeard >= 0, 'ticks since heard never go negative');
  }

  describe(): { match: number; next: number; state: string } {
    return { match: this.match, next: this.next, state: this.state };
  }
}
