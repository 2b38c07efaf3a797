// The WAL's contract with the Raft driver, on a real disk: saves survive a reopen, a suffix
// overwrite replaces later entries, snapshot markers move the log start, released segments go
// away without losing anything above the snapshot, and concurrent saves share fdatasyncs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { CorruptFileError } from '../../../src/base/errors.js';
import { Wal } from '../../../src/wal/index.js';
import type { SnapshotMeta } from '../../../src/raft/index.js';
import { MemoryLogger, entryKey, makeEntry, withTempDir } from './helpers.js';

const conf = { voters: [1, 2, 3], votersOutgoing: [], learners: [] };
const small = { segmentBytes: 16 * 1024, writeBytesMax: 4 * 1024 };

test('a fresh WAL recovers empty, and saves survive a reopen', async () => {
  await withTempDir(async (dir) => {
    const first = await Wal.open(dir, small);
    assert.deepEqual(first.recovered.hardState, { term: 0, vote: 0, commit: 0 });
    assert.equal(first.recovered.snapshotMeta, null);
    assert.equal(first.recovered.entries.length, 0);
    const entries = [1, 2, 3].map((i) => makeEntry(i, 1));
    await first.wal.save(entries, { term: 1, vote: 2, commit: 1 });
    await first.wal.close();
    const second = await Wal.open(dir, small);
    assert.deepEqual(second.recovered.hardState, { term: 1, vote: 2, commit: 1 });
    assert.deepEqual(second.recovered.entries.map(entryKey), entries.map(entryKey));
    assert.equal(second.recovered.truncated, null);
    await second.wal.close();
  });
});

test('an entry at an existing index replaces it and every later one', async () => {
  await withTempDir(async (dir) => {
    const { wal } = await Wal.open(dir, small);
    await wal.save([1, 2, 3, 4, 5].map((i) => makeEntry(i, 1)), null);
    await wal.save([makeEntry(3, 2), makeEntry(4, 2)], { term: 2, vote: 1, commit: 2 });
    await wal.close();
    const again = await Wal.open(dir, small);
    const expected = [makeEntry(1, 1), makeEntry(2, 1), makeEntry(3, 2), makeEntry(4, 2)];
    assert.deepEqual(again.recovered.entries.map(entryKey), expected.map(entryKey));
    assert.equal(again.wal.lastIndex, 4);
    await again.wal.close();
  });
});

test('segments roll over, and release keeps everything after the snapshot', async () => {
  await withTempDir(async (dir) => {
    const { wal } = await Wal.open(dir, small);
    for (let i = 1; i <= 200; i++) {
      await wal.save([makeEntry(i, 1, 200)], { term: 1, vote: 1, commit: i });
    }
    const segmentCount = (): number =>
      readdirSync(join(dir, 'wal')).filter((name) => name.endsWith('.wal')).length;
    const before = segmentCount();
    assert.ok(before > 3, `several segments (${before})`);
    // Rollovers after the first use the segment zero-filled ahead of time.
    assert.ok(wal.stats().sparesUsed >= 1, JSON.stringify(wal.stats()));
    const meta: SnapshotMeta = { index: 150, term: 1, confState: conf };
    await wal.markSnapshot(meta);
    const released = await wal.releaseBefore(150);
    assert.ok(released > 0, 'some segments released');
    assert.equal(segmentCount(), before - released);
    await wal.close();
    const again = await Wal.open(dir, small);
    assert.deepEqual(again.recovered.snapshotMeta, meta);
    assert.deepEqual(
      again.recovered.entries.map(entryKey),
      Array.from({ length: 50 }, (_, k) => entryKey(makeEntry(151 + k, 1, 200))),
    );
    assert.equal(again.recovered.hardState.commit, 200);
    await again.wal.close();
  });
});

test('a snapshot from a leader with a different term replaces the log', async () => {
  await withTempDir(async (dir) => {
    const { wal } = await Wal.open(dir, small);
    await wal.save([1, 2, 3, 4].map((i) => makeEntry(i, 1)), null);
    await wal.markSnapshot({ index: 3, term: 2, confState: conf });
    assert.equal(wal.lastIndex, 3);
    await wal.save([makeEntry(4, 2)], { term: 2, vote: 0, commit: 3 });
    await wal.close();
    const again = await Wal.open(dir, small);
    assert.deepEqual(again.recovered.entries.map(entryKey), [entryKey(makeEntry(4, 2))]);
    await again.wal.close();
  });
});

test('concurrent saves share fdatasyncs (group commit)', async () => {
  await withTempDir(async (dir) => {
    const { wal } = await Wal.open(dir, { segmentBytes: 1024 * 1024 });
    let next = 1;
    const appender = async (): Promise<void> => {
      for (let k = 0; k < 20; k++) {
        const index = next++;
        await wal.save([makeEntry(index, 1, 256)], null);
      }
    };
    await Promise.all(Array.from({ length: 32 }, appender));
    const stats = wal.stats();
    assert.equal(stats.records, 640);
    // Each write opens with a 20-byte batch record (no rollover in a 1 MiB segment).
    assert.equal(stats.bytesWritten, 640 * (16 + 17 + 256) + stats.syncs * 20);
    assert.ok(stats.syncs * 4 < stats.records, `${stats.records} records in ${stats.syncs} syncs`);
    await wal.close();
    const again = await Wal.open(dir, { segmentBytes: 1024 * 1024 });
    assert.equal(again.recovered.entries.length, 640);
    await again.wal.close();
  });
});

test('a record larger than a segment gets a segment of its own', async () => {
  await withTempDir(async (dir) => {
    const logger = new MemoryLogger();
    const { wal } = await Wal.open(dir, { ...small, logger });
    await wal.save([makeEntry(1, 1, 100), makeEntry(2, 1, 40_000), makeEntry(3, 1, 100)], null);
    await wal.close();
    const again = await Wal.open(dir, { ...small, logger });
    assert.deepEqual(
      again.recovered.entries.map(entryKey),
      [makeEntry(1, 1, 100), makeEntry(2, 1, 40_000), makeEntry(3, 1, 100)].map(entryKey),
    );
    assert.deepEqual(logger.lines, []);
    await again.wal.close();
  });
});

test('entries can be recovered from an older snapshot while the log still holds them', async () => {
  await withTempDir(async (dir) => {
    const { wal } = await Wal.open(dir, small);
    await wal.save([1, 2, 3, 4, 5, 6].map((i) => makeEntry(i, 1)), { term: 1, vote: 1, commit: 6 });
    await wal.markSnapshot({ index: 2, term: 1, confState: conf });
    await wal.markSnapshot({ index: 4, term: 1, confState: conf });
    await wal.close();
    const keys = (from: number): string[] =>
      [1, 2, 3, 4, 5, 6].filter((i) => i > from).map((i) => entryKey(makeEntry(i, 1)));
    const latest = await Wal.open(dir, small);
    assert.deepEqual(latest.recovered.entries.map(entryKey), keys(4));
    // A marker at or below the latest one is a no-op (the caller restored from an older file).
    await latest.wal.markSnapshot({ index: 3, term: 1, confState: conf });
    await latest.wal.close();
    const older = await Wal.open(dir, { ...small, restoreIndex: 2 });
    assert.deepEqual(older.recovered.snapshotMeta?.index, 4);
    assert.deepEqual(older.recovered.entries.map(entryKey), keys(2));
    await older.wal.close();
  });
});

test('a restore point the log cannot serve is refused', async () => {
  await withTempDir(async (dir) => {
    const { wal } = await Wal.open(dir, small);
    await wal.save([1, 2, 3].map((i) => makeEntry(i, 1)), null);
    // A leader's snapshot at 10 replaced the log: nothing before 10 can be restored from.
    await wal.markSnapshot({ index: 10, term: 2, confState: conf });
    await wal.save([makeEntry(11, 2)], { term: 2, vote: 0, commit: 10 });
    await wal.close();
    await assert.rejects(Wal.open(dir, { ...small, restoreIndex: 2 }), /needs entries 3\.\.10/);
    // No snapshot file at all (restore from 0) while the WAL starts after 10: refused too.
    await assert.rejects(Wal.open(dir, { ...small, restoreIndex: 0 }), CorruptFileError);
    const ok = await Wal.open(dir, { ...small, restoreIndex: 10 });
    assert.deepEqual(ok.recovered.entries.map(entryKey), [entryKey(makeEntry(11, 2))]);
    await ok.wal.close();
  });
});
