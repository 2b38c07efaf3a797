// The pure parts of the WAL on synthetic buffers: frames round-trip and are only valid in their
// place in the CRC chain (a stale record from another chain or a recycled region never passes),
// the torn-tail window separates a crash's partial write from damage, and replay refuses index
// gaps and missing segments with the file and offset.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CorruptFileError } from '../../../src/base/errors.js';
import { encodeEntry, encodeHardState, encodeSegmentHeader } from '../../../src/wal/codec.js';
import { readFrame, replaySegments, scanSegment, writeFrame } from '../../../src/wal/index.js';
import { RecordType } from '../../../src/wal/index.js';
import { makeEntry } from './helpers.js';

interface Built {
  readonly bytes: Buffer;
  readonly offsets: number[];
  readonly lastCrc: number;
}

/** A segment image: header (seed 0), then entry records chained from it, zeros after. */
function buildSegment(options: {
  seq: number;
  firstIndex: number;
  chainSeed: number;
  indexes: readonly number[];
  sizeBytes?: number;
  writeBytesMax?: number;
}): Built {
  const bytes = Buffer.alloc(options.sizeBytes ?? 8192);
  const header = encodeSegmentHeader({
    seq: options.seq,
    firstIndex: options.firstIndex,
    chainSeed: options.chainSeed,
    writeBytesMax: options.writeBytesMax ?? 512,
    wrappedKey: null,
  });
  let crc = writeFrame(bytes, 0, { type: RecordType.segmentHeader, payload: header, seed: 0 });
  let offset = 16 + header.length;
  const offsets: number[] = [];
  crc = writeFrame(bytes, offset, {
    type: RecordType.hardState,
    payload: encodeHardState({ term: 1, vote: 0, commit: 0 }),
    seed: crc,
  });
  offset += 16 + 24;
  for (const index of options.indexes) {
    offsets.push(offset);
    const payload = encodeEntry(makeEntry(index, 1, 40));
    crc = writeFrame(bytes, offset, { type: RecordType.entry, payload, seed: crc });
    offset += 16 + payload.length;
  }
  offsets.push(offset);
  return { bytes, offsets, lastCrc: crc };
}

test('a frame is valid only with the CRC seed of its place in the chain', () => {
  const bytes = Buffer.alloc(256);
  const payload = Buffer.from('hello');
  const crc = writeFrame(bytes, 0, { type: RecordType.entry, payload, seed: 1234 });
  const good = readFrame(bytes, 0, 1234);
  assert.equal(good.kind, 'record');
  if (good.kind === 'record') assert.equal(good.crc, crc);
  assert.equal(readFrame(bytes, 0, 999).kind, 'bad');
  assert.equal(readFrame(bytes, 64, 1234).kind, 'zero');
});

test('records from an older chain in recycled space are not taken as new', () => {
  const current = buildSegment({ seq: 2, firstIndex: 1, chainSeed: 7, indexes: [1, 2, 3] });
  const stale = buildSegment({ seq: 1, firstIndex: 1, chainSeed: 0, indexes: [1, 2, 3, 4, 5, 6] });
  // The old segment's bytes past the current end, as if the region had been reused unzeroed.
  const end = current.offsets[3] ?? 0;
  const image = Buffer.from(current.bytes);
  stale.bytes.copy(image, end, end, stale.offsets[6]);
  const scanned = scanSegment(image, 'seg', true);
  assert.equal(scanned.records.length, 4); // hard state + entries 1..3
  assert.equal(scanned.endOffset, end);
  assert.ok(scanned.torn !== null, 'the stale bytes are a torn tail, never records');
});

test('damage within one write of the end is a torn tail; further is corruption', () => {
  const indexes = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
  const built = buildSegment({ seq: 1, firstIndex: 1, chainSeed: 0, indexes });
  const victim = built.offsets[8] ?? 0; // entry 9 of 10: within one write (512 bytes) of the end
  const tail = Buffer.from(built.bytes);
  tail[victim + 20] = (tail[victim + 20] ?? 0) ^ 1;
  const scanned = scanSegment(tail, 'seg', true);
  assert.equal(scanned.endOffset, victim);
  assert.ok(scanned.torn !== null);
  const early = Buffer.from(built.bytes);
  const first = built.offsets[0] ?? 0;
  early[first + 20] = (early[first + 20] ?? 0) ^ 1;
  assert.throws(() => scanSegment(early, 'seg', true), (error: unknown) => {
    assert.ok(error instanceof CorruptFileError);
    assert.equal(error.offset, first);
    return true;
  });
  // Any damage in a segment that is not the last one is corruption.
  assert.throws(() => scanSegment(tail, 'old-seg', false), CorruptFileError);
});

test('preallocated zeros after the last record are a clean end', () => {
  const built = buildSegment({ seq: 1, firstIndex: 1, chainSeed: 0, indexes: [1, 2] });
  for (const isLast of [true, false]) {
    const scanned = scanSegment(built.bytes, 'seg', isLast);
    assert.equal(scanned.torn, null);
    assert.equal(scanned.endOffset, built.offsets[2]);
  }
});

test('replay refuses an index gap, a missing segment and a broken chain', () => {
  const gap = buildSegment({ seq: 1, firstIndex: 1, chainSeed: 0, indexes: [1, 2, 4] });
  assert.throws(() => replaySegments([scanSegment(gap.bytes, 'a', true)]), (error: unknown) => {
    assert.ok(error instanceof CorruptFileError);
    assert.equal(error.path, 'a');
    assert.equal(error.offset, gap.offsets[2]);
    assert.match(error.reason, /index gap/);
    return true;
  });
  const first = buildSegment({ seq: 1, firstIndex: 1, chainSeed: 0, indexes: [1, 2] });
  const third = buildSegment({ seq: 3, firstIndex: 3, chainSeed: first.lastCrc, indexes: [3] });
  const missing = [scanSegment(first.bytes, 'a', false), scanSegment(third.bytes, 'c', true)];
  assert.throws(() => replaySegments(missing), /segment 2 is missing/);
  const wrongSeed = buildSegment({ seq: 2, firstIndex: 3, chainSeed: 12345, indexes: [3] });
  const broken = [scanSegment(first.bytes, 'a', false), scanSegment(wrongSeed.bytes, 'b', true)];
  assert.throws(() => replaySegments(broken), (error: unknown) => {
    assert.ok(error instanceof CorruptFileError);
    assert.equal(error.path, 'a');
    assert.equal(error.offset, first.offsets[2]);
    return true;
  });
  const ok = buildSegment({ seq: 2, firstIndex: 3, chainSeed: first.lastCrc, indexes: [3] });
  const chained = [scanSegment(first.bytes, 'a', false), scanSegment(ok.bytes, 'b', true)];
  const replay = replaySegments(chained);
  assert.deepEqual(replay.entries.map((entry) => entry.index), [1, 2, 3]);
});
