// Damage on disk: a truncated last segment recovers exactly the records before the cut (with one
// log line), while a flipped byte, a zeroed range, a truncated older segment, a missing segment,
// an empty or zero-filled segment, or an index gap all refuse to start with a CorruptFileError
// that names the damaged file and the byte offset of the damaged record.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CorruptFileError } from '../../../src/base/errors.js';
import { SeededRandom, randomInt } from '../../../src/base/random.js';
import type { Entry } from '../../../src/raft/index.js';
import { RecordType, Wal, scanSegment } from '../../../src/wal/index.js';
import type { ScannedRecord } from '../../../src/wal/index.js';
import { MemoryLogger, entryKey, makeEntry, withTempDir } from './helpers.js';
import { keyringOf, segmentKeysOf } from '../../../src/keys/index.js';

// damage-encrypted.test.ts runs every case again on encrypted segments (docs/design/encryption.md).
const keys = process.env['BATON_TEST_WAL_ENCRYPTED'] === '1' ? segmentKeysOf(keyringOf([Buffer.alloc(32, 7)])) : null;
const sizes = { segmentBytes: 16 * 1024, writeBytesMax: 1024, executor: 'inline' as const, keys };

async function writeLog(dir: string, count: number, seed: bigint): Promise<Entry[]> {
  const random = new SeededRandom(seed);
  const { wal } = await Wal.open(dir, sizes);
  const entries: Entry[] = [];
  const saves: Promise<void>[] = [];
  for (let index = 1; index <= count; index++) {
    const entry = makeEntry(index, 1, randomInt(random, 20, 300));
    entries.push(entry);
    // One entry per save, eight saves per group commit: many records, few fdatasyncs.
    saves.push(wal.save([entry], null));
    if (saves.length === 8) await Promise.all(saves.splice(0));
  }
  await Promise.all(saves);
  await wal.close();
  return entries;
}

function segmentPaths(dir: string): string[] {
  const names = readdirSync(join(dir, 'wal')).filter((name) => name.endsWith('.wal'));
  return names.sort().map((name) => join(dir, 'wal', name));
}

function recordsOf(path: string, isLast: boolean): readonly ScannedRecord[] {
  return scanSegment(readFileSync(path), path, isLast, keys).records;
}

/** Where a record's data is whole on disk: its own end, or in an encrypted WAL its write's end. */
function keptEnd(records: readonly ScannedRecord[], record: ScannedRecord): number {
  if (keys === null) return record.end;
  const batch = records.filter((other) => other.type === RecordType.batch && other.offset <= record.offset).at(-1);
  // Records before the first write (a segment's restated state) are sealed one by one.
  return batch === undefined ? record.end : batch.offset + batch.payload.readUInt32LE(0);
}

/** Start offset of the record containing byte `at` (0 for the segment header). */
function recordStart(records: readonly ScannedRecord[], at: number): number {
  let start = 0;
  for (const record of records) if (record.offset <= at) start = record.offset;
  return start;
}

async function expectCorrupt(dir: string, path: string, offset: number | null): Promise<void> {
  const opening = Wal.open(dir, { ...sizes, logger: new MemoryLogger() });
  await assert.rejects(opening, (error: unknown) => {
    assert.ok(error instanceof CorruptFileError, `expected CorruptFileError, got ${String(error)}`);
    assert.equal(error.path, path);
    if (offset !== null) assert.equal(error.offset, offset, error.message);
    assert.match(error.message, new RegExp(`${path}.*offset ${error.offset}`));
    return true;
  });
}

test('a last segment cut anywhere recovers exactly the records before the cut', async () => {
  const random = new SeededRandom(41n);
  for (let round = 0; round < 12; round++) {
    await withTempDir(async (dir) => {
      const entries = await writeLog(dir, 120, BigInt(round));
      const paths = segmentPaths(dir);
      const last = paths[paths.length - 1] ?? '';
      const records = recordsOf(last, true);
      const entryRecords = records.filter((record) => record.type === RecordType.entry).length;
      const firstInLast = entries.length - entryRecords + 1;
      const lastRecord = records[records.length - 1];
      assert.ok(lastRecord !== undefined);
      const end = lastRecord.end;
      const cut = randomInt(random, (records[0]?.offset ?? 0) + 1, end);
      truncateSync(last, cut);
      // Plaintext records stand alone; a sealed write's records are kept only with the whole write
      // (seal.ts: a write opens whole or not at all, and a torn one was never acknowledged).
      const kept = records.filter((record) => keptEnd(records, record) <= cut);
      const keptEntries = kept.filter((record) => record.type === RecordType.entry).length;
      const logger = new MemoryLogger();
      const { wal, recovered } = await Wal.open(dir, { ...sizes, logger });
      const expectedCount = firstInLast - 1 + keptEntries;
      const expected = entries.slice(0, expectedCount);
      assert.deepEqual(recovered.entries.map(entryKey), expected.map(entryKey));
      const cleanCut = cut === end || records.some((record) => record.offset === cut && (keys === null || record.type === RecordType.batch));
      assert.equal(logger.lines.length, cleanCut ? 0 : 1, logger.lines.join('\n'));
      const logLine = new RegExp(`truncated torn tail of ${last} at byte offset \\d+`);
      if (!cleanCut) assert.match(logger.lines[0] ?? '', logLine);
      // The WAL keeps working after the repair, and a second reopen is clean.
      await wal.save([makeEntry(expectedCount + 1, 1)], null);
      await wal.close();
      const again = await Wal.open(dir, { ...sizes, logger: new MemoryLogger() });
      assert.equal(again.recovered.entries.length, expectedCount + 1);
      await again.wal.close();
    });
  }
});

test('a flipped byte inside the records refuses to start, naming file and offset', async () => {
  const random = new SeededRandom(42n);
  for (let round = 0; round < 16; round++) {
    await withTempDir(async (dir) => {
      await writeLog(dir, 150, 7n);
      const paths = segmentPaths(dir);
      const k = randomInt(random, 0, paths.length - 1);
      const path = paths[k] ?? '';
      const isLast = k === paths.length - 1;
      const records = recordsOf(path, isLast);
      const lastRecord = records[records.length - 1];
      assert.ok(lastRecord !== undefined);
      // In the last segment, damage inside the last write is indistinguishable from a torn
      // write; anywhere before it (or anywhere in an older segment) is corruption. A damaged
      // batch record itself only gives the coarser window of writeBytesMax.
      const recordsEnd = lastRecord.end;
      const lastBatch = records.filter((record) => record.type === RecordType.batch).at(-1);
      const limit = isLast ? (lastBatch?.offset ?? 0) - 1 : recordsEnd - 1;
      if (limit <= 0) return;
      const at = randomInt(random, 0, limit);
      const hit = records.find((record) => record.offset === recordStart(records, at));
      const reach = (hit?.offset ?? 0) + sizes.writeBytesMax;
      const coarse = hit?.type === RecordType.batch && reach > recordsEnd;
      if (isLast && coarse) return;
      const bytes = readFileSync(path);
      bytes[at] = (bytes[at] ?? 0) ^ (1 << randomInt(random, 0, 7));
      writeFileSync(path, bytes);
      await expectCorrupt(dir, path, recordStart(records, at));
    });
  }
});

test('damage just before the last write is corruption, not a torn tail', async () => {
  await withTempDir(async (dir) => {
    await writeLog(dir, 150, 13n);
    // A last write of a few dozen bytes: far less than writeBytesMax past the damage below.
    const { wal } = await Wal.open(dir, sizes);
    await wal.save([makeEntry(151, 1, 10)], null);
    await wal.close();
    const paths = segmentPaths(dir);
    const path = paths[paths.length - 1] ?? '';
    const records = recordsOf(path, true);
    const lastBatch = records.filter((record) => record.type === RecordType.batch).at(-1);
    assert.ok(lastBatch !== undefined);
    const victim = records.filter((record) => record.offset < lastBatch.offset).at(-1);
    assert.ok(victim !== undefined && victim.type === RecordType.entry);
    // Well within writeBytesMax of the end: only the batch records tell this from a crash.
    const bytes = readFileSync(path);
    bytes[victim.offset + 20] = (bytes[victim.offset + 20] ?? 0) ^ 0x10;
    writeFileSync(path, bytes);
    await expectCorrupt(dir, path, victim.offset);
  });
});

test('a zero-filled range mid-segment is damage, not preallocated space', async () => {
  await withTempDir(async (dir) => {
    await writeLog(dir, 150, 8n);
    const paths = segmentPaths(dir);
    const path = paths[1] ?? '';
    const records = recordsOf(path, false);
    const victim = records[5];
    assert.ok(victim !== undefined);
    const bytes = readFileSync(path);
    bytes.fill(0, victim.offset, victim.offset + 40);
    writeFileSync(path, bytes);
    await expectCorrupt(dir, path, victim.offset);
  });
});

test('a truncated older segment is damage (the checksum chain breaks)', async () => {
  const random = new SeededRandom(43n);
  for (let round = 0; round < 6; round++) {
    await withTempDir(async (dir) => {
      await writeLog(dir, 150, 9n);
      const paths = segmentPaths(dir);
      const path = paths[randomInt(random, 0, paths.length - 2)] ?? '';
      const records = recordsOf(path, false);
      const lastRecord = records[records.length - 1];
      assert.ok(lastRecord !== undefined);
      const recordsEnd = lastRecord.end;
      truncateSync(path, randomInt(random, (records[0]?.offset ?? 0) + 1, recordsEnd - 1));
      await expectCorrupt(dir, path, null);
    });
  }
});

test('a missing, empty or zero-filled segment is damage', async () => {
  await withTempDir(async (dir) => {
    await writeLog(dir, 300, 10n);
    const paths = segmentPaths(dir);
    assert.ok(paths.length >= 3);
    rmSync(paths[1] ?? '');
    await expectCorrupt(dir, paths[2] ?? '', 0);
  });
  for (const content of [Buffer.alloc(0), Buffer.alloc(16 * 1024)]) {
    for (const which of ['middle', 'last'] as const) {
      await withTempDir(async (dir) => {
        await writeLog(dir, 150, 11n);
        const paths = segmentPaths(dir);
        const path = (which === 'last' ? paths[paths.length - 1] : paths[1]) ?? '';
        writeFileSync(path, content);
        await expectCorrupt(dir, path, 0);
      });
    }
  }
});

test('a leftover temp segment is removed with a log line', async () => {
  await withTempDir(async (dir) => {
    await writeLog(dir, 3, 12n);
    writeFileSync(join(dir, 'wal', '0000000000000009-0000000000000004.wal.tmp'), Buffer.alloc(100));
    const logger = new MemoryLogger();
    const { wal, recovered } = await Wal.open(dir, { ...sizes, logger });
    assert.equal(recovered.entries.length, 3);
    assert.equal(logger.lines.length, 1);
    assert.match(logger.lines[0] ?? '', /removing unfinished segment/);
    await wal.close();
  });
});
