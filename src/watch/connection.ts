// A client connection's view of its watchers: the per-connection quota and a fair ready list.
// The edge pulls outputs one at a time while its socket has room; watchers take turns (one
// output each per round), so a watcher catching up on a long history cannot starve the others.
import { assert } from '../base/assert.js';
import type { WatchOutput, WatchSpec } from './types.js';
import type { Watcher, WatcherOwner } from './watcher.js';

/** The part of the hub a connection drives. */
export interface WatchStepper<Tag> {
  step(watcher: Watcher<Tag>): WatchOutput<Tag> | null;
  cancel(watcher: Watcher<Tag>): number;
  forget(connection: WatchConnection<Tag>): void;
}

export class WatchConnection<Tag> implements WatcherOwner<Tag> {
  /** Live (not ended) watchers: the per-connection quota counts these. */
  readonly watchers = new Set<Watcher<Tag>>();
  private ready: Watcher<Tag>[] = [];
  private readyHead = 0;
  private closed = false;

  constructor(
    private readonly hub: WatchStepper<Tag>,
    /** Called when the ready list becomes non-empty: the edge schedules a flush. */
    private readonly onReady: () => void,
    /**
     * The edge's authorization of its principal (src/auth): asked when a watcher is created and
     * again before each batch is delivered, so a permission removed while a watch is open ends it.
     */
    readonly admits: (spec: WatchSpec) => boolean,
  ) {}

  get isClosed(): boolean {
    return this.closed;
  }

  markReady(watcher: Watcher<Tag>): void {
    if (watcher.listed || this.closed) return;
    watcher.listed = true;
    const wasEmpty = this.readyHead === this.ready.length;
    this.ready.push(watcher);
    if (wasEmpty) this.onReady();
  }

  /** The next output, round-robin over ready watchers; null when none has any. */
  next(): WatchOutput<Tag> | null {
    while (this.readyHead < this.ready.length) {
      const watcher = this.ready[this.readyHead] as Watcher<Tag>;
      this.ready[this.readyHead] = undefined as unknown as Watcher<Tag>;
      this.readyHead++;
      if (this.readyHead === this.ready.length) {
        this.ready = [];
        this.readyHead = 0;
      }
      watcher.listed = false;
      const output = this.hub.step(watcher);
      // Back of the line while it has more: fairness between this connection's watchers.
      if (watcher.hasOutput) this.markReady(watcher);
      if (output !== null) return output;
    }
    return null;
  }

  get hasReady(): boolean {
    return this.readyHead < this.ready.length;
  }

  /** Cancels every watcher (the client went away); nothing more is produced. */
  close(): void {
    if (this.closed) return;
    for (const watcher of [...this.watchers]) this.hub.cancel(watcher);
    assert(this.watchers.size === 0, 'closing cancels every watcher');
    this.closed = true;
    this.ready = [];
    this.readyHead = 0;
    this.hub.forget(this);
  }
}
