// Turning queued records into disk operations for one group commit. Pure: the planner decides
// the layout (offsets, CRC chain, rollovers, restated state); the executor only performs it.
// Invariant: a plan writes at most writeBytesMax bytes into any one segment (a lone larger record
// excepted) and syncs a segment before the next one is created, so a crash can only tear the
// last write of the last segment: recovery's torn-tail window depends on it.
import { join } from 'node:path';
import { assert } from '../base/assert.js';
import type { HardState, SnapshotMeta } from '../raft/index.js';
import { encodeHardState, encodeSegmentHeader, encodeSnapshotMeta } from './codec.js';
import { frameBytes, writeFrame } from './record.js';
import { segmentFileName, tmpSuffix } from './segment-name.js';
import { RecordType } from './types.js';
import { sealRecord, sealWrite, writeSealBytes, type WalKeys } from './seal.js';
import type { PendingRecord, WalOp } from './types.js';

export interface SegmentCursor {
  readonly seq: number;
  readonly path: string;
  readonly firstIndex: number;
  /** Where the next record goes. Invariant: offset <= sizeBytes. */
  readonly offset: number;
  readonly sizeBytes: number;
  /** CRC of the last record written (the chain seed). */
  readonly crc: number;
  /** The cap recorded in this segment's header: recovery sizes its torn-write window by it. */
  readonly writeBytesMax: number;
  /** The segment's data key when it is encrypted: every record but batch records is sealed with it. */
  readonly key: Buffer | null;
  /** An encrypted segment of format 3: each write's records sealed together (seal.ts). */
  readonly sealsWrites: boolean;
}

export interface LogState {
  readonly lastIndex: number;
  readonly hardState: HardState;
  readonly snapshot: SnapshotMeta | null;
}

export interface PlanConfig {
  readonly walDir: string;
  readonly segmentBytes: number;
  readonly writeBytesMax: number;
  /** Encryption at rest: new segments get a data key of their own (seal.ts); null = off. */
  readonly keys: WalKeys | null;
}

export interface FlushPlan {
  readonly ops: WalOp[];
  /** How many of the queued records this plan writes (a prefix; at least one). */
  readonly taken: number;
  readonly cursor: SegmentCursor;
  /** Segments this plan creates, oldest first. */
  readonly created: readonly SegmentCursor[];
  /** Whether the first new segment uses the prepared spare file. */
  readonly usedSpare: boolean;
  /** Record bytes the plan writes (counted here: write buffers move to the worker). */
  readonly recordBytes: number;
}

/** A batch record: the write's length, and in a write-sealed segment its nonce and tag. */
function batchFrameBytes(sealsWrites: boolean): number {
  return frameBytes(4 + (sealsWrites ? writeSealBytes : 0));
}

interface Frame {
  readonly type: RecordType;
  readonly payload: Uint8Array;
}

export function planFlush(
  start: SegmentCursor,
  records: readonly PendingRecord[],
  before: LogState,
  config: PlanConfig,
  sparePath: string | null = null,
): FlushPlan {
  assert(records.length > 0, 'a flush has records');
  let spare = sparePath;
  // A segment opened with an older, smaller cap keeps it: its header is what recovery trusts.
  const writeBytesMax = Math.min(config.writeBytesMax, start.writeBytesMax);
  const ops: WalOp[] = [];
  const created: SegmentCursor[] = [];
  let cursor = start;
  let state = before;
  // With keys every segment this writes to seals its writes whole (wal.ts rolls any other tail
  // over); without, every segment is plaintext (an encrypted one does not open without keys).
  const sealsWrites = config.keys !== null;
  assert(start.key === null ? !sealsWrites : start.sealsWrites, 'writes go to a segment of the form this configuration writes');
  const batchBytes = batchFrameBytes(sealsWrites);
  let part: Frame[] = [];
  let partBytes = batchBytes;
  let totalBytes = batchBytes;
  let taken = 0;
  for (const record of records) {
    // A sealed write adds no bytes per record: its nonce and tag are in the batch record.
    const size = frameBytes(record.payload.length);
    if (taken > 0 && totalBytes + size > writeBytesMax) break;
    if (cursor.offset + partBytes + size > cursor.sizeBytes) {
      if (part.length > 0) cursor = emitWrite(ops, cursor, part);
      ops.push({ type: 'close', seq: cursor.seq });
      const next = createSegment(cursor, state, config, size, spare);
      if (next.op.type === 'create' && next.op.sparePath !== null) spare = null;
      ops.push(next.op);
      cursor = next.cursor;
      created.push(cursor);
      part = [];
      partBytes = batchBytes;
      totalBytes += batchBytes;
    }
    part.push({ type: record.frameType, payload: record.payload });
    partBytes += size;
    totalBytes += size;
    taken++;
    state = stateAfter(record);
  }
  cursor = emitWrite(ops, cursor, part);
  assert(taken > 0 && cursor.offset <= cursor.sizeBytes);
  const usedSpare = sparePath !== null && spare === null;
  return { ops, taken, cursor, created, usedSpare, recordBytes: totalBytes };
}

export function stateAfter(record: PendingRecord): LogState {
  return {
    lastIndex: record.lastIndexAfter,
    hardState: record.hardStateAfter,
    snapshot: record.snapshotAfter,
  };
}

/**
 * One write plus its fdatasync; the buffer owns its memory so it can move to the worker. A batch
 * record opens the write and gives its length: recovery then knows exactly how far the last
 * write (the only one a crash can tear) reaches, and calls any damage outside it corruption.
 */
function emitWrite(ops: WalOp[], cursor: SegmentCursor, plain: readonly Frame[]): SegmentCursor {
  assert((cursor.key !== null) === cursor.sealsWrites, 'this build writes plaintext or write-sealed segments');
  const sealed = cursor.key === null ? null : sealWrite(cursor.key, plain);
  const frames = sealed === null ? plain : plain.map((frame, i) => ({ type: frame.type, payload: sealed.payloads[i] as Buffer }));
  let bytes = batchFrameBytes(sealed !== null);
  for (const frame of frames) bytes += frameBytes(frame.payload.length);
  const batchPayload = Buffer.alloc(4 + (sealed === null ? 0 : writeSealBytes));
  batchPayload.writeUInt32LE(bytes, 0);
  sealed?.seal.copy(batchPayload, 4);
  const batch: Frame = { type: RecordType.batch, payload: batchPayload };
  const encoded = encodeFrames([batch, ...frames], cursor.crc);
  assert(encoded.data.length === bytes, 'the batch record states its write length');
  assert(cursor.offset + encoded.data.length <= cursor.sizeBytes, 'write stays inside its segment');
  ops.push({ type: 'write', seq: cursor.seq, offset: cursor.offset, data: encoded.data });
  ops.push({ type: 'sync', seq: cursor.seq });
  return { ...cursor, offset: cursor.offset + encoded.data.length, crc: encoded.crc };
}

/** Records sealed one by one: what a new segment restates before its first write (seal.ts). */
function sealFrames(key: Buffer | null, frames: readonly Frame[]): readonly Frame[] {
  if (key === null) return frames;
  return frames.map((frame) => ({ type: frame.type, payload: sealRecord(key, frame.payload) }));
}

function encodeFrames(frames: readonly Frame[], seed: number): { data: Buffer; crc: number } {
  let bytes = 0;
  for (const frame of frames) bytes += frameBytes(frame.payload.length);
  const data = Buffer.allocUnsafeSlow(bytes);
  let offset = 0;
  let crc = seed;
  for (const frame of frames) {
    crc = writeFrame(data, offset, { type: frame.type, payload: frame.payload, seed: crc });
    offset += frameBytes(frame.payload.length);
  }
  assert(offset === bytes);
  return { data, crc };
}

/**
 * The next segment: a header chained to the previous segment's last CRC, then the hard state and
 * snapshot marker restated, so older segments can be released without losing either.
 */
export function createSegment(
  previous: Pick<SegmentCursor, 'seq' | 'crc'>,
  state: LogState,
  config: PlanConfig,
  firstRecordBytes: number,
  spare: string | null = null,
): { op: WalOp; cursor: SegmentCursor } {
  const seq = previous.seq + 1;
  const firstIndex = state.lastIndex + 1;
  // A fresh data key per segment (never reused after a restart: a reopened segment keeps its own).
  const segmentKey = config.keys === null ? null : config.keys.newKey();
  const header = encodeSegmentHeader({
    seq,
    firstIndex,
    chainSeed: previous.crc,
    writeBytesMax: config.writeBytesMax,
    wrappedKey: segmentKey === null ? null : segmentKey.wrapped,
    sealsWrites: segmentKey !== null,
  });
  const frames: Frame[] = [
    { type: RecordType.segmentHeader, payload: header },
    { type: RecordType.hardState, payload: encodeHardState(state.hardState) },
  ];
  if (state.snapshot !== null) {
    frames.push({ type: RecordType.snapshot, payload: encodeSnapshotMeta(state.snapshot) });
  }
  // The header's own CRC starts the chain from zero; it carries the previous CRC as data.
  const headerFrame = encodeFrames(frames.slice(0, 1), 0);
  const rest = encodeFrames(sealFrames(segmentKey?.key ?? null, frames.slice(1)), headerFrame.crc);
  const prefix = Buffer.concat([headerFrame.data, rest.data]);
  const needed = prefix.length + firstRecordBytes;
  const sizeBytes = Math.max(config.segmentBytes, Math.ceil(needed / 4096) * 4096);
  const path = join(config.walDir, segmentFileName(seq, firstIndex));
  const tmpPath = join(config.walDir, segmentFileName(seq, firstIndex) + tmpSuffix);
  // The spare has exactly segmentBytes: an oversized segment is filled the slow way.
  const sparePath = sizeBytes === config.segmentBytes ? spare : null;
  const op: WalOp = { type: 'create', seq, path, tmpPath, sizeBytes, sparePath, prefix };
  const offset = prefix.length;
  const writeBytesMax = config.writeBytesMax;
  const cursor = {
    seq, path, firstIndex, offset, sizeBytes, crc: rest.crc, writeBytesMax, key: segmentKey?.key ?? null, sealsWrites: segmentKey !== null,
  };
  return { op, cursor };
}
