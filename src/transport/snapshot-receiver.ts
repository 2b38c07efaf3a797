// The receiving end of a snapshot stream: checks the header against the handshake, lets the
// onSnapshot handler say how much of these exact bytes it already holds (the resume offset sent
// back to the sender), hands it the rest as an async iterable (pausing the socket while the
// handler is behind), and acknowledges only once the handler has stored the whole snapshot.
import type { Socket } from 'node:net';
import { assert } from '../base/assert.js';
import type { MemberId, RaftMessage } from '../raft/index.js';
import { ChunkQueue } from './chunk-queue.js';
import { TransportError, TransportErrorReason } from './errors.js';
import { FrameKind, type Frame, type FramePieces } from './frame.js';
import { encodeReply, type Handshake } from './handshake.js';
import {
  decodeSnapshotHeader, encodeSnapshotResume, type SnapshotHeader,
} from './snapshot-frames.js';
import type { IncomingSnapshot, TransportLimits, TransportLogger } from './types.js';

export interface SnapshotReceiverContext {
  readonly memberId: MemberId;
  readonly limits: TransportLimits;
  readonly logger: TransportLogger;
  readonly onSnapshot: (snapshot: IncomingSnapshot) => Promise<void>;
}

export class SnapshotReceiver {
  private header: SnapshotHeader | null = null;
  private queue: ChunkQueue | null = null;
  // Set once the resume offset went to the sender; no chunk may arrive before.
  private resumed = false;
  // Invariant: receivedBytes <= header.totalBytes; it starts at the resume offset.
  private receivedBytes = 0;
  private ended = false;
  // Set once the handler settled and the ack is on its way: later data is read and discarded.
  private settled = false;

  constructor(
    private readonly socket: Socket,
    private readonly handshake: Handshake,
    private readonly context: SnapshotReceiverContext,
  ) {
    socket.setTimeout(context.limits.snapshotIdleTimeoutMs, () => {
      this.fail(new TransportError(TransportErrorReason.disconnected, 'snapshot stream idle'));
      socket.destroy();
    });
  }

  /** After the header, frames are read as pieces (no copy) and go to onDataFrame. */
  streaming(): boolean {
    return this.header !== null && (!this.ended || this.settled);
  }

  /** The header frame. Throws TransportError on a frame out of place (connection closes). */
  onFrame(frame: Frame): void {
    if (this.header !== null) {
      throw new TransportError(TransportErrorReason.unexpectedFrame, 'frame after snapshot end');
    }
    this.onHeader(frame);
  }

  /** A chunk or the end marker, with the chunk's bytes still in the pieces they arrived in. */
  onDataFrame(frame: FramePieces): void {
    if (this.settled) return;
    const header = this.header;
    assert(header !== null && this.queue !== null && !this.ended, 'streaming');
    if (!this.resumed) {
      throw new TransportError(TransportErrorReason.unexpectedFrame,
        'snapshot data before the resume offset was sent');
    }
    let bytes = 0;
    for (const piece of frame.pieces) bytes += piece.length;
    if (frame.kind === FrameKind.snapshotEnd && bytes === 0) {
      if (this.receivedBytes !== header.totalBytes) {
        throw new TransportError(TransportErrorReason.truncated,
          `snapshot ended at ${this.receivedBytes} of ${header.totalBytes} bytes`);
      }
      this.ended = true;
      this.queue.end();
      return;
    }
    if (frame.kind !== FrameKind.snapshotChunk) {
      throw new TransportError(TransportErrorReason.unexpectedFrame,
        `frame kind ${frame.kind} in a snapshot stream`);
    }
    if (bytes === 0 || this.receivedBytes + bytes > header.totalBytes) {
      throw new TransportError(TransportErrorReason.invalidValue,
        `chunk of ${bytes} bytes after ${this.receivedBytes} of ${header.totalBytes}`);
    }
    this.receivedBytes += bytes;
    for (const piece of frame.pieces) this.queue.push(piece);
  }

  fail(error: Error): void {
    this.queue?.fail(error);
  }

  private onHeader(frame: Frame): void {
    const header = decodeSnapshotHeader(frame, this.context.limits);
    if (header.from !== this.handshake.from || header.to !== this.context.memberId) {
      throw new TransportError(TransportErrorReason.invalidValue,
        `snapshot ${header.from} -> ${header.to} on ${this.handshake.from}'s connection`);
    }
    this.header = header;
    const socket = this.socket;
    const queue = new ChunkQueue(2 * this.context.limits.snapshotChunkBytes,
      () => socket.pause(), () => socket.resume());
    this.queue = queue;
    const resumeAt = (offset: number): void => this.resumeAt(offset);
    const chunks: AsyncIterable<Uint8Array> = {
      [Symbol.asyncIterator]: () => {
        if (!this.resumed) this.resumeAt(0);
        return queue[Symbol.asyncIterator]();
      },
    };
    const incoming: IncomingSnapshot = { ...header, resumeAt, chunks };
    this.context.onSnapshot(incoming).then(
      () => this.acknowledge(this.ended ? null : 'handler returned before the stream ended'),
      (error: unknown) => this.acknowledge(String(error)),
    );
  }

  /** The handler holds `offset` bytes of this exact snapshot: the sender continues there. */
  private resumeAt(offset: number): void {
    const header = this.header;
    assert(header !== null && !this.resumed, 'the resume offset is sent once, after the header');
    assert(Number.isSafeInteger(offset) && offset >= 0 && offset <= header.totalBytes,
      'the resume offset lies inside the snapshot');
    this.resumed = true;
    this.receivedBytes = offset;
    if (!this.settled && !this.socket.destroyed) this.socket.write(encodeSnapshotResume(offset));
  }

  private acknowledge(failure: string | null): void {
    this.settled = true;
    this.queue?.fail(new TransportError(TransportErrorReason.disconnected, 'snapshot settled'));
    const socket = this.socket;
    if (socket.destroyed) return;
    if (failure !== null) {
      this.context.logger.warn({ from: this.handshake.from, error: failure },
        'snapshot from peer not stored');
    }
    const accepted = failure === null;
    socket.end(encodeReply(FrameKind.snapshotAck, { accepted, reason: failure ?? '' }));
    // Read (and discard) until the sender closes too, but not forever.
    socket.resume();
    socket.setTimeout(this.context.limits.handshakeTimeoutMs, () => socket.destroy());
  }
}

/**
 * The onSnapshot handler used when the owner gives none: gathers the data in memory (bounded)
 * and delivers an ordinary snapshot message through onMessages.
 */
export function collectSnapshotInMemory(
  limits: Pick<TransportLimits, 'snapshotInMemoryBytesMax'>,
  onMessages: (batch: readonly RaftMessage[]) => void,
): (snapshot: IncomingSnapshot) => Promise<void> {
  return async (snapshot) => {
    if (snapshot.totalBytes > limits.snapshotInMemoryBytesMax) {
      throw new TransportError(TransportErrorReason.tooLarge,
        `snapshot of ${snapshot.totalBytes} bytes > ${limits.snapshotInMemoryBytesMax} in memory`);
    }
    const data = new Uint8Array(snapshot.totalBytes);
    let offset = 0;
    for await (const chunk of snapshot.chunks) {
      data.set(chunk, offset);
      offset += chunk.length;
    }
    const { from, to, term, meta } = snapshot;
    onMessages([{ type: 'snapshot', from, to, term, snapshot: { meta, data } }]);
  };
}
