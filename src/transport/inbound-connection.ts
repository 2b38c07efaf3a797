// One accepted connection: it must open with a valid handshake (else it is refused and logged),
// then carries either Raft message and lease frames (a raft or control channel: the same frames,
// split by size and urgency on the sending side) or a single snapshot stream. Any malformed frame ends
// the connection: after a bad length nothing later in the stream can be trusted to line up.
import type { Socket } from 'node:net';
import type { MemberId, RaftMessage } from '../raft/index.js';
import { TransportError, TransportErrorReason } from './errors.js';
import {
  FrameKind, FrameReader, controlFrameBytesMax, readMessagesBody, type Frame,
} from './frame.js';
import {
  Channel, checkHandshake, decodeHandshake, encodeReply, type Handshake,
} from './handshake.js';
import { readLeaseFrameBody, type LeasePeerMessage } from './lease-frames.js';
import { SnapshotReceiver } from './snapshot-receiver.js';
import type { IncomingSnapshot, TransportLimits, TransportLogger } from './types.js';

export interface InboundCounters {
  receivedMessages: number;
  receivedFrames: number;
  rejectedConnections: number;
  corruptFrames: number;
  /** Bytes read from each member's connections once it said who it is (etcd's peer received bytes). */
  readonly receivedBytes: Map<MemberId, number>;
}

export interface InboundContext {
  readonly memberId: MemberId;
  readonly clusterId: string;
  readonly limits: TransportLimits;
  readonly logger: TransportLogger;
  readonly counters: InboundCounters;
  readonly isMember: (id: MemberId) => boolean;
  /** Members removed from the cell: refused with a reason that tells them so. */
  readonly wasRemoved: (id: MemberId) => boolean;
  readonly onMessages: (batch: readonly RaftMessage[]) => void;
  /** Lease frames from member `from` (absent: such a frame is a protocol error). */
  readonly onLeaseMessage: ((from: MemberId, message: LeasePeerMessage) => void) | undefined;
  readonly onSnapshot: (snapshot: IncomingSnapshot) => Promise<void>;
  /** With TLS: why this connection's certificate does not speak for member `from` (null: it does). */
  readonly checkIdentity: ((from: MemberId, socket: Socket) => string | null) | undefined;
  /** A member's newer connection on a channel replaces its older one (a restarted peer). */
  readonly registerConnection: (from: MemberId, channel: Channel, socket: Socket) => void;
}

interface Connection {
  handshake: Handshake | null;
  // Set once the handshake is refused: later frames are ignored until the socket closes.
  refused: boolean;
  snapshot: SnapshotReceiver | null;
}

export function acceptConnection(socket: Socket, context: InboundContext): void {
  // Until the peer has said who it is, it may send only a small frame.
  const reader = new FrameReader(controlFrameBytesMax);
  const remote = `${socket.remoteAddress}:${socket.remotePort}`;
  const connection: Connection = { handshake: null, refused: false, snapshot: null };
  socket.setNoDelay(true);
  // A silent connection may not hold resources forever before saying who it is.
  socket.setTimeout(context.limits.handshakeTimeoutMs, () => {
    context.logger.warn({ remote }, 'peer connection without handshake: closed');
    socket.destroy();
  });
  socket.on('data', (chunk: Buffer) => {
    if (connection.refused) return; // read and discard until the refused peer hangs up
    const from = connection.handshake?.from;
    if (from !== undefined) context.counters.receivedBytes.set(from, (context.counters.receivedBytes.get(from) ?? 0) + chunk.length);
    try {
      reader.push(chunk);
      while (!socket.destroyed && !connection.refused) {
        if (connection.snapshot?.streaming() === true) {
          // Snapshot data stays in the pieces it arrived in: megabytes are never re-copied.
          const pieces = reader.nextPieces();
          if (pieces === null) break;
          connection.snapshot.onDataFrame(pieces);
        } else {
          const frame = reader.next();
          if (frame === null) break;
          onFrame(socket, connection, frame, context, remote);
          if (connection.handshake !== null && !connection.refused) {
            reader.setFrameBytesMax(context.limits.frameBytesMax);
          }
        }
      }
    } catch (error) {
      if (!(error instanceof TransportError)) throw error; // a bug: let it stop the node
      context.counters.corruptFrames++;
      context.logger.warn({ remote, from: connection.handshake?.from ?? null,
        error: error.message }, 'bad frame from peer: connection closed');
      connection.snapshot?.fail(error);
      socket.destroy();
    }
  });
  socket.on('error', () => {}); // 'close' follows
  socket.on('close', () => {
    connection.snapshot?.fail(
      new TransportError(TransportErrorReason.disconnected, 'snapshot stream closed early'));
  });
}

function onFrame(
  socket: Socket,
  connection: Connection,
  frame: Frame,
  context: InboundContext,
  remote: string,
): void {
  if (connection.handshake === null) {
    const handshake = decodeHandshake(frame);
    connection.handshake = handshake;
    const refusal = checkHandshake(handshake, context) ?? context.checkIdentity?.(handshake.from, socket) ?? null;
    if (refusal !== null) {
      connection.refused = true;
      context.counters.rejectedConnections++;
      context.logger.warn({ remote, from: handshake.from, clusterId: handshake.clusterId,
        refusal }, 'peer connection refused');
      socket.end(encodeReply(FrameKind.handshakeReply, { accepted: false, reason: refusal }));
      return;
    }
    socket.setTimeout(0); // (a refused one keeps the timeout: it must close by then)
    connection.snapshot = admit(socket, handshake, context);
  } else if (connection.snapshot !== null) {
    connection.snapshot.onFrame(frame);
  } else if (frame.kind === FrameKind.leases && context.onLeaseMessage !== undefined) {
    context.counters.receivedFrames++;
    const message = readLeaseFrameBody(frame.body, context.limits.messageItemsMax);
    context.onLeaseMessage(connection.handshake.from, message);
  } else {
    context.counters.receivedFrames++;
    const batch = readRaftFrame(frame, connection.handshake, context);
    context.counters.receivedMessages += batch.length;
    if (batch.length > 0) context.onMessages(batch);
  }
}

/** Accepts the handshake; returns the snapshot receiver for a snapshot channel, else null. */
function admit(
  socket: Socket,
  handshake: Handshake,
  context: InboundContext,
): SnapshotReceiver | null {
  socket.write(encodeReply(FrameKind.handshakeReply, { accepted: true, reason: '' }));
  if (handshake.channel === Channel.raft || handshake.channel === Channel.control) {
    socket.setKeepAlive(true, 5000);
    context.registerConnection(handshake.from, handshake.channel, socket);
    return null;
  }
  return new SnapshotReceiver(socket, handshake, context);
}

function readRaftFrame(frame: Frame, handshake: Handshake, context: InboundContext): RaftMessage[] {
  if (frame.kind !== FrameKind.messages) {
    throw new TransportError(TransportErrorReason.unexpectedFrame,
      `frame kind ${frame.kind} on a raft channel`);
  }
  // The connection speaks the version its handshake named (checkHandshake accepted it: in range).
  const batch = readMessagesBody(frame.body, context.limits, handshake.version);
  for (const message of batch) {
    // The handshake authenticated the connection's member; its messages may not claim another.
    if (message.from !== handshake.from || message.to !== context.memberId) {
      throw new TransportError(TransportErrorReason.invalidValue,
        `message ${message.from} -> ${message.to} on ${handshake.from}'s connection`);
    }
  }
  return batch;
}
