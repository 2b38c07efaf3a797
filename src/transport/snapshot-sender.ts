// Sends one snapshot on a connection of its own, so megabytes of snapshot data never sit in
// front of a heartbeat. Data goes in bounded chunks and waits for the socket to drain between
// them: at most one chunk plus the socket's high-water mark is in memory, whatever the size.
// The receiver answers the header with the offset it already holds of these exact bytes, and
// the data is read from there: a transfer cut mid-way resumes instead of starting over.
import type { Socket } from 'node:net';
import { crc32 } from 'node:zlib';
import { assert } from '../base/assert.js';
import { TransportError, TransportErrorReason } from './errors.js';
import { FrameInbox } from './frame-inbox.js';
import { dialPeer, type PeerTls } from './peer-tls.js';
import { FrameKind, controlFrameBytesMax, frameHeaderBytes, type Frame } from './frame.js';
import { Channel, decodeReply, encodeHandshake, fallbackVersion, protocolVersion } from './handshake.js';
import {
  decodeSnapshotResume, encodeSnapshotEnd, encodeSnapshotHeader, type SnapshotHeader,
} from './snapshot-frames.js';
import type { OutgoingSnapshot, PeerAddress, TransportLimits } from './types.js';

export interface SnapshotSend {
  readonly address: PeerAddress;
  readonly clusterId: string;
  /** The header without totalBytes and checksum, which come from `data`. */
  readonly header: Omit<SnapshotHeader, 'totalBytes' | 'checksum'>;
  readonly data: OutgoingSnapshot;
  readonly limits: TransportLimits;
  /** Aborts the transfer (transport closing). */
  readonly signal?: AbortSignal;
  readonly tls?: PeerTls | undefined;
}

/** What a completed transfer sent: `resumedAt` bytes were already held by the receiver. */
export interface SnapshotSent {
  readonly resumedAt: number;
  readonly sentBytes: number;
}

/** A listener refused the handshake's version but speaks `version`, which this member does too. */
class OlderPeer extends Error {
  constructor(readonly version: number) {
    super(`peer speaks protocol version ${version}`);
  }
}

/**
 * Resolves once the receiver acknowledged storing the snapshot; throws TransportError if not.
 * A listener of an older protocol version is dialled again in it (the snapshot channel is the
 * same in versions 2 and 3: only the handshake names the version).
 */
export async function sendSnapshotStream(send: SnapshotSend): Promise<SnapshotSent> {
  try {
    return await sendSnapshotStreamIn(send, protocolVersion);
  } catch (error) {
    if (!(error instanceof OlderPeer)) throw error;
    return await sendSnapshotStreamIn(send, error.version);
  }
}

async function sendSnapshotStreamIn(send: SnapshotSend, version: number): Promise<SnapshotSent> {
  const { data, limits } = send;
  const header: SnapshotHeader = {
    ...send.header, totalBytes: data.totalBytes, checksum: data.checksum,
  };
  const { socket, readyEvent } = dialPeer(send.address, send.header.to, send.tls);
  // With TLS nothing is written before the handshake (and the listener's identity check) is done.
  const secured = readyEvent === 'connect' ? null : new Promise<void>((resolve, reject) => {
    socket.once(readyEvent, () => resolve());
    socket.once('close', () => reject(new TransportError(TransportErrorReason.disconnected, 'closed before the TLS handshake finished')));
  });
  secured?.catch(() => {}); // awaited below; a rejection after an earlier failure is not a crash
  const inbox = new FrameInbox(socket, controlFrameBytesMax); // replies and acks only
  const abort = (): void => {
    socket.destroy(new TransportError(TransportErrorReason.disconnected, 'transport closed'));
  };
  send.signal?.addEventListener('abort', abort);
  socket.setTimeout(limits.snapshotIdleTimeoutMs, () => {
    socket.destroy(new TransportError(TransportErrorReason.disconnected, 'snapshot stream idle'));
  });
  try {
    await inbox.connected();
    if (secured !== null) await secured;
    socket.write(encodeHandshake({
      version, channel: Channel.snapshot, clusterId: send.clusterId,
      from: header.from, to: header.to,
    }));
    const reply = decodeReply(await inbox.next(), FrameKind.handshakeReply);
    if (!reply.accepted) {
      const older = fallbackVersion(reply.reason, version);
      if (older !== null) throw new OlderPeer(older);
      throw new TransportError(TransportErrorReason.rejected, reply.reason);
    }
    socket.write(encodeSnapshotHeader(header));
    const answer = await inbox.next();
    // The receiver's handler may refuse before it says where to start (an ack, not ok).
    if (answer.kind === FrameKind.snapshotAck) throw refusal(answer);
    const resumedAt = decodeSnapshotResume(answer, header.totalBytes);
    await sendSnapshotChunks(socket, inbox, header, data.chunks(resumedAt), resumedAt, limits);
    socket.write(encodeSnapshotEnd());
    const ack = decodeReply(await inbox.next(), FrameKind.snapshotAck);
    if (!ack.accepted) throw new TransportError(TransportErrorReason.rejected, ack.reason);
    socket.end();
    return { resumedAt, sentBytes: header.totalBytes - resumedAt };
  } finally {
    send.signal?.removeEventListener('abort', abort);
    socket.setTimeout(0);
    if (!socket.writableEnded) socket.destroy();
  }
}

/** Writes chunk frames from `startOffset` to totalBytes, waiting for the socket to drain. */
async function sendSnapshotChunks(
  socket: Socket,
  inbox: FrameInbox,
  header: SnapshotHeader,
  chunks: AsyncIterable<Uint8Array>,
  startOffset: number,
  limits: TransportLimits,
): Promise<void> {
  let sentBytes = startOffset;
  for await (const chunk of chunks) {
    for (let offset = 0; offset < chunk.length; offset += limits.snapshotChunkBytes) {
      const piece = chunk.subarray(offset, offset + limits.snapshotChunkBytes);
      sentBytes += piece.length;
      if (sentBytes > header.totalBytes) break;
      writeChunkFrame(socket, piece);
      await inbox.drained();
      // A drained socket resolves at once, and a chain of resolved awaits never lets timers
      // or other sockets run: yield a turn per chunk so heartbeats interleave with the stream.
      await new Promise((resolve) => setImmediate(resolve));
      // The receiver answers early only to refuse (its handler failed): stop sending.
      if (inbox.hasFrame()) throw refusal(await inbox.next());
    }
    if (sentBytes > header.totalBytes) break;
  }
  if (sentBytes !== header.totalBytes) {
    throw new TransportError(TransportErrorReason.invalidValue,
      `snapshot chunks sum to ${sentBytes}+ bytes, header says ${header.totalBytes}`);
  }
}

function refusal(frame: Frame): TransportError {
  return new TransportError(TransportErrorReason.rejected,
    decodeReply(frame, FrameKind.snapshotAck).reason);
}

/** A chunk frame written as header + the caller's bytes, without copying them into a frame. */
function writeChunkFrame(socket: Socket, data: Uint8Array): void {
  assert(data.length > 0, 'chunks are not empty');
  const header = Buffer.allocUnsafe(frameHeaderBytes + 1);
  const kind = Buffer.of(FrameKind.snapshotChunk);
  header.writeUInt32LE(1 + data.length, 0);
  header.writeUInt32LE(crc32(data, crc32(kind)), 4);
  header[frameHeaderBytes] = FrameKind.snapshotChunk;
  socket.cork();
  socket.write(header);
  socket.write(data);
  socket.uncork();
}
