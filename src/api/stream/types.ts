// The stream layer's vocabulary: options of the watch service, the tag the hub carries for each
// watcher, and the frame handler registry's types (docs/api/stream.md).
import type { CellApi } from '../types.js';
import type { ApiLimits } from '../http/limits.js';
import type { WatchLimits } from '../../watch/index.js';
import { streamRequestsInFlightMax, streamSocketBufferedBytesHigh, streamSocketBufferedBytesMax } from '../../base/limits.js';

/** What the hub carries per watcher for the transports: the client's watch id on a stream. */
export interface WatchTag {
  readonly id: string | number | null;
  /** The stream session's map key for the watch (JSON of the id); '' for SSE. */
  readonly key: string;
}

export interface WatchServiceOptions {
  readonly limits: WatchLimits;
  /** Told the seconds from a revision's apply to the hand-off of its batch to a client (event lag). */
  readonly onEventLag?: (seconds: number) => void;
  /** After a stream's last message, how long a client that does not read keeps its socket. */
  readonly endGraceMs: number;
  /** progressMs bounds: below the minimum is refused (a busy loop of notifications). */
  readonly progressMsMin: number;
  readonly progressMsMax: number;
  /**
   * A node without a leader this long ends its watches (`unavailable`) and refuses new ones
   * until it has one again: its applied state may be falling behind the cell's unseen (an
   * isolated follower), and a client is better served by another node. Leader changes that
   * complete sooner (an election) end nothing: watches are served from applied state.
   */
  readonly leaderlessEndMs: number;
}

export const defaultWatchServiceOptions: Omit<WatchServiceOptions, 'limits'> = {
  endGraceMs: 10_000,
  progressMsMin: 100,
  progressMsMax: 3_600_000,
  leaderlessEndMs: 5_000,
};

export interface StreamLimits {
  /** Watch output stops being written while a socket holds more than this (backpressure). */
  readonly socketBufferedBytesHigh: number;
  /** A connection whose socket holds more than this (it stopped reading answers) is closed. */
  readonly socketBufferedBytesMax: number;
  /** Requests (put/get/txn/...) awaiting their answer on one connection; more is `overloaded`. */
  readonly requestsInFlightMax: number;
}

export const defaultStreamLimits: StreamLimits = {
  socketBufferedBytesHigh: streamSocketBufferedBytesHigh,
  socketBufferedBytesMax: streamSocketBufferedBytesMax,
  requestsInFlightMax: streamRequestsInFlightMax,
};

/** A decoded client frame: a JSON object with `id` and `type`. */
import type { Frame } from '../../base/stream-frame.js';
export type { Frame };

/** What a frame handler may use: the node's API, limits, and a way to answer. */
export interface FrameContext {
  readonly cell: CellApi;
  readonly apiLimits: ApiLimits;
  /** Sends one frame to the client (JSON-encoded here). */
  send(body: Record<string, unknown>): void;
  /** Aborts when the connection closes: a waiting lock acquire then leaves its queue. */
  readonly closed: AbortSignal;
  /** Who is connected (src/api/principal.ts): every frame's call passes it on. */
  readonly principal: string;
}

/**
 * Handles one frame type. A returned object is answered as `{"id","type":"result","result"}`;
 * `undefined` means the handler answered itself; a thrown BatonError becomes an error frame.
 */
export type FrameHandler<Session = unknown> = (
  frame: Frame,
  context: FrameContext,
  session: Session,
) => Promise<Record<string, unknown> | undefined> | Record<string, unknown> | undefined;
