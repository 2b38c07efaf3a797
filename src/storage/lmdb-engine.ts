// The durable KvEngine: one LMDB environment, binary keys and values, every write batch one
// `transactionSync` (atomic and visible when it returns). Nothing else writes to this
// environment, so no async lmdb writes can split a batch.
//
// Commits are 'synced' (each waits for fdatasync: the file alone survives an OS crash) or
// 'deferred' (no fsync on the commit path; for a store that a durable log can rebuild). Deferred
// commits survive a process crash (they are in the page cache), and the boot marker
// (boot-marker.ts) detects an OS crash, after which the file is deleted on open and the node
// rebuilds it from its snapshot file and WAL.
//
// No writable map (useWritemap), though it made an apply transaction 25-33% cheaper: LMDB's
// WRITEMAP mode aborts the process (`Assertion 'x <= dl[0].mid' failed in mdb_freelist_save()`)
// when a transaction frees pages it dirtied itself and the free list is empty, which a large
// apply batch of puts, deletes and compaction does (lmdb-snapshot.test.ts has one such batch; the
// same bug made ModSecurity drop WRITEMAP, and it is in LMDB's 1.0 branch too). lmdb-js's
// asynchronous commits do not help: with overlappingSync their promise resolves only after the
// flush (measured: slower than a synced transactionSync on this machine), so an acknowledgement
// would still wait for the disk.
import { mkdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { open, type Database } from 'lmdb';
import { assert } from '../base/assert.js';
import { compareBytes } from '../mvcc/index.js';
import type { KvEngine, KvEntry, KvRange, KvWriter } from '../mvcc/index.js';
import {
  bucketKeyOf,
  decodeBucket,
  encodeBucket,
  isBucketKey,
  isLongKey,
  lmdbBounds,
  updateBucket,
} from './long-key-bucket.js';
import { clearBootMarker, currentBootId, readBootMarker, syncPath, writeBootMarker } from './boot-marker.js';
import type { CommitMode, LmdbEngineOptions } from './types.js';

const dataFileName = 'state.mdb';

export class LmdbEngine implements KvEngine {
  private inWrite = false;
  private closed = false;

  private constructor(
    private readonly db: Database<Uint8Array, Uint8Array>,
    readonly path: string,
    /** How this open commits ('synced' when asked, or when the OS has no boot id). */
    readonly commits: CommitMode,
    /** Whether open deleted a file left by deferred commits before an OS restart. */
    readonly discardedAfterReboot: boolean,
    /** The directory whose boot marker close() clears, or null when there is none. */
    private readonly markerDirectory: string | null,
  ) {}

  /** Opens (or creates) the store in directory `options.directory`. */
  static open(options: LmdbEngineOptions): LmdbEngine {
    const directory = options.directory;
    mkdirSync(directory, { recursive: true });
    const path = join(directory, dataFileName);
    const bootId = options.bootId === undefined ? currentBootId() : options.bootId;
    const marker = readBootMarker(directory);
    // Deferred commits from another boot: the OS may have dropped any of their pages.
    const discard = marker !== null && marker !== bootId;
    if (discard) {
      rmSync(path, { force: true });
      rmSync(`${path}-lock`, { force: true });
      syncPath(directory);
      const warn = options.logger?.warn ?? ((m: string) => process.stderr.write(`${m}\n`));
      warn(`${path}: the OS restarted while this file had unsynced commits; deleted it (rebuilt from the snapshot and the log)`);
    }
    const commits: CommitMode = options.commits === 'deferred' && bootId !== null ? 'deferred' : 'synced';
    // The marker is durable before the first deferred commit; a synced open keeps an existing
    // one until close() has synced the file.
    if (commits === 'deferred' && marker !== bootId) writeBootMarker(directory, bootId as string);
    const markerDirectory = commits === 'deferred' || (marker !== null && !discard) ? directory : null;
    const db = openDatabase(path, commits, options.mapSizeBytes);
    return new LmdbEngine(db, path, commits, discard, markerDirectory);
  }

  /**
   * Opens a second handle on a store this process already opened (in a worker thread: lmdb-js
   * shares one environment between the process's threads), with the same commit mode. For
   * readers only: it leaves the boot marker alone, and its close() only drops the handle.
   */
  static attach(options: { directory: string; commits: CommitMode; mapSizeBytes?: number }): LmdbEngine {
    const path = join(options.directory, dataFileName);
    return new LmdbEngine(openDatabase(path, options.commits, options.mapSizeBytes), path, options.commits, false, null);
  }

  get(key: Uint8Array): Uint8Array | undefined {
    assert(key.length > 0, 'LMDB keys are never empty');
    if (!isLongKey(key)) return this.db.get(key);
    const bucket = this.db.get(bucketKeyOf(key));
    if (bucket === undefined) return undefined;
    return decodeBucket(bucket).find((entry) => compareBytes(entry.key, key) === 0)?.value;
  }

  *range(range: KvRange): Generator<KvEntry, void, undefined> {
    const bounds = lmdbBounds(range);
    if (compareBytes(bounds.start, bounds.end) >= 0) return;
    if (range.reverse === true) {
      // lmdb-js's reverse range includes its start and excludes its end, the opposite of
      // [start, end): seek from the upper bound without an end, stop below the lower one.
      for (const { key, value } of this.db.getRange({ start: bounds.end, reverse: true })) {
        if (compareBytes(key, bounds.start) < 0) return;
        yield* inRange(range, key, value, true);
      }
      return;
    }
    for (const { key, value } of this.db.getRange(bounds)) {
      yield* inRange(range, key, value, false);
    }
  }

  count(range: KvRange): number {
    const bounds = lmdbBounds(range);
    if (compareBytes(bounds.start, bounds.end) >= 0) return 0;
    let count = 0;
    // Keys only (no value copied), but a bucket's: it holds several long keys and may straddle a bound.
    for (const key of this.db.getKeys({ start: bounds.start, end: bounds.end })) {
      if (!isBucketKey(key)) count += isInRange(range, key) ? 1 : 0;
      else for (const entry of decodeBucket(this.db.get(key) ?? new Uint8Array(0))) count += isInRange(range, entry.key) ? 1 : 0;
    }
    return count;
  }

  write<T>(body: (writer: KvWriter) => T): T {
    assert(!this.inWrite, 'write transactions do not nest');
    const writer: KvWriter = {
      get: (key) => this.get(key),
      range: (range) => this.range(range),
      put: (key, value) => this.set(key, value),
      delete: (key) => this.set(key, undefined),
    };
    this.inWrite = true;
    try {
      // A throw inside aborts the LMDB transaction: nothing of the batch is kept.
      return this.db.transactionSync(() => body(writer));
    } finally {
      this.inWrite = false;
    }
  }

  *snapshotEntries(): Generator<KvEntry, void, undefined> {
    // One getRange holds one LMDB read transaction for its whole iteration: a consistent view.
    for (const { key, value } of this.db.getRange({ snapshot: true })) {
      if (isBucketKey(key)) yield* decodeBucket(value);
      else yield { key, value };
    }
  }

  replaceAll(entries: Iterable<KvEntry>): void {
    assert(!this.inWrite, 'replaceAll inside a write transaction');
    this.inWrite = true;
    try {
      this.db.transactionSync(() => {
        this.db.clearSync();
        for (const entry of entries) this.set(entry.key, entry.value);
      });
    } finally {
      this.inWrite = false;
    }
  }

  /** Bytes the data file takes on disk. */
  diskBytes(): number {
    return statSync(this.path).blocks * 512;
  }

  /**
   * LMDB's own figures for this environment (lmdb-js `getStats()`: page size, tree depth, branch,
   * leaf and overflow page counts, entries, last page number, free-list summary). For tools.
   */
  stats(): Record<string, unknown> {
    return this.db.getStats() as Record<string, unknown>;
  }

  /** Resolves once every commit so far is on disk (fdatasync on a libuv thread). */
  flush(): Promise<void> {
    // lmdb-js has `sync(callback)` (mdb_env_sync on a worker) but leaves it out of its types.
    const db = this.db as unknown as { sync(callback: (error?: Error | null) => void): void };
    return new Promise((resolve, reject) => {
      db.sync((error) => (error === undefined || error === null ? resolve() : reject(error)));
    });
  }

  /** Syncs the file, closes it and, then only, clears the boot marker. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.markerDirectory !== null) await this.flush();
    await this.db.close();
    if (this.markerDirectory !== null) clearBootMarker(this.markerDirectory);
  }

  private set(key: Uint8Array, value: Uint8Array | undefined): void {
    assert(this.inWrite, 'writes happen inside write()');
    assert(key.length > 0, 'LMDB keys are never empty');
    if (!isLongKey(key)) {
      if (value === undefined) this.db.removeSync(key);
      else this.db.putSync(key, value);
      return;
    }
    const bucketKey = bucketKeyOf(key);
    const stored = this.db.get(bucketKey);
    const entries = updateBucket(stored === undefined ? [] : decodeBucket(stored), key, value);
    if (entries.length === 0) this.db.removeSync(bucketKey);
    else this.db.putSync(bucketKey, encodeBucket(entries));
  }
}

function openDatabase(path: string, commits: CommitMode, mapSizeBytes: number | undefined): Database<Uint8Array, Uint8Array> {
  return open<Uint8Array, Uint8Array>({
    path,
    keyEncoding: 'binary',
    encoding: 'binary',
    // 8 KiB pages allow 4026-byte keys; longer ones go to buckets (long-key-bucket.ts).
    pageSize: 8192,
    mapSize: mapSizeBytes ?? 64 * 1024 * 1024 * 1024,
    compression: false,
    cache: false,
    noSync: commits === 'deferred',
    // Plain synced commits: overlappingSync's flush happens inside the commit call anyway.
    overlappingSync: false,
    // Never: see the top of this file.
    useWritemap: false,
  });
}

function* inRange(range: KvRange, key: Uint8Array, value: Uint8Array, reverse: boolean): Generator<KvEntry> {
  const entries = isBucketKey(key) ? decodeBucket(value) : [{ key, value }];
  if (reverse) entries.reverse();
  for (const entry of entries) {
    if (isInRange(range, entry.key)) yield entry;
  }
}

function isInRange(range: KvRange, key: Uint8Array): boolean {
  return compareBytes(key, range.start) >= 0 && compareBytes(key, range.end) < 0;
}
