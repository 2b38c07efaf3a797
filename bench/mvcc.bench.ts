// MVCC state machine on LMDB: apply throughput (puts/s at batch sizes 1, 64, 1024 with 256-byte
// values, every batch one synced LMDB transaction), point gets/s, a prefix scan of 10K keys, and
// loading 1M keys (time, disk size), then snapshot (to a file) and restore (from it) of that store.
// Small measurements are medians of 5 runs; the 1M-key steps run once (`--runs-large N` repeats
// them, `--keys N` changes the count, e.g. --keys 10000000 for the optional 10M load).
// Bounded by default: about 2-3 minutes and ~1.5 GB of temporary disk, removed at the end.
import { closeSync, mkdtempSync, openSync, readSync, rmSync, statSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { EntryType, type Entry } from '../src/raft/types.js';
import { MvccStore, defaultMvccLimits, encodeCommand } from '../src/mvcc/index.js';
import { LmdbEngine } from '../src/storage/index.js';
import { open } from 'lmdb';

const { values: args } = parseArgs({
  options: {
    keys: { type: 'string', default: '1000000' },
    'runs-large': { type: 'string', default: '1' },
  },
});
const loadKeyCount = Number(args.keys);
const largeRuns = Number(args['runs-large']);
const runs = 5;
const value256 = new Uint8Array(256).fill(0x76);
const root = mkdtempSync(join(tmpdir(), 'baton-mvcc-bench-'));
let directoryCount = 0;

function median(samples: readonly number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

function keyOf(i: number): string {
  // Spread keys like real names: a hashed-looking component, not insertion order.
  const mixed = (Math.imul(i, 0x9e3779b1) >>> 0).toString(16).padStart(8, '0');
  return `/bench/${mixed}/${i}`;
}

function putEntries(first: { index: number; key: number }, count: number): Entry[] {
  const entries: Entry[] = [];
  for (let i = 0; i < count; i++) {
    const op = { type: 'put' as const, key: keyOf(first.key + i), value: value256 };
    const data = encodeCommand({ proposedAtMs: 1_000 + first.index + i, op }, defaultMvccLimits);
    entries.push({ index: first.index + i, term: 1, type: EntryType.normal, data });
  }
  return entries;
}

function freshStore(): { engine: LmdbEngine; store: MvccStore; directory: string } {
  const directory = join(root, `db-${directoryCount++}`);
  const engine = LmdbEngine.open({ directory });
  return { engine, store: new MvccStore(engine), directory };
}

/** Applies `total` puts in batches of `batchSize`; returns puts/s (encoding excluded). */
function applyThroughput(store: MvccStore, options: { batchSize: number; total: number; firstKey: number }): number {
  let index = store.appliedIndex + 1;
  let elapsedMs = 0;
  for (let done = 0; done < options.total; done += options.batchSize) {
    const batch = putEntries({ index, key: options.firstKey + done }, options.batchSize);
    const start = performance.now();
    store.applyBatch(batch);
    elapsedMs += performance.now() - start;
    index += options.batchSize;
  }
  return (options.total / elapsedMs) * 1000;
}

const results: Record<string, number | string> = {};
function report(name: string, value: number, unit: string): void {
  results[`${name} (${unit})`] = Math.round(value * 10) / 10;
  console.log(`${name.padEnd(44)} ${value.toFixed(1).padStart(12)} ${unit}`);
}

/** Plain lmdb-js on the same machine and moment: the ceiling the state machine is compared with. */
async function rawLmdbBaseline(): Promise<void> {
  const putSamples: number[] = [];
  const getSamples: number[] = [];
  for (let run = 0; run < runs; run++) {
    const db = open<Uint8Array, Uint8Array>({
      path: join(root, `raw-${run}.mdb`), keyEncoding: 'binary', encoding: 'binary', pageSize: 8192,
    });
    const keys = Array.from({ length: 102_400 }, (_, i) => Buffer.from(keyOf(i)));
    let start = performance.now();
    for (let b = 0; b < keys.length; b += 1024) {
      db.transactionSync(() => {
        for (let i = b; i < b + 1024; i++) db.put(keys[i] as Uint8Array, value256);
      });
    }
    putSamples.push((keys.length / (performance.now() - start)) * 1000);
    start = performance.now();
    for (let i = 0; i < 100_000; i++) db.get(keys[(Math.imul(i, 7919) >>> 0) % keys.length] as Uint8Array);
    getSamples.push((100_000 / (performance.now() - start)) * 1000);
    await db.close();
  }
  report('baseline: raw lmdb put, 1024 per txn', median(putSamples), 'puts/s');
  report('baseline: raw lmdb get', median(getSamples), 'gets/s');
}

async function main(): Promise<void> {
  console.log(`MVCC on LMDB, ${runs} runs per small measurement (median), node ${process.version}`);
  await rawLmdbBaseline();
  for (const [batchSize, total] of [[1, 1_000], [64, 16_384], [1024, 65_536]] as const) {
    const samples: number[] = [];
    for (let run = 0; run < runs; run++) {
      const { engine, store } = freshStore();
      samples.push(applyThroughput(store, { batchSize, total, firstKey: 0 }));
      await engine.close();
    }
    report(`apply puts, batch ${batchSize}`, median(samples), 'puts/s');
  }

  // Reads on a 100K-key store with a 10K-key prefix.
  const { engine, store } = freshStore();
  applyThroughput(store, { batchSize: 1024, total: 100_352, firstKey: 0 });
  const scanEntries: Entry[] = [];
  for (let i = 0; i < 10_000; i++) {
    const op = { type: 'put' as const, key: `/scan/${String(i).padStart(6, '0')}`, value: value256 };
    const data = encodeCommand({ proposedAtMs: 1, op }, defaultMvccLimits);
    scanEntries.push({ index: store.appliedIndex + 1 + i, term: 1, type: EntryType.normal, data });
  }
  store.applyBatch(scanEntries);
  const getSamples: number[] = [];
  for (let run = 0; run < runs; run++) {
    const count = 100_000;
    const start = performance.now();
    for (let i = 0; i < count; i++) {
      store.range({ type: 'get', key: keyOf((Math.imul(i + run, 7919) >>> 0) % 100_352) });
    }
    getSamples.push((count / (performance.now() - start)) * 1000);
  }
  report('point get (100K-key store)', median(getSamples), 'gets/s');
  const scanSamples: number[] = [];
  for (let run = 0; run < runs; run++) {
    const start = performance.now();
    const result = store.range({ type: 'get', key: '/scan/', prefix: true });
    scanSamples.push(performance.now() - start);
    if (result.count !== 10_000) throw new Error(`scan found ${result.count}`);
  }
  report('prefix scan, 10K keys of 256 B', median(scanSamples), 'ms');
  const countSamples: number[] = [];
  for (let run = 0; run < runs; run++) {
    const start = performance.now();
    store.range({ type: 'get', key: '/scan/', prefix: true, countOnly: true });
    countSamples.push(performance.now() - start);
  }
  report('prefix count, 10K keys', median(countSamples), 'ms');
  await engine.close();

  for (let run = 0; run < largeRuns; run++) await largeRun();
  console.log(JSON.stringify(results));
}

async function largeRun(): Promise<void> {
  const { engine, store, directory } = freshStore();
  const loadStart = performance.now();
  const rate = applyThroughput(store, { batchSize: 1024, total: loadKeyCount, firstKey: 0 });
  const loadMs = performance.now() - loadStart;
  report(`load ${loadKeyCount} keys (batches of 1024)`, loadMs / 1000, 's');
  report(`  apply rate during the load`, rate, 'puts/s');
  report(`  disk size after the load`, engine.diskBytes() / 2 ** 20, 'MiB');
  report(`  disk bytes per key`, engine.diskBytes() / loadKeyCount, 'B');

  const snapshotPath = join(root, 'snapshot.bin');
  const snapshotIndex = store.appliedIndex;
  const snapshotStart = performance.now();
  const fd = openSync(snapshotPath, 'w');
  for (const chunk of store.snapshot({ chunkBytesMax: 1 << 20 }).chunks) writeSync(fd, chunk);
  closeSync(fd);
  report(`snapshot ${loadKeyCount} keys to a file`, (performance.now() - snapshotStart) / 1000, 's');
  report(`  snapshot size`, statSync(snapshotPath).size / 2 ** 20, 'MiB');

  // Compaction: the command only moves the compact revision; the history below it is deleted
  // 512 events per later applied entry (here: leader no-ops, 64 per batch) until none is left.
  const compactStart = performance.now();
  let index = store.appliedIndex + 1;
  const op = { type: 'compact' as const, revision: store.revision };
  const data = encodeCommand({ proposedAtMs: 1, op }, defaultMvccLimits);
  store.applyBatch([{ index: index++, term: 1, type: EntryType.normal, data }]);
  report(`compact command on ${loadKeyCount} keys of history`, performance.now() - compactStart, 'ms');
  const drainStart = performance.now();
  while (store.compactionPending()) {
    const noops: Entry[] = [];
    for (let i = 0; i < 64; i++) noops.push({ index: index++, term: 1, type: EntryType.normal, data: new Uint8Array(0) });
    store.applyBatch(noops);
  }
  report(`  history deleted in steps, total`, (performance.now() - drainStart) / 1000, 's');
  await engine.close();
  rmSync(directory, { recursive: true, force: true });

  const target = freshStore();
  const restoreStart = performance.now();
  target.store.restore(readChunks(snapshotPath));
  report(`restore ${loadKeyCount} keys from the file`, (performance.now() - restoreStart) / 1000, 's');
  if (target.store.appliedIndex !== snapshotIndex) throw new Error('restore lost the applied index');
  await target.engine.close();
  rmSync(target.directory, { recursive: true, force: true });
  rmSync(snapshotPath, { force: true });
}

function* readChunks(path: string): Generator<Uint8Array> {
  const fd = openSync(path, 'r');
  try {
    for (;;) {
      const buffer = new Uint8Array(1 << 20);
      const read = readSync(fd, buffer);
      if (read === 0) return;
      yield buffer.subarray(0, read);
    }
  } finally {
    closeSync(fd);
  }
}

try {
  await main();
} finally {
  rmSync(root, { recursive: true, force: true });
}
