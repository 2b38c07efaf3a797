// A backup file of N scale keys made without a cell (bench:restore, issue 27): loading 10M keys
// through a cell's API takes about an hour on this machine, and a restore benchmark needs only
// the file. The store is built by the state machine itself (MvccStore on LMDB applying committed
// put entries in batches, exactly what a member's apply does with them), and its snapshot stream
// is written as `baton snapshot save` writes it: so the file is the backup a cell holding these
// keys would give, not an imitation of one.
import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { EntryType, type Entry } from '../src/raft/types.js';
import { MvccStore, defaultMvccLimits, encodeCommand } from '../src/mvcc/index.js';
import { LmdbEngine } from '../src/storage/index.js';
import { scaleKey, scaleValue } from '../src/bench/scale-keys.js';

/**
 * The key numbers 0..keys-1 in the order of their keys: put in that order, the store is built at
 * the B-tree's right edge (10M keys in minutes; in number order, whose keys are scattered, the
 * load slowed to ~2 minutes per million past 2M). What the store holds is the same either way;
 * only which revision each key got differs. scaleKey's first segment is i * 0x9e3779b1 mod 2^32,
 * a bijection: sorting those and multiplying back by the inverse gives the numbers in key order.
 */
function keyNumbersInKeyOrder(keys: number): (at: number) => number {
  const scrambled = new Uint32Array(keys);
  for (let i = 0; i < keys; i++) scrambled[i] = Math.imul(i, 0x9e3779b1) >>> 0;
  scrambled.sort();
  return (at) => Math.imul(scrambled[at] as number, scrambleInverse) >>> 0;
}

/** 0x9e3779b1's inverse modulo 2^32 (checked at load). */
const scrambleInverse = inverseMod32(0x9e3779b1);
function inverseMod32(odd: number): number {
  // Newton's iteration: each step doubles the correct low bits (5 steps from 3 give 48 >= 32).
  let x = odd;
  for (let i = 0; i < 5; i++) x = Math.imul(x, 2 - Math.imul(odd, x));
  if (Math.imul(odd, x) >>> 0 !== 1) throw new Error('no inverse');
  return x >>> 0;
}

/** Entries applied per batch (one LMDB write transaction each). */
const batchEntries = 1024;

export interface SyntheticBackup {
  readonly file: string;
  readonly keys: number;
  readonly loadSeconds: number;
  readonly snapshotSeconds: number;
  readonly bytes: number;
}

/**
 * Applies puts of scaleKey(0..keys-1) = scaleValue to a fresh store in `workDir`, then writes its
 * snapshot to `file`; the store is removed after. `progress` is told every ~1M keys.
 */
export async function writeSyntheticBackup(
  file: string,
  keys: number,
  workDir: string,
  progress: (line: string) => void = () => {},
): Promise<SyntheticBackup> {
  if (!(Number.isSafeInteger(keys) && keys >= 1 && keys < 2 ** 32)) throw new RangeError(`keys: ${keys}`);
  const directory = mkdtempSync(join(workDir, 'synthetic-store-'));
  const engine = LmdbEngine.open({ directory });
  try {
    const store = new MvccStore(engine);
    const began = performance.now();
    let index = store.appliedIndex + 1;
    let nextReport = 1_000_000;
    const order = keyNumbersInKeyOrder(keys);
    for (let done = 0; done < keys; ) {
      const count = Math.min(batchEntries, keys - done);
      const batch: Entry[] = new Array(count);
      for (let i = 0; i < count; i++) {
        const op = { type: 'put' as const, key: scaleKey(order(done + i)), value: scaleValue };
        batch[i] = { index, term: 1, type: EntryType.normal, data: encodeCommand({ proposedAtMs: 1_000, op }, defaultMvccLimits) };
        index++;
      }
      store.applyBatch(batch);
      done += count;
      if (done >= nextReport) {
        progress(`synthetic backup: ${done} of ${keys} keys applied (${((performance.now() - began) / 1000).toFixed(0)} s)`);
        nextReport += 1_000_000;
        // Lets timers and signals through between batches.
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
    const loaded = performance.now();
    const fd = openSync(file, 'w');
    let bytes = 0;
    try {
      const snapshot = store.snapshot({ chunkBytesMax: 1 << 20 });
      try {
        for (const chunk of snapshot.chunks) {
          for (let at = 0; at < chunk.length; ) at += writeSync(fd, chunk, at);
          bytes += chunk.length;
        }
      } finally {
        snapshot.close();
      }
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    const written = performance.now();
    return { file, keys, loadSeconds: (loaded - began) / 1000, snapshotSeconds: (written - loaded) / 1000, bytes };
  } finally {
    await engine.close();
    rmSync(directory, { recursive: true, force: true });
  }
}
