// One watcher: its resolved start, where it stands (catching up from history, waiting for a
// future revision, synced to the live fan-out, or ended), and its bounded outbound queue.
// The queue holds references to batches shared with other watchers, never copies.
import { assert } from '../base/assert.js';
import type { BatonError } from '../base/errors.js';
import type { WatchBatch, WatchOutput, WatchSpec } from './types.js';
import type { WatchGroup } from './watch-index.js';
import type { TenantWatchAccount } from './tenant-quotas.js';

export type WatcherState = 'catchingUp' | 'waiting' | 'synced' | 'ended';

/** What a watcher needs from whoever holds it (its connection): a way to say "I have output". */
export interface WatcherOwner<Tag> {
  /** The owner's live watchers (its quota counts these). */
  readonly watchers: Set<Watcher<Tag>>;
  markReady(watcher: Watcher<Tag>): void;
  /** Whether the owner's principal may watch `spec` under the policy as applied now. */
  admits(spec: WatchSpec): boolean;
}

export class Watcher<Tag> {
  state: WatcherState;
  /**
   * catchingUp / waiting: the next revision to read from history. synced: unused (the hub's
   * revision + 1 is every synced watcher's next revision). Invariant: every matching event below
   * it is queued or was delivered, and none at or above it.
   */
  nextRevision: number;
  /** Everything matching at or below this was handed to the edge (resume at this + 1). */
  lastRevision: number;
  /** Set by the watch index while synced: its group and position in the member list. */
  group: WatchGroup<Tag> | null = null;
  groupSlot = -1;
  /** Events per catch-up read: shrinks after a batch cut by bytes, grows back otherwise. */
  readLimit = 1;
  /** In the owner's ready list (so it is never listed twice). */
  listed = false;
  /** The end to deliver once (compacted, slow_consumer, stopped); the queue is dropped by then. */
  pendingEnd: WatchOutput<Tag> | null = null;
  /** Its tenant's watch use on this node (#28): its slot, its queued bytes; null: no tenant counts it. */
  tenant: TenantWatchAccount | null = null;
  /** Waiting for its tenant's event rate (#28): its connection does not step it until woken. */
  paced = false;
  /**
   * Its namespace left this cell (wrong_cell, with the fence revision): it finishes delivering
   * what it has queued and what history holds up to the hub's revision, then ends with this.
   */
  closing: { error: BatonError; fenceRevision: number } | null = null;
  /**
   * Its namespace landed here from another cell, which holds its events at or below this (0:
   * none): a start at or below it ends at the first step with compacted, never a silent gap.
   */
  historyFloor = 0;
  /** Allocated on first use: a watcher that never received anything carries no array. */
  private queue: WatchBatch[] | null = null;
  private queueHead = 0;
  /** Invariant: the sums over queue[queueHead..] of events.length and bytes. */
  queuedEvents = 0;
  queuedBytes = 0;

  constructor(
    readonly tag: Tag,
    readonly spec: WatchSpec,
    readonly startRevision: number,
    readonly owner: WatcherOwner<Tag>,
  ) {
    assert(startRevision >= 1, 'a watcher starts at revision 1 or later');
    this.state = 'catchingUp';
    this.nextRevision = startRevision;
    this.lastRevision = startRevision - 1;
  }

  get queueLength(): number {
    return this.queue === null ? 0 : this.queue.length - this.queueHead;
  }

  /** Whether the edge should ask it for output (a queued batch, an end, or history to read). */
  get hasOutput(): boolean {
    if (this.pendingEnd !== null) return true;
    return !this.paced && (this.queueLength > 0 || this.state === 'catchingUp');
  }

  /** Its tenant's event rate lets it deliver again. */
  wake(): void {
    if (this.state !== 'ended' && this.hasOutput) this.owner.markReady(this);
  }

  /** The next queued batch, left in the queue. */
  peek(): WatchBatch | null {
    return this.queue?.[this.queueHead] ?? null;
  }

  /** Whether `batch` fits the bounds. An empty queue takes any batch: revisions are never split. */
  fits(batch: WatchBatch, limits: { eventsMax: number; bytesMax: number }): boolean {
    if (this.queueLength === 0) return true;
    return (
      this.queuedEvents + batch.events.length <= limits.eventsMax &&
      this.queuedBytes + batch.bytes <= limits.bytesMax
    );
  }

  push(batch: WatchBatch): void {
    assert(this.state !== 'ended', 'an ended watcher takes no batches');
    const queue = (this.queue ??= []);
    const last = queue[queue.length - 1];
    if (this.queueLength > 0 && last !== undefined) {
      assert(batch.revision >= last.revision, 'batches are queued in revision order');
      // A newer progress notification replaces a queued one: progress never piles up.
      if (last.events.length === 0 && batch.events.length === 0) {
        queue[queue.length - 1] = batch;
        return;
      }
    }
    queue.push(batch);
    this.queuedEvents += batch.events.length;
    this.queuedBytes += batch.bytes;
    this.tenant?.queued(this, batch.bytes);
    if (!this.paced) this.owner.markReady(this);
  }

  shift(): WatchBatch | null {
    const queue = this.queue;
    const batch = queue?.[this.queueHead];
    if (queue === null || batch === undefined) return null;
    queue[this.queueHead] = undefined as unknown as WatchBatch;
    this.queueHead++;
    if (this.queueHead === queue.length) {
      // Kept (empty) rather than dropped: a watcher that received once likely receives again,
      // and reallocating per event per watcher is what a 10K-watcher fan-out would spend on GC.
      queue.length = 0;
      this.queueHead = 0;
    } else if (this.queueHead >= 64 && this.queueHead * 2 >= queue.length) {
      this.queue = queue.slice(this.queueHead);
      this.queueHead = 0;
    }
    this.queuedEvents -= batch.events.length;
    this.queuedBytes -= batch.bytes;
    this.tenant?.queued(this, -batch.bytes);
    assert(this.queuedEvents >= 0 && this.queuedBytes >= 0, 'queue sums stay non-negative');
    assert(batch.revision >= this.lastRevision, 'delivery never goes back in revisions');
    this.lastRevision = batch.revision;
    return batch;
  }

  /** The revision of the newest queued batch (or the last delivered one). */
  get queuedThrough(): number {
    return this.queue?.[this.queue.length - 1]?.revision ?? this.lastRevision;
  }

  dropQueue(): void {
    const bytes = this.queuedBytes;
    this.queue = null;
    this.queueHead = 0;
    this.queuedEvents = 0;
    this.queuedBytes = 0;
    this.tenant?.queued(this, -bytes);
  }
}
