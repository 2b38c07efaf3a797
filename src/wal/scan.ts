// Scanning one segment file's bytes into records. Pure: recover.ts does the reading. The hard
// question is what a bad record means. Group commit keeps one write+fdatasync in flight and caps
// it at the segment header's writeBytesMax, so a crash can only tear the last write of the last
// segment, and bytes it never reached are still zero (segments are preallocated with zeros).
// A bad record is therefore a torn tail only when it is in the last segment and nothing non-zero
// lies past the write it belongs to: the batch record that opens each write gives its end, and
// writeBytesMax bounds a write whose batch record is itself unreadable. Anything else is damage
// and stops the node.
import { CorruptFileError } from '../base/errors.js';
import { decodeSegmentHeader } from './codec.js';
import { lastNonZero, readFrame } from './record.js';
import { RecordType } from './types.js';
import { openRecord, openWrite, writeSealBytes, type WalKeys } from './seal.js';
import { ConfigError } from '../base/config-error.js';
import type { SegmentHeader } from './types.js';

export interface ScannedRecord {
  readonly type: RecordType;
  readonly payload: Buffer;
  readonly offset: number;
  /** Where the record ends on disk (its sealed bytes, in an encrypted segment). */
  readonly end: number;
}

export interface ScannedSegment {
  readonly path: string;
  readonly header: SegmentHeader;
  /** Records after the segment header, in file order. */
  readonly records: readonly ScannedRecord[];
  /** Where the next record goes: the end of the last valid record. */
  readonly endOffset: number;
  /** CRC of the last valid record (the seed of the next one). */
  readonly lastCrc: number;
  /** The segment's data key (encrypted segments; appends to the last one use it). */
  readonly key: Buffer | null;
  /** A torn tail found at `endOffset` (only ever in the last segment). */
  readonly torn: { readonly reason: string; readonly lastNonZero: number } | null;
}

export function scanSegment(bytes: Buffer, path: string, isLast: boolean, keys: WalKeys | null = null): ScannedSegment {
  const first = readFrame(bytes, 0, 0);
  if (first.kind !== 'record' || first.type !== RecordType.segmentHeader) {
    const reason = bytes.length === 0 ? 'empty segment file' : 'missing or damaged segment header';
    throw new CorruptFileError(path, 0, reason);
  }
  const header = decodeSegmentHeader(first.payload);
  if (typeof header === 'string') throw new CorruptFileError(path, 0, header);
  // An encrypted segment: its key is unwrapped first, so a wrong key is told apart from damage.
  const key = header.wrappedKey === null ? null : openSegmentKey(header.wrappedKey, path, keys);
  const records: ScannedRecord[] = [];
  let offset = first.end;
  let crc = first.crc;
  let batchEnd = -1; // where the write that holds the latest records ends
  // A write-sealed segment (format 3): the write being read, held back until it is whole and
  // opens; a torn one is dropped whole, so the segment ends where it began.
  const sealsWrites = key !== null && header.sealsWrites === true;
  let write: { start: number; crcBefore: number; batch: ScannedRecord; seal: Buffer; records: ScannedRecord[] } | null = null;
  for (;;) {
    const frame = readFrame(bytes, offset, crc);
    if (frame.kind === 'record') {
      if (frame.type === RecordType.segmentHeader) {
        throw new CorruptFileError(path, offset, 'segment header in the middle of a segment');
      }
      const batchLength = sealsWrites ? 4 + writeSealBytes : 4;
      if (frame.type === RecordType.batch && frame.payload.length === batchLength) {
        if (write !== null) throw new CorruptFileError(path, offset, 'a write starts inside another write');
        batchEnd = offset + frame.payload.readUInt32LE(0);
      }
      const scanned = { type: frame.type, payload: frame.payload, offset, end: frame.end };
      if (sealsWrites && frame.type === RecordType.batch) {
        if (frame.payload.length !== batchLength) throw new CorruptFileError(path, offset, 'batch record of a sealed write has the wrong size');
        write = { start: offset, crcBefore: crc, batch: scanned, seal: frame.payload.subarray(4), records: [] };
      } else if (write !== null) {
        write.records.push(scanned);
      } else {
        records.push(key === null ? scanned : { ...scanned, payload: openSealed(key, frame, path, offset) });
      }
      offset = frame.end;
      crc = frame.crc;
      if (write !== null && offset >= batchEnd) {
        if (offset !== batchEnd) throw new CorruptFileError(path, write.start, 'a sealed write\'s records overrun its stated length');
        records.push(write.batch, ...openSealedWrite(key as Buffer, write, path));
        write = null;
      }
      continue;
    }
    // Inside a sealed write, none of its records was acknowledged (its fdatasync never
    // returned): torn, the segment ends where the write began. Damage is named where it is.
    const end = write === null ? { offset, crc } : { offset: write.start, crc: write.crcBefore };
    const nonZero = lastNonZero(bytes, end.offset);
    const base = { path, header, records, endOffset: end.offset, lastCrc: end.crc, key };
    if (nonZero < 0) return { ...base, torn: null }; // clean end: only preallocated zeros follow
    const reason = frame.kind !== 'zero' ? frame.reason : write !== null ? 'a sealed write cut short' : 'zero-filled gap before more data';
    if (!isLast) throw new CorruptFileError(path, offset, `${reason} (not the last segment)`);
    // Inside a write whose batch record was read, that write is the window; at a write's start
    // (its batch record is what failed), the window is the largest write the writer makes.
    const declared = frame.kind === 'bad' && frame.declaredEnd !== null ? frame.declaredEnd : 0;
    const windowEnd =
      offset < batchEnd ? batchEnd : Math.max(offset + header.writeBytesMax, declared);
    if (nonZero >= windowEnd) {
      const where = `data at byte ${nonZero} lies beyond the last write's reach`;
      throw new CorruptFileError(path, offset, `${reason}; ${where}`);
    }
    return { ...base, torn: { reason, lastNonZero: nonZero } };
  }
}

function openSegmentKey(wrapped: Buffer, path: string, keys: WalKeys | null): Buffer {
  if (keys === null) throw new ConfigError(`${path} is encrypted; start with --encryption-key-file or --encryption-key-command`);
  return keys.openKey(wrapped, path);
}

/** A whole write whose CRCs passed; its records opened, or refused if the write does not authenticate. */
function openSealedWrite(key: Buffer, write: { start: number; seal: Buffer; records: readonly ScannedRecord[] }, path: string): ScannedRecord[] {
  const plains = openWrite(key, write.seal, write.records);
  if (plains === null) throw new CorruptFileError(path, write.start, 'write does not authenticate (its checksums match: altered on purpose?)');
  return write.records.map((record, i) => ({ ...record, payload: plains[i] as Buffer }));
}

/** A record whose CRC passed but whose seal does not: altered along with its checksum. */
function openSealed(key: Buffer, frame: { type: RecordType; payload: Buffer }, path: string, offset: number): Buffer {
  if (frame.type === RecordType.batch) return frame.payload;
  const plain = openRecord(key, frame.payload);
  if (plain === null) throw new CorruptFileError(path, offset, 'record does not authenticate (its checksum matches: altered on purpose?)');
  return plain;
}
