// The snapshot stream: every engine entry of one consistent view, in key order (meta first), cut
// into chunks of about `chunkBytesMax` (a chunk grows past it only to hold one large entry).
//
//   "BTSN" u8 format=1, then per entry: u32 keyLength (>0), key, u32 valueLength, value
//   end:   u32 0, u64 entryCount, u32 checksum (ContentHasher.digest32 of every entry's bytes)
//
// Records may span chunks: the receiver may re-chunk the stream freely (files, network frames).
import { CorruptFileError } from '../base/errors.js';
import { readU32, readU64, writeU32 } from './bytes.js';
import { ContentHasher } from './content-hash.js';
import type { KvEntry } from './types.js';

const magic = Uint8Array.of(0x42, 0x54, 0x53, 0x4e);
const format = 1;
const streamName = 'snapshot stream';

export function* encodeSnapshot(
  entries: Iterable<KvEntry>,
  chunkBytesMax: number,
): Generator<Uint8Array, void, undefined> {
  let parts: Uint8Array[] = [magic, Uint8Array.of(format)];
  let partBytes = 5;
  let entryCount = 0;
  const hasher = new ContentHasher();
  for (const entry of entries) {
    const header = new Uint8Array(4);
    writeU32(header, 0, entry.key.length);
    const valueHeader = new Uint8Array(4);
    writeU32(valueHeader, 0, entry.value.length);
    for (const part of [header, entry.key, valueHeader, entry.value]) {
      hasher.update(part);
      parts.push(part);
      partBytes += part.length;
    }
    entryCount++;
    if (partBytes >= chunkBytesMax) {
      yield join(parts, partBytes);
      parts = [];
      partBytes = 0;
    }
  }
  const trailer = new Uint8Array(16);
  writeU32(trailer, 0, 0);
  const count = new DataView(trailer.buffer);
  count.setUint32(4, Math.floor(entryCount / 0x1_0000_0000));
  count.setUint32(8, entryCount >>> 0);
  writeU32(trailer, 12, hasher.digest32());
  parts.push(trailer);
  yield join(parts, partBytes + trailer.length);
}

function join(parts: readonly Uint8Array[], length: number): Uint8Array {
  const out = new Uint8Array(length);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/** Parses a stream; throws CorruptFileError (before yielding the last entry is confirmed). */
export function* decodeSnapshot(chunks: Iterable<Uint8Array>): Generator<KvEntry, void, undefined> {
  const input = new ChunkReader(chunks[Symbol.iterator]());
  const header = input.take(5);
  if (header.subarray(0, 4).some((byte, i) => byte !== magic[i]) || header[4] !== format) {
    throw new CorruptFileError(streamName, 0, 'not a Baton snapshot (bad magic or format)');
  }
  const hasher = new ContentHasher();
  let entryCount = 0;
  for (;;) {
    const keyHeader = input.take(4);
    const keyLength = readU32(keyHeader, 0);
    if (keyLength === 0) break;
    const key = input.take(keyLength);
    const valueHeader = input.take(4);
    const value = input.take(readU32(valueHeader, 0));
    for (const part of [keyHeader, key, valueHeader, value]) hasher.update(part);
    entryCount++;
    yield { key, value };
  }
  const trailer = input.take(12);
  if (readU64(trailer, 0) !== entryCount || readU32(trailer, 8) !== hasher.digest32()) {
    throw new CorruptFileError(streamName, input.offset, 'entry count or checksum mismatch');
  }
  if (!input.atEnd()) throw new CorruptFileError(streamName, input.offset, 'bytes after the end');
}

class ChunkReader {
  private chunk: Uint8Array = new Uint8Array(0);
  private position = 0;
  offset = 0;

  constructor(private readonly chunks: Iterator<Uint8Array>) {}

  private pull(): boolean {
    const next = this.chunks.next();
    if (next.done === true) return false;
    this.chunk = next.value;
    this.position = 0;
    return true;
  }

  /** Collects pieces before copying, so a damaged length cannot make it allocate gigabytes. */
  take(length: number): Uint8Array {
    const pieces: Uint8Array[] = [];
    let filled = 0;
    while (filled < length) {
      if (this.position >= this.chunk.length && !this.pull()) {
        throw new CorruptFileError(streamName, this.offset, 'truncated');
      }
      const step = Math.min(length - filled, this.chunk.length - this.position);
      pieces.push(this.chunk.subarray(this.position, this.position + step));
      this.position += step;
      filled += step;
      this.offset += step;
    }
    if (pieces.length === 1) return new Uint8Array(pieces[0] as Uint8Array);
    const out = new Uint8Array(length);
    let at = 0;
    for (const piece of pieces) {
      out.set(piece, at);
      at += piece.length;
    }
    return out;
  }

  atEnd(): boolean {
    while (this.position >= this.chunk.length) if (!this.pull()) return true;
    return false;
  }
}
