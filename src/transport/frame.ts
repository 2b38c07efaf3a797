// Frames: u32 payloadBytes | u32 crc32(payload) | payload (wire format in codec.ts). The CRC is
// there because TCP's 16-bit checksum lets rare corruptions through and because length and shape
// checks alone cannot notice a flipped bit inside a term or an entry's data.
import { crc32 } from 'node:zlib';
import { assert } from '../base/assert.js';
import type { RaftMessage } from '../raft/index.js';
import { messageBytes, messageBytesMin, writeMessage } from './codec.js';
import { readMessage } from './codec-read.js';
import { protocolVersion } from './protocol.js';
import { TransportError, TransportErrorReason } from './errors.js';
import type { TransportLimits } from './types.js';
import { WireReader } from './wire-reader.js';
import { WireWriter } from './wire-writer.js';

export const frameHeaderBytes = 8;
/**
 * The largest control frame (handshake, reply, ack): what an unauthenticated connection may make
 * us buffer, however large frameBytesMax is.
 */
export const controlFrameBytesMax = 4096;

export const FrameKind = {
  handshake: 1,
  handshakeReply: 2,
  messages: 3,
  snapshotHeader: 4,
  snapshotChunk: 5,
  snapshotEnd: 6,
  snapshotAck: 7,
  snapshotResume: 8,
  /** Lease keepalives forwarded between members (lease-frames.ts), on the raft channel. */
  leases: 9,
} as const;
export type FrameKind = (typeof FrameKind)[keyof typeof FrameKind];

/** One received frame: its kind and a reader positioned on its body. */
export interface Frame {
  readonly kind: number;
  readonly body: WireReader;
}

/** Writes a frame of `payloadBytes` (kind included) at w.offset; `fill` writes the body. */
export function writeFrame(
  w: WireWriter,
  kind: FrameKind,
  payloadBytes: number,
  fill: (w: WireWriter) => void,
): void {
  const start = w.offset;
  w.u32(payloadBytes);
  w.u32(0); // the CRC, patched below once the payload is written
  w.u8(kind);
  fill(w);
  assert(w.offset === start + frameHeaderBytes + payloadBytes, 'frame body matches its size');
  const payload = w.buffer.subarray(start + frameHeaderBytes, w.offset);
  w.buffer.writeUInt32LE(crc32(payload), start + 4);
}

/** A standalone frame buffer (handshakes, snapshot control frames: not the hot path). */
export function encodeFrame(
  kind: FrameKind,
  bodyBytes: number,
  fill: (w: WireWriter) => void,
): Buffer {
  const buffer = Buffer.allocUnsafe(frameHeaderBytes + 1 + bodyBytes);
  const w = new WireWriter(buffer);
  writeFrame(w, kind, 1 + bodyBytes, fill);
  assert(w.offset === buffer.length, 'frame fills its buffer');
  return buffer;
}

/** Bytes a messages frame takes on the wire, given its messages' encoded sizes. */
export function messagesFrameBytes(messagesBytes: number): number {
  return frameHeaderBytes + 1 + 4 + messagesBytes;
}

/**
 * Encodes `messages` (with their sizes from messageBytes in the same protocol `version`) as consecutive messages frames of about
 * frameBytesTarget each, in one buffer, so one flush is one socket write. A message that alone
 * exceeds the target gets a frame of its own; the caller never passes one over frameBytesMax.
 */
export function encodeMessageFrames(
  messages: readonly RaftMessage[],
  sizes: readonly number[],
  limits: Pick<TransportLimits, 'frameBytesTarget' | 'frameBytesMax' | 'frameMessagesMax'>,
  version: number = protocolVersion,
): Buffer {
  assert(messages.length === sizes.length && messages.length > 0, 'one size per message');
  const groups: { start: number; end: number; bytes: number }[] = [];
  let total = 0;
  let group = { start: 0, end: 0, bytes: 0 };
  for (let i = 0; i < messages.length; i++) {
    const size = sizes[i] as number;
    const full = group.end - group.start >= limits.frameMessagesMax ||
      messagesFrameBytes(group.bytes + size) > limits.frameBytesTarget;
    if (group.end > group.start && full) {
      groups.push(group);
      total += messagesFrameBytes(group.bytes);
      group = { start: i, end: i, bytes: 0 };
    }
    group.end = i + 1;
    group.bytes += size;
  }
  groups.push(group);
  total += messagesFrameBytes(group.bytes);
  const buffer = Buffer.allocUnsafe(total);
  const w = new WireWriter(buffer);
  for (const g of groups) {
    assert(messagesFrameBytes(g.bytes) - frameHeaderBytes <= limits.frameBytesMax, 'frame size');
    writeFrame(w, FrameKind.messages, 1 + 4 + g.bytes, (body) => {
      body.u32(g.end - g.start);
      for (let i = g.start; i < g.end; i++) writeMessage(body, messages[i] as RaftMessage, version);
    });
  }
  assert(w.offset === total, 'frames fill the flush buffer');
  return buffer;
}

/** Decodes a messages frame's body (protocol `version`) whole: every message or a TransportError. */
export function readMessagesBody(
  body: WireReader,
  limits: Pick<TransportLimits, 'frameMessagesMax' | 'messageItemsMax'>,
  version: number = protocolVersion,
): RaftMessage[] {
  const count = body.count(limits.frameMessagesMax, messageBytesMin, 'message count');
  const messages: RaftMessage[] = new Array<RaftMessage>(count);
  for (let i = 0; i < count; i++) messages[i] = readMessage(body, limits, version);
  expectEnd(body);
  return messages;
}

export function expectEnd(body: WireReader): void {
  if (body.remaining() !== 0) {
    throw new TransportError(TransportErrorReason.trailingBytes,
      `${body.remaining()} bytes after the frame body`, body.offset);
  }
}

export { messageBytes };

/** A frame whose payload stays in the pieces it arrived in (large snapshot chunks). */
export interface FramePieces {
  readonly kind: number;
  /** The body (the payload after its kind byte) as views of the received chunks, in order. */
  readonly pieces: readonly Buffer[];
}

/**
 * Splits a byte stream into frames. Chunks are kept as received; a frame inside one chunk is a
 * view of it (no copy), only a frame spanning chunks is copied once into a buffer of its own
 * (or not at all, through nextPieces). A length over frameBytesMax fails before anything is
 * allocated for it, and a frame is returned only once its CRC matched.
 */
export class FrameReader {
  private chunks: Buffer[] = [];
  // Invariant: buffered === sum of chunk lengths minus headOffset.
  private buffered = 0;
  private headOffset = 0;

  constructor(private frameBytesMax: number) {}

  /** Raises (or lowers) the frame size limit, e.g. once a handshake has been accepted. */
  setFrameBytesMax(bytes: number): void {
    assert(Number.isSafeInteger(bytes) && bytes > 0, 'a positive frame limit');
    this.frameBytesMax = bytes;
  }

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.chunks.push(chunk);
    this.buffered += chunk.length;
  }

  bufferedBytes(): number {
    return this.buffered;
  }

  /** The next complete frame, or null until more bytes arrive. Throws on a bad length or CRC. */
  next(): Frame | null {
    const views = this.nextPayload();
    if (views === null) return null;
    const payload = views.length === 1 ? (views[0] as Buffer) : Buffer.concat(views);
    const body = new WireReader(payload, 1, payload.length);
    return { kind: payload[0] as number, body };
  }

  /** Like next(), but leaves the body in the pieces it arrived in: no copy however large. */
  nextPieces(): FramePieces | null {
    const views = this.nextPayload();
    if (views === null) return null;
    const first = views[0] as Buffer;
    const pieces = first.length > 1 ? [first.subarray(1), ...views.slice(1)] : views.slice(1);
    return { kind: first[0] as number, pieces };
  }

  /** The next frame's payload as views of the chunks, CRC checked; null if incomplete. */
  private nextPayload(): Buffer[] | null {
    if (this.buffered < frameHeaderBytes) return null;
    const header = this.takeViews(frameHeaderBytes, false);
    const headerBytes = header.length === 1 ? (header[0] as Buffer) : Buffer.concat(header);
    const payloadBytes = headerBytes.readUInt32LE(0);
    if (payloadBytes === 0 || payloadBytes > this.frameBytesMax) {
      throw new TransportError(TransportErrorReason.tooLarge,
        `frame length ${payloadBytes} outside 1..${this.frameBytesMax}`);
    }
    if (this.buffered < frameHeaderBytes + payloadBytes) return null;
    this.takeViews(frameHeaderBytes, true);
    const views = this.takeViews(payloadBytes, true);
    let crc = 0;
    for (const view of views) crc = crc32(view, crc);
    if (crc !== headerBytes.readUInt32LE(4)) {
      throw new TransportError(TransportErrorReason.checksum, `frame of ${payloadBytes} bytes`);
    }
    return views;
  }

  /** The first `bytes` buffered bytes as views of the chunks; `consume` removes them. */
  private takeViews(bytes: number, consume: boolean): Buffer[] {
    assert(bytes > 0 && bytes <= this.buffered, 'take within buffered bytes');
    const views: Buffer[] = [];
    let left = bytes;
    let index = 0;
    let offset = this.headOffset;
    while (left > 0) {
      const chunk = this.chunks[index] as Buffer;
      const end = Math.min(chunk.length, offset + left);
      views.push(chunk.subarray(offset, end));
      left -= end - offset;
      if (end === chunk.length) {
        index++;
        offset = 0;
      } else {
        offset = end;
      }
    }
    if (consume) {
      this.chunks.splice(0, index);
      this.headOffset = offset;
      this.buffered -= bytes;
    }
    return views;
  }
}
