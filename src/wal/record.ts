// Record framing: [crc u32][payload length u32][type u8][3 zero bytes][header crc u32][payload].
// The header CRC covers length and type and is seeded with the previous record's CRC; the record
// CRC continues from it over the payload. So a record is only valid in its exact place in the
// chain: a stale record from an old segment, a recycled region or a reordered write fails its
// check even though its own bytes are intact. The header CRC alone lets recovery trust a damaged
// record's length when it sizes the torn-write window.
import { crc32 } from 'node:zlib';
import { assert } from '../base/assert.js';
import { RecordType } from './types.js';

export const frameHeaderBytes = 16;
const recordTypes: ReadonlySet<number> = new Set(Object.values(RecordType));

/** Writes one framed record into `target` at `offset`; returns its CRC (the next record's seed). */
export function writeFrame(
  target: Buffer,
  offset: number,
  frame: { type: RecordType; payload: Uint8Array; seed: number },
): number {
  const { type, payload, seed } = frame;
  assert(offset + frameHeaderBytes + payload.length <= target.length, 'frame fits its buffer');
  assert(recordTypes.has(type), 'known record type');
  target.writeUInt32LE(payload.length, offset + 4);
  target.writeUInt32LE(type, offset + 8); // type in the low byte, three reserved zero bytes
  const headerCrc = crc32(target.subarray(offset + 4, offset + 12), seed);
  target.writeUInt32LE(headerCrc, offset + 12);
  target.set(payload, offset + frameHeaderBytes);
  // The record CRC continues from the header CRC over the payload; it must not run over the
  // stored header CRC bytes: a CRC fed its own value ends in a constant residue, which would
  // erase the seed and let a record from another chain pass.
  const crc = crc32(payload, headerCrc);
  target.writeUInt32LE(crc, offset);
  return crc;
}

export function frameBytes(payloadBytes: number): number {
  return frameHeaderBytes + payloadBytes;
}

export type FrameRead =
  | {
      readonly kind: 'record';
      readonly type: RecordType;
      readonly payload: Buffer;
      readonly crc: number;
      readonly end: number;
    }
  /** A zero header: nothing was ever written here (preallocated space). */
  | { readonly kind: 'zero' }
  /** A torn or damaged record; `declaredEnd` is where it ends if its header checks out. */
  | { readonly kind: 'bad'; readonly reason: string; readonly declaredEnd: number | null };

/** Reads the frame at `offset` of `bytes`, checking it against the chain `seed`. Pure. */
export function readFrame(bytes: Buffer, offset: number, seed: number): FrameRead {
  if (offset + frameHeaderBytes > bytes.length) {
    return isZero(bytes, offset, bytes.length)
      ? { kind: 'zero' }
      : { kind: 'bad', reason: 'incomplete record header', declaredEnd: null };
  }
  if (isZero(bytes, offset, offset + frameHeaderBytes)) return { kind: 'zero' };
  const length = bytes.readUInt32LE(offset + 4);
  const typeWord = bytes.readUInt32LE(offset + 8);
  const type = typeWord & 0xff;
  const end = offset + frameHeaderBytes + length;
  const headerCrc = crc32(bytes.subarray(offset + 4, offset + 12), seed);
  if (headerCrc !== bytes.readUInt32LE(offset + 12)) {
    return { kind: 'bad', reason: 'record header checksum mismatch', declaredEnd: null };
  }
  if (typeWord >>> 8 !== 0 || !recordTypes.has(type)) {
    const reason = `invalid record type word 0x${typeWord.toString(16)}`;
    return { kind: 'bad', reason, declaredEnd: null };
  }
  if (end > bytes.length) {
    const reason = `record of ${length} bytes runs past end of file`;
    return { kind: 'bad', reason, declaredEnd: end };
  }
  const crc = crc32(bytes.subarray(offset + frameHeaderBytes, end), headerCrc);
  if (crc !== bytes.readUInt32LE(offset)) {
    return { kind: 'bad', reason: 'checksum mismatch', declaredEnd: end };
  }
  const payload = bytes.subarray(offset + frameHeaderBytes, end);
  return { kind: 'record', type: type as RecordType, payload, crc, end };
}

const zeroChunk = Buffer.alloc(64 * 1024);

export function isZero(bytes: Buffer, start: number, end: number): boolean {
  // Native comparison in 64 KiB steps: a preallocated segment is mostly zeros.
  for (let at = start; at < end; at += zeroChunk.length) {
    const stop = Math.min(end, at + zeroChunk.length);
    if (!bytes.subarray(at, stop).equals(zeroChunk.subarray(0, stop - at))) return false;
  }
  return true;
}

/** Offset of the last non-zero byte at or after `start`, or -1. Scans backwards: tails are zero. */
export function lastNonZero(bytes: Buffer, start: number): number {
  let stop = bytes.length;
  while (stop > start) {
    const at = Math.max(start, stop - zeroChunk.length);
    if (!isZero(bytes, at, stop)) {
      for (let i = stop - 1; i >= at; i--) if (bytes[i] !== 0) return i;
    }
    stop = at;
  }
  return -1;
}
