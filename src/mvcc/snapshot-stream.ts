// The snapshot stream: every engine entry of one consistent view, in key order (meta first), cut
// into chunks of about `chunkBytesMax` (a chunk grows past it only to hold one large entry).
//
//   "BTSN" u8 format, then per entry: u32 keyLength (>0), key, u32 valueLength, value
//   end:   u32 0, u64 entryCount, u32 checksum of every entry's bytes (the records between the
//          format byte and the end record)
//
// Format 2 (written now) checks with CRC-32; format 1 (read still) used ContentHasher.digest32,
// a byte-at-a-time hash that took 80% of the time to encode a snapshot.
// Records may span chunks: the receiver may re-chunk the stream freely (files, network frames).
import { assert } from '../base/assert.js';
import { crc32 } from '../base/crc32.js';
import { CorruptFileError } from '../base/errors.js';
import { readU32, readU64, writeU32 } from './bytes.js';
import { ContentHasher } from './content-hash.js';
import type { KvEntry } from './types.js';

const magic = Uint8Array.of(0x42, 0x54, 0x53, 0x4e);
const format = 2;
const streamName = 'snapshot stream';
const recordHeaderBytes = 8;
const trailerBytes = 16;

export function* encodeSnapshot(
  entries: Iterable<KvEntry>,
  chunkBytesMax: number,
): Generator<Uint8Array, void, undefined> {
  const chunkBytes = Math.max(chunkBytesMax, magic.length + 1 + trailerBytes);
  // Records are written straight into the chunk: no per-entry buffers, one copy of each byte.
  let chunk = new Uint8Array(chunkBytes);
  chunk.set(magic, 0);
  chunk[magic.length] = format;
  let at = magic.length + 1;
  let checkedTo = at; // chunk bytes before this are in `crc`
  let crc = 0;
  let entryCount = 0;
  for (const entry of entries) {
    const recordBytes = recordHeaderBytes + entry.key.length + entry.value.length;
    if (at + recordBytes > chunk.length) {
      crc = crc32(chunk.subarray(checkedTo, at), crc);
      yield chunk.subarray(0, at);
      chunk = new Uint8Array(Math.max(chunkBytes, recordBytes));
      at = 0;
      checkedTo = 0;
    }
    writeU32(chunk, at, entry.key.length);
    chunk.set(entry.key, at + 4);
    at += 4 + entry.key.length;
    writeU32(chunk, at, entry.value.length);
    chunk.set(entry.value, at + 4);
    at += 4 + entry.value.length;
    entryCount++;
  }
  crc = crc32(chunk.subarray(checkedTo, at), crc);
  if (at + trailerBytes > chunk.length) {
    yield chunk.subarray(0, at);
    chunk = new Uint8Array(trailerBytes);
    at = 0;
  }
  writeU32(chunk, at, 0);
  const count = new DataView(chunk.buffer, chunk.byteOffset + at + 4, 8);
  count.setUint32(0, Math.floor(entryCount / 0x1_0000_0000));
  count.setUint32(4, entryCount >>> 0);
  writeU32(chunk, at + 12, crc);
  yield chunk.subarray(0, at + trailerBytes);
}

/** The running checksum of one stream format. */
interface StreamCheck {
  update(bytes: Uint8Array): void;
  digest32(): number;
}

function streamCheck(streamFormat: number): StreamCheck {
  if (streamFormat === 1) return new ContentHasher();
  let crc = 0;
  return {
    update: (bytes) => {
      crc = crc32(bytes, crc);
    },
    digest32: () => crc,
  };
}

/**
 * Parses a stream; throws CorruptFileError (before yielding the last entry is confirmed). An
 * entry's key and value may be views into the chunk that held it: a producer never reuses a
 * chunk's memory once yielded (backup-file.ts readRange, file-io.ts snapshotDataSync and the
 * sealed files' plaintext all yield fresh pieces), so a consumer may keep them.
 */
export function* decodeSnapshot(chunks: Iterable<Uint8Array>): Generator<KvEntry, void, undefined> {
  const input = new ChunkReader(chunks[Symbol.iterator]());
  const header = input.take(5);
  const streamFormat = header[4] as number;
  if (header.subarray(0, 4).some((byte, i) => byte !== magic[i])) {
    throw new CorruptFileError(streamName, 0, 'not a Baton snapshot (bad magic)');
  }
  if (streamFormat !== 1 && streamFormat !== format) {
    // Another version's file: name both, so the operator knows which Baton reads it.
    throw new CorruptFileError(streamName, 4, `snapshot format version ${streamFormat}: this version reads 1 and ${format}`);
  }
  const hasher = streamCheck(streamFormat);
  let entryCount = 0;
  for (;;) {
    // Most records lie whole inside one chunk: read in place, checked together with the records
    // before them in that chunk (one checksum call per run of records, not four per record).
    const whole = input.wholeRecord();
    if (whole !== null) {
      entryCount++;
      yield whole;
      continue;
    }
    input.flushChecked(hasher);
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
  /** The current chunk's bytes from here to `position` are whole records not yet checksummed. */
  private checkedTo = 0;
  offset = 0;

  constructor(private readonly chunks: Iterator<Uint8Array>) {}

  /**
   * The next record when it lies whole in the current chunk, else null with nothing consumed: the
   * end record, or a record cut by the chunk's end, is read through take(). Key and value are
   * views into the chunk, not copies (a quarter of a restore's time): decodeSnapshot's contract.
   */
  wholeRecord(): KvEntry | null {
    const chunk = this.chunk;
    const at = this.position;
    if (at + recordHeaderBytes > chunk.length) return null;
    const keyLength = readU32(chunk, at);
    if (keyLength === 0) return null;
    const valueAt = at + 4 + keyLength;
    if (valueAt + 4 > chunk.length) return null;
    const valueLength = readU32(chunk, valueAt);
    const end = valueAt + 4 + valueLength;
    if (end > chunk.length) return null;
    this.position = end;
    this.offset += end - at;
    return { key: chunk.subarray(at + 4, valueAt), value: chunk.subarray(valueAt + 4, end) };
  }

  /** Adds the whole records read in place since the last call to the stream's checksum. */
  flushChecked(hasher: StreamCheck): void {
    if (this.position > this.checkedTo) hasher.update(this.chunk.subarray(this.checkedTo, this.position));
    this.checkedTo = this.position;
  }

  private pull(): boolean {
    const next = this.chunks.next();
    if (next.done === true) return false;
    assert(this.checkedTo === this.position, 'records read in place are checksummed before the next chunk');
    this.chunk = next.value;
    this.position = 0;
    this.checkedTo = 0;
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
      this.checkedTo = this.position; // take()'s caller checksums what it returns
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
