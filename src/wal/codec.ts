// Payload codecs for the four record types. Integers are written as two little-endian u32 halves
// so any safe integer (index, term, member id) round-trips without BigInt on the hot path.
import { assert } from '../base/assert.js';
import type { ConfState, Entry, EntryType, HardState, SnapshotMeta } from '../raft/index.js';
import type { SegmentHeader } from './types.js';

const segmentMagic = Buffer.from('BATONWAL', 'latin1');
const formatVersion = 1;
/** Version 2: an encrypted segment, its header followed by the wrapped data key (seal.ts). */
const encryptedVersion = 2;
/** Version 3: as version 2, each write's records sealed together (seal.ts). */
const writeSealedVersion = 3;
const entryFixedBytes = 17;

export function writeUint(target: Buffer, offset: number, value: number): void {
  // The message is built only on failure (this runs for every integer of every record).
  if (!(Number.isSafeInteger(value) && value >= 0)) assert(false, `non-negative safe integer: ${value}`);
  target.writeUInt32LE(value >>> 0, offset);
  target.writeUInt32LE(Math.floor(value / 0x1_0000_0000), offset + 4);
}

export function readUint(source: Buffer, offset: number): number {
  return source.readUInt32LE(offset) + source.readUInt32LE(offset + 4) * 0x1_0000_0000;
}

export function encodeEntry(entry: Entry): Buffer {
  const out = Buffer.allocUnsafe(entryFixedBytes + entry.data.length);
  writeUint(out, 0, entry.index);
  writeUint(out, 8, entry.term);
  out[16] = entry.type;
  out.set(entry.data, entryFixedBytes);
  return out;
}

/** Decodes an entry; `data` is copied so it does not pin the whole segment buffer. */
export function decodeEntry(payload: Buffer): Entry | string {
  if (payload.length < entryFixedBytes) return 'entry payload too short';
  const type = payload[16];
  if (type !== 0 && type !== 1) return `unknown entry type ${String(type)}`;
  return {
    index: readUint(payload, 0),
    term: readUint(payload, 8),
    type: type as EntryType,
    data: new Uint8Array(payload.subarray(entryFixedBytes)),
  };
}

export function encodeHardState(hardState: HardState): Buffer {
  const out = Buffer.allocUnsafe(24);
  writeUint(out, 0, hardState.term);
  writeUint(out, 8, hardState.vote);
  writeUint(out, 16, hardState.commit);
  return out;
}

export function decodeHardState(payload: Buffer): HardState | string {
  if (payload.length !== 24) return 'hard state payload has the wrong size';
  return { term: readUint(payload, 0), vote: readUint(payload, 8), commit: readUint(payload, 16) };
}

// Snapshot markers are rare, so their membership travels as JSON: easy to read in a hex dump.
export function encodeSnapshotMeta(meta: SnapshotMeta): Buffer {
  const json = JSON.stringify({ index: meta.index, term: meta.term, confState: meta.confState });
  return Buffer.from(json, 'utf8');
}

export function decodeSnapshotMeta(payload: Buffer): SnapshotMeta | string {
  try {
    const value: unknown = JSON.parse(payload.toString('utf8'));
    return isSnapshotMeta(value) ? value : 'snapshot marker has the wrong shape';
  } catch {
    return 'snapshot marker is not valid JSON';
  }
}

export function isSnapshotMeta(value: unknown): value is SnapshotMeta {
  if (typeof value !== 'object' || value === null) return false;
  const meta = value as Record<string, unknown>;
  return isCount(meta['index']) && isCount(meta['term']) && isConfState(meta['confState']);
}

function isConfState(value: unknown): value is ConfState {
  if (typeof value !== 'object' || value === null) return false;
  const conf = value as Record<string, unknown>;
  return ['voters', 'votersOutgoing', 'learners'].every((key) => {
    const list = conf[key];
    return Array.isArray(list) && list.every(isCount);
  });
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

export function encodeSegmentHeader(header: SegmentHeader): Buffer {
  const wrapped = header.wrappedKey;
  const out = Buffer.alloc(36 + (wrapped === null ? 0 : 4 + wrapped.length));
  segmentMagic.copy(out, 0);
  out.writeUInt32LE(wrapped === null ? formatVersion : header.sealsWrites === true ? writeSealedVersion : encryptedVersion, 8);
  if (wrapped !== null) {
    out.writeUInt32LE(wrapped.length, 36);
    wrapped.copy(out, 40);
  }
  writeUint(out, 12, header.seq);
  writeUint(out, 20, header.firstIndex);
  out.writeUInt32LE(header.chainSeed >>> 0, 28);
  out.writeUInt32LE(header.writeBytesMax, 32);
  return out;
}

export function decodeSegmentHeader(payload: Buffer): SegmentHeader | string {
  if (payload.length < 36) return 'segment header has the wrong size';
  if (!payload.subarray(0, 8).equals(segmentMagic)) return 'segment header has the wrong magic';
  const version = payload.readUInt32LE(8);
  if (version !== formatVersion && version !== encryptedVersion && version !== writeSealedVersion) {
    return `unsupported WAL format version ${version}: this build reads versions ${formatVersion} (plain), ` +
      `${encryptedVersion} and ${writeSealedVersion} (encrypted); a newer Baton wrote it`;
  }
  let wrappedKey: Buffer | null = null;
  if (version === formatVersion && payload.length !== 36) return 'segment header has the wrong size';
  if (version !== formatVersion) {
    if (payload.length < 40 || payload.length !== 40 + payload.readUInt32LE(36)) return 'encrypted segment header has the wrong size';
    wrappedKey = Buffer.from(payload.subarray(40));
  }
  return {
    wrappedKey,
    sealsWrites: version === writeSealedVersion,
    seq: readUint(payload, 12),
    firstIndex: readUint(payload, 20),
    chainSeed: payload.readUInt32LE(28),
    writeBytesMax: payload.readUInt32LE(32),
  };
}
