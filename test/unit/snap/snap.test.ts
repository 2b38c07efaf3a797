// Snapshot files on a real disk: a save round-trips, only the newest two are kept, damage is
// reported with file and offset (or skipped for an older intact snapshot), and a transfer in
// bounded chunks survives dropped connections by resuming from the receiver's offset.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CorruptFileError } from '../../../src/base/errors.js';
import { SeededRandom, randomInt } from '../../../src/base/random.js';
import type { SnapshotMeta } from '../../../src/raft/index.js';
import {
  SnapshotChunkSource,
  SnapshotReceiver,
  SnapshotStore,
  receiveSnapshot,
  shouldSnapshot,
} from '../../../src/snap/index.js';

const conf = { voters: [1, 2, 3], votersOutgoing: [], learners: [4] };

async function withDir<T>(run: (dir: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'baton-snap-'));
  try {
    return await run(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function meta(index: number, term = 1): SnapshotMeta {
  return { index, term, confState: conf };
}

function data(size: number, seed: number): Uint8Array {
  const random = new SeededRandom(BigInt(seed));
  const out = new Uint8Array(size);
  for (let i = 0; i < size; i++) out[i] = random.uint32() & 0xff;
  return out;
}

class Lines {
  readonly lines: string[] = [];
  warn(message: string): void {
    this.lines.push(message);
  }
}

test('a saved snapshot loads back, and only the newest two are kept', async () => {
  await withDir(async (dir) => {
    const store = new SnapshotStore(dir, { blockBytes: 1000 });
    await store.init();
    for (const index of [10, 20, 30]) await store.save(meta(index), data(5000 + index, index));
    assert.deepEqual((await store.list()).map((info) => info.index), [30, 20]);
    const newest = await store.loadNewest();
    assert.ok(newest !== null);
    assert.deepEqual(newest.meta, meta(30));
    assert.deepEqual(newest.data, data(5030, 30));
    const listed = (await store.list()).map((info) => info.fileName);
    assert.deepEqual(readdirSync(join(dir, 'snap')).sort(), listed.sort());
  });
});

test('streamed input and an empty snapshot both round-trip', async () => {
  await withDir(async (dir) => {
    const store = new SnapshotStore(dir, { blockBytes: 333 });
    async function* pieces(): AsyncGenerator<Uint8Array> {
      for (let k = 0; k < 7; k++) yield data(100 * k + 1, k);
    }
    const path = await store.save(meta(5), pieces());
    const expected = Buffer.concat(Array.from({ length: 7 }, (_, k) => data(100 * k + 1, k)));
    assert.deepEqual(Buffer.from((await store.load(path)).data), expected);
    const empty = await store.save(meta(6), new Uint8Array(0));
    assert.equal((await store.load(empty)).data.length, 0);
  });
});

test('a flipped byte anywhere is reported with the file and offset', async () => {
  await withDir(async (dir) => {
    const store = new SnapshotStore(dir, { blockBytes: 1024 });
    const path = await store.save(meta(7), data(20_000, 7));
    const original = readFileSync(path);
    const random = new SeededRandom(77n);
    for (let round = 0; round < 40; round++) {
      const at = randomInt(random, 0, original.length - 1);
      const damaged = Buffer.from(original);
      damaged[at] = (damaged[at] ?? 0) ^ (1 << randomInt(random, 0, 7));
      writeFileSync(path, damaged);
      await assert.rejects(store.load(path), (error: unknown) => {
        assert.ok(error instanceof CorruptFileError, String(error));
        assert.equal(error.path, path);
        const near = error.offset <= at && at - error.offset <= 1024 + 8 + 200;
        assert.ok(near, `${error.offset} vs ${at}`);
        return true;
      });
    }
    const shortened = original.subarray(0, original.length - 1);
    for (const bytes of [Buffer.alloc(0), Buffer.alloc(4096), shortened]) {
      writeFileSync(path, bytes);
      await assert.rejects(store.load(path), CorruptFileError);
    }
  });
});

test('a snapshot file of a newer format version is refused naming the version this build reads', async () => {
  await withDir(async (dir) => {
    const store = new SnapshotStore(dir, { blockBytes: 1024 });
    const path = await store.save(meta(7), data(2_000, 7));
    const bytes = readFileSync(path);
    bytes.writeUInt32LE(2, 8);
    writeFileSync(path, bytes);
    await assert.rejects(store.load(path), (error: unknown) => {
      assert.ok(error instanceof CorruptFileError, String(error));
      assert.equal(error.path, path);
      assert.match(error.message, /unsupported snapshot format version 2: this build reads version 1/);
      return true;
    });
  });
});

test('a damaged newest snapshot is skipped for an older intact one, with a log line', async () => {
  await withDir(async (dir) => {
    const logger = new Lines();
    const store = new SnapshotStore(dir, { logger, blockBytes: 512 });
    await store.save(meta(10), data(3000, 1));
    const newest = await store.save(meta(20), data(3000, 2));
    const bytes = readFileSync(newest);
    bytes[2000] = (bytes[2000] ?? 0) ^ 0xff;
    writeFileSync(newest, bytes);
    const loaded = await store.loadNewest({ minIndex: 10 });
    assert.equal(loaded?.meta.index, 10);
    assert.equal(logger.lines.length, 1);
    const line = /skipping damaged snapshot.*00000014-0000000000000001\.snap/;
    assert.match(logger.lines[0] ?? '', line);
    // When the WAL needs index 20 or later, nothing intact will do: the node must not start.
    await assert.rejects(store.loadNewest({ minIndex: 15 }), (error: unknown) => {
      assert.ok(error instanceof CorruptFileError);
      assert.equal(error.path, newest);
      return true;
    });
    const empty = new SnapshotStore(join(dir, 'other'));
    await assert.rejects(empty.loadNewest({ minIndex: 3 }), CorruptFileError);
  });
});

test('a transfer in bounded chunks resumes after dropped connections', async () => {
  await withDir(async (dir) => {
    const sender = new SnapshotStore(join(dir, 'a'), { blockBytes: 4096 });
    const receiverStore = new SnapshotStore(join(dir, 'b'), { blockBytes: 4096 });
    const payload = data(300_000, 9);
    const path = await sender.save(meta(40, 3), payload);
    const source = await SnapshotChunkSource.open(path, { chunkBytes: 10_000 });
    const random = new SeededRandom(9n);
    let attempts = 0;
    for (;;) {
      attempts++;
      const incoming = { meta: source.meta, totalBytes: source.totalBytes };
      const receiver = await SnapshotReceiver.open(receiverStore, incoming);
      const dropAfter = attempts < 5 ? randomInt(random, 1, 6) : Infinity;
      let sent = 0;
      for await (const chunk of source.chunks(receiver.receivedBytes)) {
        assert.ok(chunk.bytes.length <= 10_000, 'chunks are bounded');
        if (sent++ === dropAfter) {
          // The connection drops mid-chunk: only part of it arrived.
          await receiver.write(chunk.offset, chunk.bytes.subarray(0, 1234));
          break;
        }
        await receiver.write(chunk.offset, chunk.bytes);
      }
      if (receiver.receivedBytes < source.totalBytes) {
        await receiver.abort();
        continue;
      }
      await receiver.finish();
      break;
    }
    await source.close();
    assert.equal(attempts, 5);
    const received = await receiverStore.loadNewest();
    assert.deepEqual(received?.meta, meta(40, 3));
    assert.deepEqual(Buffer.from(received?.data ?? []), Buffer.from(payload));
  });
});

test('a corrupted transfer is refused at the end and restarts from scratch', async () => {
  await withDir(async (dir) => {
    const sender = new SnapshotStore(join(dir, 'a'), { blockBytes: 4096 });
    const receiverStore = new SnapshotStore(join(dir, 'b'));
    const path = await sender.save(meta(8), data(50_000, 8));
    const source = await SnapshotChunkSource.open(path, { chunkBytes: 8192 });
    async function* damaged(): AsyncGenerator<Uint8Array> {
      for await (const chunk of source.chunks()) {
        const bytes = Buffer.from(chunk.bytes);
        if (chunk.offset === 16_384) bytes[100] = (bytes[100] ?? 0) ^ 1;
        yield bytes;
      }
    }
    const incoming = { meta: source.meta, totalBytes: source.totalBytes };
    const bad = receiveSnapshot(receiverStore, { ...incoming, chunks: damaged() });
    await assert.rejects(bad, CorruptFileError);
    assert.deepEqual(readdirSync(join(dir, 'b', 'snap')), []);
    await receiveSnapshot(receiverStore, { ...incoming, chunks: source.byteChunks() });
    assert.equal((await receiverStore.loadNewest())?.meta.index, 8);
    await source.close();
  });
});

test('a partial download with a torn last block resumes from its last good block', async () => {
  await withDir(async (dir) => {
    const sender = new SnapshotStore(join(dir, 'a'), { blockBytes: 1000 });
    const receiverStore = new SnapshotStore(join(dir, 'b'));
    const path = await sender.save(meta(12), data(20_000, 12));
    const bytes = readFileSync(path);
    const incoming = { meta: meta(12), totalBytes: bytes.length };
    const first = await SnapshotReceiver.open(receiverStore, incoming);
    await first.write(0, bytes.subarray(0, 7_777));
    // A crash: the last block's bytes were only partly written, and damaged.
    await first.abort();
    const partial = join(dir, 'b', 'snap', readdirSync(join(dir, 'b', 'snap'))[0] ?? '');
    const onDisk = readFileSync(partial);
    onDisk[7_700] = (onDisk[7_700] ?? 0) ^ 0xff;
    writeFileSync(partial, onDisk);
    const second = await SnapshotReceiver.open(receiverStore, incoming);
    const resumeAt = second.receivedBytes;
    assert.ok(resumeAt > 5_000 && resumeAt < 7_700, `${resumeAt}`);
    await second.write(second.receivedBytes, bytes.subarray(second.receivedBytes));
    await second.finish();
    assert.deepEqual((await receiverStore.loadNewest())?.data, data(20_000, 12));
  });
});

test('the snapshot policy fires on entries or bytes', () => {
  const policy = { entriesMax: 100, logBytesMax: 1000 };
  const decide = (appliedIndex: number, snapshotIndex: number, logBytesSinceSnapshot: number) =>
    shouldSnapshot({ appliedIndex, snapshotIndex, logBytesSinceSnapshot }, policy);
  assert.equal(decide(50, 0, 10), false);
  assert.equal(decide(100, 0, 10), true);
  assert.equal(decide(60, 50, 1000), true);
  assert.equal(decide(50, 50, 5000), false);
});

test('a partial named by its identity resumes only for the same bytes', async () => {
  await withDir(async (dir) => {
    const sender = new SnapshotStore(join(dir, 'a'), { blockBytes: 1000 });
    const receiverStore = new SnapshotStore(join(dir, 'b'));
    const path = await sender.save(meta(20, 2), data(30_000, 20));
    const source = await SnapshotChunkSource.open(path, { chunkBytes: 4096 });
    const bytes = readFileSync(path);
    assert.equal(source.checksum, bytes.readUInt32LE(bytes.length - 12), 'the end record CRC');
    const incoming = { meta: source.meta, totalBytes: source.totalBytes };
    const first = await SnapshotReceiver.open(receiverStore, { ...incoming, checksum: 7 });
    await first.write(0, bytes.subarray(0, 12_000));
    await first.abort();
    const same = await SnapshotReceiver.open(receiverStore, { ...incoming, checksum: 7 });
    assert.ok(same.receivedBytes > 10_000, `resumes at ${same.receivedBytes}`);
    await same.abort();
    // Another identity for the same index and term: the old partial goes, the transfer restarts.
    const other = await SnapshotReceiver.open(receiverStore, { ...incoming, checksum: 8 });
    assert.equal(other.receivedBytes, 0);
    assert.equal(readdirSync(join(dir, 'b', 'snap')).length, 1);
    await other.write(0, bytes);
    assert.equal(await receiverStore.has(source.meta), false);
    assert.equal(await other.finish(), receiverStore.pathOf(source.meta));
    assert.equal(await receiverStore.has(source.meta), true);
    assert.deepEqual(readdirSync(join(dir, 'b', 'snap')), [`${'0'.repeat(14)}14-${'0'.repeat(15)}2.snap`]);
    await source.close();
  });
});
