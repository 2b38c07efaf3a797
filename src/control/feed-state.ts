// What a move's source feed knows, whatever carries it (docs/design/cells.md, "Moving a
// namespace"): the namespace's changes since the last take (key -> newest state), how far the
// source said the watch got, and how it ended: at the fence (wrong_cell, the mover's proof that
// every change the source accepted is in what it took) or failed. The node's feed fills it from an
// SSE watch (source-feed.ts); the cells simulator's from a member's watch hub (src/sim/cells/
// sim-feed.ts), so the simulator runs this logic as the node does. Time comes from `clock`.
import type { ImportedKey } from '../base/namespace-import.js';

export interface FeedChanges {
  /** Key -> its newest state: a put with its revisions, or null (deleted). */
  readonly changes: Map<string, ImportedKey | null>;
  /** Every change of the namespace at or below this revision is in what was taken so far. */
  readonly through: number;
}

export interface FeedClock {
  nowMs(): number;
  /** Runs `run` once after `ms` (a timer; the simulator's runs on simulated time). */
  after(ms: number, run: () => void): void;
}

/** One change the watch delivered: a put (value and revisions) or a delete. */
export type FeedEvent = { readonly type: 'put' | 'delete'; readonly kv: ImportedKey };

export class FeedState {
  private pending = new Map<string, ImportedKey | null>();
  /** Highest revision the source said the watch delivered through (events or progress). */
  private through: number;
  /** The source revision when the watch was created: past it, the feed is live. */
  private createdAt = Number.POSITIVE_INFINITY;
  private ended: { fenceRevision: number } | null = null;
  private failure: string | null = null;
  private waiters: (() => void)[] = [];

  constructor(startRevision: number, protected readonly clock: FeedClock) {
    this.through = startRevision - 1;
  }

  /** The source ended the watch at its fence: everything of the namespace is in the feed. */
  get fenceRevision(): number | null {
    return this.ended?.fenceRevision ?? null;
  }

  get failed(): string | null {
    return this.failure;
  }

  /** The watch got to where the source stood when it was created (it streams live now). */
  get live(): boolean {
    return this.through >= this.createdAt;
  }

  get pendingCount(): number {
    return this.pending.size;
  }

  /** Ended at the fence or failed: nothing more comes. */
  protected get over(): boolean {
    return this.ended !== null || this.failure !== null;
  }

  /** Where a watch of the feed starts (again, on another member): right after what it holds. */
  protected get nextRevision(): number {
    return this.through + 1;
  }

  /** The changes gathered since the last take. */
  take(): FeedChanges {
    const taken = { changes: this.pending, through: this.through };
    this.pending = new Map();
    return taken;
  }

  /** Resolves at the next news (a batch, the end, a failure) or after `ms`. */
  wait(ms: number): Promise<void> {
    if (this.over) return Promise.resolve();
    return new Promise((resolve) => {
      let done = false;
      const once = (): void => {
        if (done) return;
        done = true;
        resolve();
      };
      this.waiters.push(once);
      this.clock.after(Math.max(0, ms), once);
    });
  }

  /** Waits until the source ended the watch at its fence (true), or the feed failed or `ms` passed. */
  async untilFenced(ms: number): Promise<boolean> {
    const until = this.clock.nowMs() + ms;
    while (!this.over && this.clock.nowMs() < until) await this.wait(until - this.clock.nowMs());
    return this.ended !== null;
  }

  close(why = 'closed'): void {
    this.fail(why);
  }

  /** A watch was created on the source, which stood at `revision` then. */
  protected opened(revision: number): void {
    this.createdAt = Math.min(this.createdAt, revision);
  }

  /** A batch: its events (in order), delivered through `revision`. */
  protected batch(events: readonly FeedEvent[], revision: number): void {
    for (const event of events) this.pending.set(event.kv.key, event.type === 'delete' ? null : event.kv);
    this.through = Math.max(this.through, revision);
    this.wake();
  }

  /** The source ended the watch with wrong_cell after delivering everything through `lastRevision`. */
  protected endedAt(lastRevision: number): void {
    if (this.over) return;
    this.through = Math.max(this.through, lastRevision);
    this.ended = { fenceRevision: lastRevision };
    this.wake();
  }

  protected fail(why: string): void {
    if (!this.over) this.failure = why;
    this.wake();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) waiter();
  }
}
