// WAL benchmark (npm run bench:wal; not a test). Prints the disk's raw 4 KiB write+fdatasync
// rate, then the WAL's appends/s with 1, 16 and 256 concurrent appenders of 256-byte entries, and
// appends per fdatasync (group-commit efficiency). Medians of 3 runs; about 30 s in all.
// Build first (npm run bench:wal does): it runs the compiled dist/bench/wal.bench.js.
import { closeSync, fdatasyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Wal } from '../src/wal/index.js';

const runs = 3;
const runMs = 2000;
const entryBytes = 256;

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

function withDir<T>(run: (dir: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'baton-bench-'));
  try {
    return run(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** 4 KiB writes + fdatasync into a preallocated file, on this thread (what the worker does). */
function rawSyncRate(): number {
  return withDir((dir) => {
    const path = join(dir, 'raw');
    const fileBytes = 16 * 1024 * 1024;
    const fd = openSync(path, 'w+');
    const zeros = Buffer.alloc(1024 * 1024);
    for (let at = 0; at < fileBytes; at += zeros.length) writeSync(fd, zeros, 0, zeros.length, at);
    fdatasyncSync(fd);
    const block = Buffer.alloc(4096, 7);
    let count = 0;
    const started = performance.now();
    while (performance.now() - started < runMs / 2) {
      writeSync(fd, block, 0, block.length, (count * 4096) % fileBytes);
      fdatasyncSync(fd);
      count++;
    }
    const seconds = (performance.now() - started) / 1000;
    closeSync(fd);
    return count / seconds;
  });
}

interface WalRun {
  readonly appendsPerSecond: number;
  readonly syncsPerSecond: number;
  readonly latencyMsP50: number;
}

async function walRun(appenders: number): Promise<WalRun> {
  const dir = mkdtempSync(join(tmpdir(), 'baton-bench-'));
  try {
    const { wal } = await Wal.open(dir);
    const data = new Uint8Array(entryBytes).fill(1);
    let next = 0;
    let stop = false;
    const latencies: number[] = [];
    const before = wal.stats();
    const started = performance.now();
    const appender = async (): Promise<void> => {
      while (!stop) {
        const index = ++next;
        const sent = performance.now();
        await wal.save([{ index, term: 1, type: 0, data }], null);
        if (latencies.length < 200_000) latencies.push(performance.now() - sent);
      }
    };
    const timer = setTimeout(() => (stop = true), runMs);
    await Promise.all(Array.from({ length: appenders }, appender));
    clearTimeout(timer);
    const seconds = (performance.now() - started) / 1000;
    const after = wal.stats();
    await wal.close();
    return {
      appendsPerSecond: (after.saves - before.saves) / seconds,
      syncsPerSecond: (after.syncs - before.syncs) / seconds,
      latencyMsP50: median(latencies),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const raw = median(Array.from({ length: runs }, rawSyncRate));
  const rawRate = Math.round(raw);
  console.log(`disk: 4 KiB write + fdatasync, preallocated file: ${rawRate}/s (median of ${runs})`);
  console.log(`WAL: ${entryBytes}-byte entries, one per save, worker fdatasync, 64 MiB segments`);
  console.log('appenders | appends/s | fdatasyncs/s | appends per fdatasync | p50 save latency');
  for (const appenders of [1, 16, 256]) {
    const results: WalRun[] = [];
    for (let run = 0; run < runs; run++) results.push(await walRun(appenders));
    const appends = median(results.map((r) => r.appendsPerSecond));
    const syncs = median(results.map((r) => r.syncsPerSecond));
    const ratio = median(results.map((r) => r.appendsPerSecond / Math.max(1, r.syncsPerSecond)));
    const latency = median(results.map((r) => r.latencyMsP50));
    console.log(
      `${String(appenders).padStart(9)} | ${String(Math.round(appends)).padStart(9)} | ` +
        `${String(Math.round(syncs)).padStart(12)} | ${ratio.toFixed(1).padStart(21)} | ` +
        `${latency.toFixed(2)} ms`,
    );
  }
  // The disk's rate drifts with other load on the machine; a second reading shows by how much.
  const rawAfter = Math.round(median(Array.from({ length: runs }, rawSyncRate)));
  console.log(`disk again after the WAL runs: ${rawAfter}/s`);
}

await main();
