// Sends one snapshot on a connection of its own, so megabytes of snapshot data never sit in
// front of a heartbeat. Data goes in bounded chunks and waits for the socket to drain between
// them: at most one chunk plus the socket's high-water mark is in memory, whatever the size.
import { connect, type Socket } from 'node:net';
import { crc32 } from 'node:zlib';
import { assert } from '../base/assert.js';
import { TransportError, TransportErrorReason } from './errors.js';
import { FrameInbox } from './frame-inbox.js';
import { FrameKind, controlFrameBytesMax, frameHeaderBytes } from './frame.js';
import { Channel, decodeReply, encodeHandshake, protocolVersion } from './handshake.js';
import { encodeSnapshotEnd, encodeSnapshotHeader, type SnapshotHeader } from './snapshot-frames.js';
import type { PeerAddress, TransportLimits } from './types.js';

export interface SnapshotSend {
  readonly address: PeerAddress;
  readonly clusterId: string;
  readonly header: SnapshotHeader;
  /** The data, in order, summing to header.totalBytes. A chunk must not change once yielded. */
  readonly chunks: AsyncIterable<Uint8Array>;
  readonly limits: TransportLimits;
  /** Aborts the transfer (transport closing). */
  readonly signal?: AbortSignal;
}

/** Resolves once the receiver acknowledged storing the snapshot; throws TransportError if not. */
export async function sendSnapshotStream(send: SnapshotSend): Promise<void> {
  const { header, limits } = send;
  const socket = connect({ host: send.address.host, port: send.address.port, noDelay: true });
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
    socket.write(encodeHandshake({
      version: protocolVersion, channel: Channel.snapshot, clusterId: send.clusterId,
      from: header.from, to: header.to,
    }));
    const reply = decodeReply(await inbox.next(), FrameKind.handshakeReply);
    if (!reply.accepted) throw new TransportError(TransportErrorReason.rejected, reply.reason);
    socket.write(encodeSnapshotHeader(header));
    let sentBytes = 0;
    for await (const chunk of send.chunks) {
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
        if (inbox.hasFrame()) {
          const early = decodeReply(await inbox.next(), FrameKind.snapshotAck);
          throw new TransportError(TransportErrorReason.rejected, early.reason);
        }
      }
      if (sentBytes > header.totalBytes) break;
    }
    if (sentBytes !== header.totalBytes) {
      throw new TransportError(TransportErrorReason.invalidValue,
        `snapshot chunks sum to ${sentBytes}+ bytes, header says ${header.totalBytes}`);
    }
    socket.write(encodeSnapshotEnd());
    const ack = decodeReply(await inbox.next(), FrameKind.snapshotAck);
    if (!ack.accepted) throw new TransportError(TransportErrorReason.rejected, ack.reason);
    socket.end();
  } finally {
    send.signal?.removeEventListener('abort', abort);
    socket.setTimeout(0);
    if (!socket.writableEnded) socket.destroy();
  }
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
