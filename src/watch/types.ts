// The watch core's vocabulary: what a client asks to watch, the batches it receives, how a
// watcher ends, and the bounds that keep one slow client from costing anyone else memory or time.
import type { BatonError } from '../base/errors.js';
import type { MvccEvent } from '../mvcc/index.js';
import * as limits from '../base/limits.js';

/** Which event types a watcher receives (`filter=put` on the wire keeps puts only). */
export type WatchFilter = 'all' | 'put' | 'delete';

export interface WatchSpec {
  readonly key: string;
  readonly prefix: boolean;
  /**
   * The first revision to receive. 0 = "from now": current + 1, announced to the client (never a
   * silent choice, unlike etcd #11496). Above current + 1: the watcher waits for it.
   */
  readonly startRevision: number;
  readonly prevKv: boolean;
  readonly filter: WatchFilter;
  /**
   * Opaque to the core: the edge's wire encoding (utf8, base64). Watchers that agree on it and on
   * everything above share one batch object per applied chunk, so the edge serializes it once.
   */
  readonly encoding: string;
}

/**
 * Events of whole revisions, in order: every matching event with revision <= `revision` that the
 * watcher has not had before. `events` empty = a progress notification (nothing at or below
 * `revision` is pending). Shared by every watcher of a group: never mutate.
 */
export interface WatchBatch {
  readonly revision: number;
  readonly events: readonly MvccEvent[];
  /** An estimate of the memory the batch pins (keys, values, prevKv values, overhead). */
  readonly bytes: number;
}

/**
 * Why a watcher ended. `stopped`: the node is stopping; `leaderless`: the node has been without a
 * leader too long to trust that its state is current. Either way the client resumes elsewhere.
 * `permission_denied`: the connection's principal may no longer watch the range (src/auth).
 * `wrong_cell`: the watched namespace was fenced or moved to another cell (docs/design/cells.md);
 * everything up to the move's fence was delivered first, the client resumes on the destination.
 */
export type WatchEndReason = 'compacted' | 'slow_consumer' | 'canceled' | 'stopped' | 'leaderless' | 'permission_denied' | 'wrong_cell';

export type WatchOutput<Tag> =
  | { readonly type: 'batch'; readonly tag: Tag; readonly batch: WatchBatch }
  | {
      readonly type: 'end';
      readonly tag: Tag;
      readonly reason: WatchEndReason;
      /** A typed error for compacted, slow_consumer, permission_denied and wrong_cell; null otherwise. */
      readonly error: BatonError | null;
      /** Everything matching at or below this revision was delivered: resume at this + 1. */
      readonly lastRevision: number;
    };

/** The stored history the hub reads: MvccStore satisfies it. */
export interface WatchSource {
  readonly revision: number;
  readonly compactRevision: number;
  /** Events with revision >= startRevision, in order, at most `limit`; throws CompactedError. */
  events(options: { startRevision: number; limit: number }): readonly MvccEvent[];
}

/**
 * What a cell knows of the namespaces a watch spans across moves (docs/design/cells.md "How
 * revisions map"; MvccStore.watchBounds satisfies it). `fence`: this cell no longer takes writes
 * for them (fenced or moved away) and holds none of their events above `revision`; a watch of
 * them ends there with `error` (wrong_cell). `floor`: they landed here from another cell, which
 * holds their events at or below it; this cell does not (0: none).
 */
export interface WatchNamespaces {
  bounds(spec: WatchSpec): { readonly fence: { readonly error: BatonError; readonly revision: number } | null; readonly floor: number };
}

/** Deliberately broken rules, for the simulator's teeth tests only. */
export interface WatchBugs {
  /**
   * A full history read cut at a revision boundary claims the revision it cut off as read: that
   * revision's events are never delivered (a batch that skips a revision).
   */
  readonly skipCutRevision?: boolean;
}

export interface WatchLimits {
  /** Per watcher: undelivered events; past this (or the bytes) it ends with slow_consumer. */
  readonly bufferedEventsMax: number;
  readonly bufferedBytesMax: number;
  readonly watchersPerConnectionMax: number;
  readonly watchersPerNodeMax: number;
  /** Events read from history per step (catch-up and live); a single revision is never split. */
  readonly readEventsMax: number;
  /** History reads one catch-up step may make before it answers with a progress batch instead. */
  readonly catchUpReadsPerStepMax: number;
}

export const defaultWatchLimits: WatchLimits = {
  bufferedEventsMax: limits.watchBufferedEventsMax,
  bufferedBytesMax: limits.watchBufferedBytesMax,
  watchersPerConnectionMax: limits.watchersPerConnectionMax,
  watchersPerNodeMax: limits.watchersPerNodeMax,
  readEventsMax: 512,
  catchUpReadsPerStepMax: 8,
};
