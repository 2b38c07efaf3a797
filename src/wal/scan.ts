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
import { openRecord, type WalKeys } from './seal.js';
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
  for (;;) {
    const frame = readFrame(bytes, offset, crc);
    if (frame.kind === 'record') {
      if (frame.type === RecordType.segmentHeader) {
        throw new CorruptFileError(path, offset, 'segment header in the middle of a segment');
      }
      if (frame.type === RecordType.batch && frame.payload.length === 4) {
        batchEnd = offset + frame.payload.readUInt32LE(0);
      }
      records.push({ type: frame.type, payload: key === null ? frame.payload : openSealed(key, frame, path, offset), offset, end: frame.end });
      offset = frame.end;
      crc = frame.crc;
      continue;
    }
    const nonZero = lastNonZero(bytes, offset);
    const base = { path, header, records, endOffset: offset, lastCrc: crc, key };
    if (nonZero < 0) return { ...base, torn: null }; // clean end: only preallocated zeros follow
    const reason = frame.kind === 'zero' ? 'zero-filled gap before more data' : frame.reason;
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

/** A record whose CRC passed but whose seal does not: altered along with its checksum. */
function openSealed(key: Buffer, frame: { type: RecordType; payload: Buffer }, path: string, offset: number): Buffer {
  if (frame.type === RecordType.batch) return frame.payload;
  const plain = openRecord(key, frame.payload);
  if (plain === null) throw new CorruptFileError(path, offset, 'record does not authenticate (its checksum matches: altered on purpose?)');
  return plain;
}
