// Opening the log at start-up: a store that covers the log's start needs no snapshot file (none
// is read, even a damaged one); a store behind it restores from the snapshot the WAL's marker
// names, or, when that file is damaged, from an older intact one if the log still holds every
// entry after it; with neither, the node refuses to start naming the damaged file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, openSync, readSync, statSync, writeSync } from 'node:fs';
import { CorruptFileError } from '../../../src/base/errors.js';
import { openDurableLog } from '../../../src/node/durable-log.js';
import { SnapshotStore } from '../../../src/snap/index.js';
import { Wal } from '../../../src/wal/index.js';
import { makeEntry, withTempDir } from '../wal/helpers.js';

const conf = { voters: [1], votersOutgoing: [], learners: [] };
const quiet = { warn: () => {} };

function flipMiddleByte(path: string): void {
  const fd = openSync(path, 'r+');
  const at = Math.floor(statSync(path).size / 2);
  const byte = Buffer.alloc(1);
  readSync(fd, byte, 0, 1, at);
  byte[0] = (byte[0] as number) ^ 0xff;
  writeSync(fd, byte, 0, 1, at);
  closeSync(fd);
}

async function logWithTwoSnapshots(dir: string): Promise<SnapshotStore> {
  const snapshots = new SnapshotStore(dir, { logger: quiet });
  await snapshots.init();
  await snapshots.save({ index: 5, term: 1, confState: conf }, new Uint8Array(4096).fill(5));
  await snapshots.save({ index: 10, term: 1, confState: conf }, new Uint8Array(4096).fill(10));
  const { wal } = await Wal.open(dir, { logger: quiet });
  await wal.save(Array.from({ length: 15 }, (_, i) => makeEntry(i + 1, 1)), { term: 1, vote: 1, commit: 15 });
  await wal.markSnapshot({ index: 10, term: 1, confState: conf });
  await wal.close();
  return snapshots;
}

test('a store at or past the log start reads no snapshot file, even a damaged one', async () => {
  await withTempDir(async (dir) => {
    const snapshots = await logWithTwoSnapshots(dir);
    flipMiddleByte(snapshots.pathOf({ index: 10, term: 1 }));
    const opened = await openDurableLog(dir, quiet, 12);
    try {
      assert.equal(opened.snapshotLoaded, false);
      assert.equal(opened.snapshot?.meta.index, 10);
      assert.equal(opened.snapshot?.data.length, 0);
      assert.deepEqual(opened.recovered.entries.map((e) => e.index), [11, 12, 13, 14, 15]);
    } finally {
      await opened.wal.close();
    }
  });
});

test('a store behind the log start restores from its snapshot, or an older intact one when that is damaged', async () => {
  await withTempDir(async (dir) => {
    const snapshots = await logWithTwoSnapshots(dir);
    let opened = await openDurableLog(dir, quiet, 0);
    assert.equal(opened.snapshotLoaded, true);
    assert.equal(opened.snapshot?.meta.index, 10);
    assert.equal([...snapshots.dataOf({ index: 10, term: 1 })][0]?.[0], 10, 'restored from the file');
    await opened.wal.close();

    flipMiddleByte(snapshots.pathOf({ index: 10, term: 1 }));
    const warnings: string[] = [];
    opened = await openDurableLog(dir, { warn: (m) => warnings.push(m) }, 0);
    try {
      assert.equal(opened.snapshot?.meta.index, 5, 'the older intact snapshot');
      assert.equal([...snapshots.dataOf({ index: 5, term: 1 })][0]?.[0], 5);
      assert.deepEqual(opened.recovered.entries.map((e) => e.index), [6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);
      assert.match(warnings.join('\n'), /damaged/);
    } finally {
      await opened.wal.close();
    }

    flipMiddleByte(snapshots.pathOf({ index: 5, term: 1 }));
    await assert.rejects(openDurableLog(dir, quiet, 0), (error: Error) =>
      error instanceof CorruptFileError && error.message.includes(snapshots.pathOf({ index: 10, term: 1 })));
  });
});
