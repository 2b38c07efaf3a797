// The peer transport's vocabulary: options, limits, callbacks and counters. The transport carries
// Raft messages between the members of one cluster over TCP; it never interprets them beyond
// checking that they come from the member that connected and are addressed to this one.
import type { MemberId, RaftMessage, SnapshotMeta } from '../raft/index.js';
import type { LeasePeerMessage } from './lease-frames.js';
import type { PeerTls } from './peer-tls.js';

export type SnapshotMessage = Extract<RaftMessage, { type: 'snapshot' }>;

/** Where a peer listens for Raft traffic. */
export interface PeerAddress {
  readonly host: string;
  readonly port: number;
}

/** A pino-compatible logger subset (fields first, message second), so pino can be passed as is. */
export interface TransportLogger {
  info(fields: Readonly<Record<string, unknown>>, message: string): void;
  warn(fields: Readonly<Record<string, unknown>>, message: string): void;
}

/** Every bound the transport keeps, in one place; see limits.ts for the defaults and reasons. */
export interface TransportLimits {
  /** Largest frame (header excluded) a receiver accepts; bigger lengths are garbage or abuse. */
  readonly frameBytesMax: number;
  /** A flush packs messages into frames of about this size (one oversized message is alone). */
  readonly frameBytesTarget: number;
  /** Messages in one frame, checked before any per-message allocation on decode. */
  readonly frameMessagesMax: number;
  /** Entries in one append, and contexts in one readIndex message. */
  readonly messageItemsMax: number;
  /** Outbound queue per peer: past either bound new messages are dropped and counted. */
  readonly queueMessagesMax: number;
  readonly queueBytesMax: number;
  /** Bytes buffered in a socket before flushing pauses until 'drain' (a slow peer). */
  readonly socketBufferedBytesMax: number;
  /** A paused socket that has not drained for this long is closed and dialled again. */
  readonly writeStallTimeoutMs: number;
  /** Snapshot data travels in chunks of at most this size on its own connection. */
  readonly snapshotChunkBytes: number;
  /** Largest snapshot held in memory when no onSnapshot streaming handler is given. */
  readonly snapshotInMemoryBytesMax: number;
  /** Reconnect backoff: base delay doubling per failed attempt up to the max, with jitter. */
  readonly reconnectDelayMsBase: number;
  readonly reconnectDelayMsMax: number;
  /** Time a new connection has to complete its handshake before it is closed. */
  readonly handshakeTimeoutMs: number;
  /** Time a snapshot stream may sit idle (no chunk, no ack) before it is abandoned. */
  readonly snapshotIdleTimeoutMs: number;
}

/** A snapshot arriving on its own stream; the handler consumes `chunks` at its own pace. */
export interface IncomingSnapshot {
  readonly from: MemberId;
  readonly to: MemberId;
  readonly term: number;
  readonly meta: SnapshotMeta;
  readonly totalBytes: number;
  /** Identifies the data's bytes: with meta.index, meta.term and totalBytes, names a resume. */
  readonly checksum: number;
  /**
   * Call once, before reading `chunks`, with the bytes of this exact snapshot (same index, term,
   * totalBytes and checksum) the handler already holds from an earlier, dropped transfer: the
   * sender continues from there. Reading `chunks` without calling it starts at 0.
   */
  resumeAt(offset: number): void;
  /**
   * Read once, in order, from the resume offset. Pieces are views of the received bytes (no
   * copy), each at most snapshotChunkBytes and usually the size of a socket read; each was
   * CRC-checked with its frame before it is yielded. Ends early with a TransportError if the
   * stream breaks or is corrupt. The socket pauses while the consumer is behind (back-pressure
   * to the sender).
   */
  readonly chunks: AsyncIterable<Uint8Array>;
}

/** Snapshot data to send: read on demand from any offset (e.g. a snapshot file), never whole. */
export interface OutgoingSnapshot {
  readonly totalBytes: number;
  /** Identifies these exact bytes (a Baton snapshot file: the CRC of its end record). */
  readonly checksum: number;
  /** The data from `fromOffset` to the end, in order; a chunk must not change once yielded. */
  chunks(fromOffset: number): AsyncIterable<Uint8Array>;
}

export interface PeerTransportOptions {
  readonly memberId: MemberId;
  /** Connections carrying another clusterId are refused (a node never joins a foreign cell). */
  readonly clusterId: string;
  /** Where to accept peer connections; port 0 picks an ephemeral port (tests). */
  readonly listen: PeerAddress;
  /** Known members and their addresses (this member may be included; it is ignored). */
  readonly peers: ReadonlyMap<MemberId, PeerAddress>;
  /** Received messages, one call per decoded frame, in the order the peer sent them. */
  readonly onMessages: (batch: readonly RaftMessage[]) => void;
  /** Lease keepalive frames from member `from` (lease-frames.ts); without it they are refused. */
  readonly onLeaseMessage?: (from: MemberId, message: LeasePeerMessage) => void;
  /**
   * Streams an incoming snapshot (e.g. into a file); resolve once it is stored, reject to refuse.
   * The caller then steps a snapshot message itself. Without a handler the data is gathered in
   * memory (up to snapshotInMemoryBytesMax) and delivered through onMessages.
   */
  readonly onSnapshot?: (snapshot: IncomingSnapshot) => Promise<void>;
  /** Messages to `to` were dropped (queue full, connection failed): Raft should probe it. */
  readonly reportUnreachable?: (to: MemberId) => void;
  /** `to` speaks a peer protocol without the peer ledger's messages (src/raft/peer-ledger.ts). */
  readonly reportNoLedger?: (to: MemberId) => void;
  /** A snapshot stream to `to` finished (ok) or failed. */
  readonly reportSnapshot?: (to: MemberId, ok: boolean) => void;
  /**
   * Member `peer` refused our connection because it saw this member removed from the cell (it
   * applied the removal; this member never did, e.g. it was cut off meanwhile).
   */
  readonly onRemovedByPeer?: (peer: MemberId) => void;
  readonly logger?: TransportLogger;
  readonly limits?: Partial<TransportLimits>;
  /** Jitter source for reconnect delays; a seeded one makes tests repeatable. */
  readonly random?: { uint32(): number };
  /** Mutual TLS with node identity on every peer connection (peer-tls.ts); absent: plain TCP. */
  readonly tls?: PeerTls;
}

/** Counters for /metrics and tests; monotonic except `queued*` and `connected`. */
export interface PeerStats {
  readonly connected: boolean;
  /**
   * The protocol version the peer's listener accepted on the current connection, or null (not
   * connected, or no answer yet): the newest version both builds speak (protocol.ts).
   */
  readonly acceptedVersion: number | null;
  /** Is the peer's control channel connected (absent: the figures are one channel's)? */
  readonly controlConnected?: boolean;
  readonly queuedMessages: number;
  readonly queuedBytes: number;
  readonly sentMessages: number;
  /** Socket writes (one per flush that had something to send). */
  readonly sentWrites: number;
  readonly sentFrames: number;
  readonly sentBytes: number;
  readonly droppedMessages: number;
  readonly connectAttempts: number;
  readonly connectFailures: number;
}

export interface TransportStats {
  readonly peers: ReadonlyMap<MemberId, PeerStats>;
  readonly receivedMessages: number;
  readonly receivedFrames: number;
  readonly rejectedConnections: number;
  readonly corruptFrames: number;
  readonly receivedBytes: ReadonlyMap<MemberId, number>;
}

/** Where the driver hands outgoing Raft messages (PeerTransport, or the simulator's network). */
export interface PeerSender {
  /**
   * Queues messages; they go out at the next flush: at the latest at the end of this event-loop
   * turn (a setImmediate: the check phase of this turn when queued earlier in it, e.g. from a
   * disk completion or a timer; the next turn's when queued in the check phase itself). Everything
   * queued for a peer until then shares one socket write.
   */
  send(messages: readonly RaftMessage[]): void;
  /** Writes everything queued now (optional: without it, queued messages wait for their turn). */
  flush?(): void;
  /**
   * Writes everything queued once the current callback and the microtasks already queued have
   * run (queueMicrotask): sends made in one callback, e.g. the acknowledgements of every write one
   * WAL group commit completed, share one socket write per peer, with no wait for the turn's end.
   * Optional: without it the caller uses flush().
   */
  flushSoon?(): void;
}
