// Wakes lock waiters and election observers when keys they care about change in this node's
// applied state. Subscriptions are by exact key (a waiter's predecessor and its own key) or by
// prefix (an observer), so a release wakes exactly the one waiter behind it, not the herd.
//
// The feed is only a wake-up signal: every decision it triggers is taken by a committed command
// (seqCheck) or a linearizable read, so a missed or early wake-up can cost a round trip but never
// a wrong grant. It must not miss one for good, though: a subscriber states the key's incarnation
// (createRevision) it saw, and subscribing checks the current state first, in the same turn of the
// event loop as the events that follow, so a deletion between listing and subscribing still wakes.
import { lockFeedEventsReadMax } from '../base/limits.js';
import { CompactedError, KeyNotFoundError } from '../base/errors.js';
import type { KeyValue, MvccEvent, RangeRequest, RangeResult } from '../mvcc/index.js';

/** The applied state the feed reads (the node's MvccStore). */
export interface AppliedState {
  readonly revision: number;
  range(request: RangeRequest): RangeResult;
  events(options: { startRevision: number; limit: number }): MvccEvent[];
}

export interface Subscription {
  cancel(): void;
}

interface KeyWatch {
  readonly key: string;
  readonly onChange: () => void;
}

interface MoveWatch {
  readonly prefix: string;
  readonly onMoved: () => void;
}

interface PrefixWatch {
  readonly prefix: string;
  readonly onEvents: (events: readonly MvccEvent[] | null) => void;
}

/** Revisions read as events per applied batch; beyond it, subscribers re-check instead. */
const eventsReadMax = lockFeedEventsReadMax;

export class ChangeFeed {
  private readonly byKey = new Map<string, Set<KeyWatch>>();
  private readonly byPrefix = new Set<PrefixWatch>();
  /** Waiters to wake when their queue's namespace stops taking writes here (a move's fence). */
  private readonly moveWatches = new Set<MoveWatch>();
  private seenRevision: number;

  constructor(private readonly state: AppliedState) {
    this.seenRevision = state.revision;
  }

  /** The applied revision the feed reads. */
  get revision(): number {
    return this.state.revision;
  }

  get subscriptions(): number {
    let count = this.byPrefix.size + this.moveWatches.size;
    for (const set of this.byKey.values()) count += set.size;
    return count;
  }

  /**
   * Calls `onGone` once when `kv` (this incarnation of its key) is deleted or replaced; at once
   * (on a microtask) if it already is.
   */
  whenGone(kv: KeyValue, onGone: () => void): Subscription {
    let done = false;
    const fire = (): void => {
      if (done) return;
      done = true;
      remove();
      onGone();
    };
    const watch: KeyWatch = {
      key: kv.key,
      onChange: () => {
        if (!this.isLive(kv)) fire();
      },
    };
    let set = this.byKey.get(kv.key);
    if (set === undefined) this.byKey.set(kv.key, (set = new Set()));
    set.add(watch);
    const remove = (): void => {
      set.delete(watch);
      if (set.size === 0 && this.byKey.get(kv.key) === set) this.byKey.delete(kv.key);
    };
    if (!this.isLive(kv)) void Promise.resolve().then(fire);
    return { cancel: () => { done = true; remove(); } };
  }

  /**
   * Calls `onEvents` with the events under `prefix` of every applied batch that has some, or with
   * null when history was compacted past the feed (the subscriber re-reads the state).
   */
  watchPrefix(prefix: string, onEvents: (events: readonly MvccEvent[] | null) => void): Subscription {
    const watch: PrefixWatch = { prefix, onEvents };
    this.byPrefix.add(watch);
    return { cancel: () => this.byPrefix.delete(watch) };
  }

  /**
   * Calls `onMoved` once when this cell stops taking writes under `prefix` (its namespace fenced
   * for a move, or gone): a waiter there would otherwise sleep until its deadline, as the entry
   * ahead of it is released on the destination, where this feed never sees it.
   */
  whenMoved(prefix: string, onMoved: () => void): Subscription {
    let done = false;
    const watch: MoveWatch = {
      prefix,
      onMoved: () => {
        if (done) return;
        done = true;
        this.moveWatches.delete(watch);
        onMoved();
      },
    };
    this.moveWatches.add(watch);
    return { cancel: () => { done = true; this.moveWatches.delete(watch); } };
  }

  /** Called after an applied batch that changed this cell's ownership table: `refused` judges a queue prefix. */
  onOwnershipChanged(refused: (prefix: string) => boolean): void {
    for (const watch of [...this.moveWatches]) if (refused(watch.prefix)) watch.onMoved();
  }

  /** Called after every applied batch. */
  onApplied(): void {
    const revision = this.state.revision;
    if (revision <= this.seenRevision) return;
    const from = this.seenRevision + 1;
    this.seenRevision = revision;
    if (this.byKey.size === 0 && this.byPrefix.size === 0) return;
    let events: MvccEvent[] | null = null;
    // A big jump (a snapshot installed) is not read event by event on the apply path: every
    // subscriber re-checks the state instead, as after a compaction.
    if (revision - from < eventsReadMax) {
      try {
        events = this.state.events({ startRevision: from, limit: Number.MAX_SAFE_INTEGER });
      } catch (error) {
        if (!(error instanceof CompactedError)) throw error;
      }
    }
    this.dispatch(events);
  }

  private dispatch(events: readonly MvccEvent[] | null): void {
    if (events === null) {
      for (const set of [...this.byKey.values()]) for (const watch of [...set]) watch.onChange();
      for (const watch of [...this.byPrefix]) watch.onEvents(null);
      return;
    }
    if (events.length === 0) return;
    for (const event of events) {
      const set = this.byKey.get(event.kv.key);
      if (set !== undefined) for (const watch of [...set]) watch.onChange();
    }
    for (const watch of [...this.byPrefix]) {
      const mine = events.filter((event) => event.kv.key.startsWith(watch.prefix));
      if (mine.length > 0) watch.onEvents(mine);
    }
  }

  private isLive(kv: KeyValue): boolean {
    try {
      const current = this.state.range({ type: 'get', key: kv.key }).kvs[0];
      return current !== undefined && current.createRevision === kv.createRevision;
    } catch (error) {
      if (error instanceof KeyNotFoundError) return false;
      throw error;
    }
  }
}
