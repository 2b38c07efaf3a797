// The durable KvEngine: one LMDB environment, binary keys and values, every write batch one
// `transactionSync` (atomic and visible when it returns). Nothing else writes to this
// environment, so no async lmdb writes can split a batch.
//
// Commits are 'synced' (each waits for fdatasync: the file alone survives an OS crash) or
// 'deferred' (no fsync on the commit path; for a store whose durable log holds what came after
// its last checkpoint). Deferred commits survive a process crash (they are in the page cache);
// `checkpoint()` makes them durable off the event loop (checkpointer.ts). The boot marker
// (boot-marker.ts) detects an OS crash: open then goes back to the last checkpoint's tree, or,
// for a file never checkpointed, deletes it (the node rebuilds from its snapshot file and WAL).
//
// No writable map (useWritemap), though it made an apply transaction 25-33% cheaper: LMDB's
// WRITEMAP mode aborts the process (`Assertion 'x <= dl[0].mid' failed in mdb_freelist_save()`)
// when a transaction frees pages it dirtied itself and the free list is empty, which a large
// apply batch of puts, deletes and compaction does (lmdb-snapshot.test.ts has one such batch; the
// same bug made ModSecurity drop WRITEMAP, and it is in LMDB's 1.0 branch too). lmdb-js's
// asynchronous commits do not help: with overlappingSync their promise resolves only after the
// flush (measured: slower than a synced transactionSync on this machine), so an acknowledgement
// would still wait for the disk.
//
// Two LMDB databases in the one environment (stores created by this version): the history table
// ('h', keyed by revision, so always appended at its end) in a database of its own, everything
// else in another; the root database holds only their two names. In one shared B-tree the
// history's appends landed mid-tree (the current table's keys follow it), where LMDB splits a
// full page in the middle, so history pages stayed about half full; at the end of a tree of its
// own a split leaves the old page full (measured by `npm run bench:bytes`: history pages 93%
// full instead of ~55%). The engine still presents one ordered key space: reads, counts and
// snapshots merge the two at the history's bounds, so the logical content, its order, snapshot
// streams and content hashes are byte for byte those of a single-database store. A store whose
// root database holds data (written before this split) keeps its single database.
import { mkdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { open, type Database } from 'lmdb';
import { assert } from '../base/assert.js';
import { CorruptFileError } from '../base/errors.js';
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
import { Checkpointer, restoreCheckpoint } from './checkpointer.js';
import { verifyStoreFile } from './verify-store.js';
import { advanceTxnIds } from './nonce-advance.js';
import { miss, overlaid, PendingWrites } from './write-behind.js';
import type { CommitMode, LmdbEngineOptions, WriteBehindOptions } from './types.js';

/** MDB_APPEND: the key goes after the database's last one (replaceAll checks it is above it). */
const appendPut = { append: true } as const;

export const dataFileName = 'state.mdb';

export class LmdbEngine implements KvEngine {
  private inWrite = false;
  private closed = false;
  /** Write-behind: applied writes not yet committed to LMDB (null: every write commits). */
  private readonly pending: PendingWrites | null;
  private pendingTimer: NodeJS.Timeout | null = null;

  private constructor(
    private readonly databases: Databases,
    readonly path: string,
    /** How this open commits ('synced' when asked, or when the OS has no boot id). */
    readonly commits: CommitMode,
    /** What open did with a file left by deferred commits before an OS restart. */
    readonly afterReboot: 'none' | 'discarded' | 'restored',
    /** The directory whose boot marker close() clears, or null when there is none. */
    private readonly markerDirectory: string | null,
    /** Deferred commits' checkpoints (null for synced commits and attached handles). */
    private readonly checkpoints: Checkpointer | null,
    private readonly writeBehind: WriteBehindOptions | null = null,
  ) {
    this.pending = writeBehind === null ? null : new PendingWrites();
  }

  /** Whether open deleted a file left by deferred commits before an OS restart (no checkpoint to go back to). */
  get discardedAfterReboot(): boolean {
    return this.afterReboot === 'discarded';
  }

  /** Opens (or creates) the store in directory `options.directory`. */
  static open(options: LmdbEngineOptions): LmdbEngine {
    const directory = options.directory;
    mkdirSync(directory, { recursive: true });
    const path = join(directory, dataFileName);
    const bootId = options.bootId === undefined ? currentBootId() : options.bootId;
    const marker = readBootMarker(directory);
    const warn = options.logger?.warn ?? ((m: string) => process.stderr.write(`${m}\n`));
    // Deferred commits from another boot: the OS may have dropped any page written since the
    // last checkpoint, so only the checkpointed tree is trusted.
    const rebooted = marker !== null && marker !== bootId;
    let afterReboot: 'none' | 'discarded' | 'restored' = 'none';
    let restored: bigint | null = null;
    if (rebooted) {
      const meta = restoreCheckpoint(directory, path);
      if (meta !== null) {
        verifyStoreFile(path, meta.pageSize, options.encryptionKey);
        afterReboot = 'restored';
        restored = meta.txnId;
        warn(`${path}: the OS restarted while this file had unsynced commits; went back to its last checkpoint (transaction ${meta.txnId}); the log replays what came after`);
      } else {
        afterReboot = 'discarded';
        rmSync(path, { force: true });
        rmSync(`${path}-lock`, { force: true });
        syncPath(directory);
        warn(`${path}: the OS restarted while this file had unsynced commits and no checkpoint; deleted it (rebuilt from the snapshot and the log)`);
      }
    }
    const commits: CommitMode = options.commits === 'deferred' && bootId !== null ? 'deferred' : 'synced';
    // The marker is durable before the first deferred commit.
    if (commits === 'deferred' && marker !== bootId) writeBootMarker(directory, bootId as string);
    // An encrypted store: no page nonce (page, txnid) of an earlier process may come back.
    if (options.encryptionKey !== undefined) {
      const advanced = advanceTxnIds(path);
      if (restored !== null && advanced !== null) restored = advanced.txnId;
    }
    const db = openDatabase(path, commits, options.mapSizeBytes, options.encryptionKey);
    let checkpoints: Checkpointer | null = null;
    try {
      if (commits === 'deferred') {
        // Before the first commit of this process: the open file, whatever it holds, is durable
        // and pinned (a crashed process's pin is gone, so its checkpointed tree is no longer
        // protected).
        checkpoints = Checkpointer.start(db.root, directory, path, options.onCheckpoint);
        if (restored !== null && checkpoints.durableTxnId !== restored) {
          throw new CorruptFileError(path, 0, `restored checkpoint transaction ${restored}, but LMDB opened ${checkpoints.durableTxnId}`);
        }
      } else if (marker !== null) {
        // Synced commits after deferred ones: once the file is synced it is a plain synced
        // store (no checkpoint to go back to; its commits may reuse any free page).
        syncPath(path);
        clearBootMarker(directory);
      }
    } catch (error) {
      db.root.close();
      throw error;
    }
    // Write-behind only where LMDB's own commits are not what recovery trusts (deferred: the log
    // holds everything after the last checkpoint, and a checkpoint commits the pending writes first),
    // and not with LMDB's page cipher (experimental): a cell on it failed a held commit with
    // "MDB_BAD_TXN: freelist entry had bad/duplicate entries" (test/cluster/encryption.test.ts).
    const writeBehind = commits === 'deferred' && options.encryptionKey === undefined ? options.writeBehind ?? null : null;
    return new LmdbEngine(db, path, commits, afterReboot, commits === 'deferred' ? directory : null, checkpoints, writeBehind);
  }

  /**
   * Opens a second handle on a store this process already opened (in a worker thread: lmdb-js
   * shares one environment between the process's threads), with the same commit mode. For
   * readers only: it leaves the boot marker alone, and its close() only drops the handle.
   */
  static attach(options: { directory: string; commits: CommitMode; mapSizeBytes?: number; encryptionKey?: string }): LmdbEngine {
    const path = join(options.directory, dataFileName);
    return new LmdbEngine(openDatabase(path, options.commits, options.mapSizeBytes, options.encryptionKey), path, options.commits, 'none', null, null);
  }

  get(key: Uint8Array): Uint8Array | undefined {
    assert(key.length > 0, 'LMDB keys are never empty');
    if (this.pending !== null && this.pending.size > 0) {
      const value = this.pending.get(key);
      if (value !== miss) return value;
    }
    return this.storedGet(key);
  }

  private storedGet(key: Uint8Array): Uint8Array | undefined {
    const db = this.databaseOf(key);
    if (!isLongKey(key)) return db.get(key);
    const bucket = db.get(bucketKeyOf(key));
    if (bucket === undefined) return undefined;
    return decodeBucket(bucket).find((entry) => compareBytes(entry.key, key) === 0)?.value;
  }

  range(range: KvRange): Iterable<KvEntry> {
    const pending = this.pending?.inRange(range) ?? [];
    const stored = this.storedRange(range);
    return pending.length === 0 ? stored : overlaid(stored, pending, range.reverse === true);
  }

  private *storedRange(range: KvRange): Generator<KvEntry, void, undefined> {
    const parts = this.parts(range);
    if (range.reverse === true) parts.reverse();
    for (const part of parts) yield* rangeOf(part.db, part.range, range.reverse === true);
  }

  count(range: KvRange): number {
    let count = 0;
    for (const part of this.parts(range)) count += countOf(part.db, part.range);
    // Pending writes change it by what they add to or take from the stored keys.
    for (const { key, value } of this.pending?.inRange(range) ?? []) {
      const stored = this.storedGet(key) !== undefined;
      if (stored && value === undefined) count--;
      else if (!stored && value !== undefined) count++;
    }
    return count;
  }

  write<T>(body: (writer: KvWriter) => T): T {
    assert(!this.inWrite, 'write transactions do not nest');
    const writer: KvWriter = {
      get: (key) => this.get(key),
      range: (range) => this.range(range),
      put: (key, value) => this.setOrHold(key, value),
      delete: (key) => this.setOrHold(key, undefined),
    };
    this.inWrite = true;
    if (this.pending !== null) return this.writeBehindOf(this.pending, body, writer);
    try {
      // A throw inside aborts the LMDB transaction: nothing of the batch is kept.
      return this.databases.root.transactionSync(() => body(writer));
    } finally {
      this.inWrite = false;
    }
  }

  /** write() with write-behind: the body's writes join the pending ones (or none of them, if it throws). */
  private writeBehindOf<T>(pending: PendingWrites, body: (writer: KvWriter) => T, writer: KvWriter): T {
    pending.begin();
    let result: T;
    try {
      result = body(writer);
      pending.commit();
    } catch (error) {
      pending.rollback();
      throw error;
    } finally {
      this.inWrite = false;
    }
    const limits = this.writeBehind as WriteBehindOptions;
    if (pending.size >= limits.maxKeys || pending.bytes >= limits.maxBytes) this.commitPending();
    else if (this.pendingTimer === null && pending.size > 0) {
      this.pendingTimer = setTimeout(() => this.commitPending(), limits.delayMs);
      this.pendingTimer.unref();
    }
    return result;
  }

  /**
   * Commits the pending writes to LMDB in one transaction, in key order. Before anything reads
   * the file rather than this engine (a checkpoint, the snapshot thread's view) and on close.
   */
  commitPending(): void {
    if (this.pendingTimer !== null) {
      clearTimeout(this.pendingTimer);
      this.pendingTimer = null;
    }
    const pending = this.pending;
    if (pending === null || pending.size === 0) return;
    assert(!this.inWrite, 'pending writes commit between write transactions');
    const entries = pending.drain();
    this.inWrite = true;
    try {
      this.databases.root.transactionSync(() => {
        for (const { key, value } of entries) this.set(key, value);
      });
    } finally {
      this.inWrite = false;
    }
  }

  *snapshotEntries(): Generator<KvEntry, void, undefined> {
    this.commitPending();
    const { kv, history } = this.databases;
    if (history === null) {
      // One getRange holds one LMDB read transaction for its whole iteration: a consistent view.
      for (const { key, value } of kv.getRange({ snapshot: true })) yield* entriesOf(key, value);
      return;
    }
    // Both databases through one read transaction: one consistent view of the whole store.
    const transaction = kv.useReadTransaction();
    try {
      for (const { key, value } of kv.getRange({ end: historyStart, transaction })) yield* entriesOf(key, value);
      for (const { key, value } of history.getRange({ transaction })) yield* entriesOf(key, value);
      for (const { key, value } of kv.getRange({ start: historyEnd, transaction })) yield* entriesOf(key, value);
    } finally {
      transaction.done();
    }
  }

  replaceAll(entries: Iterable<KvEntry>): void {
    assert(!this.inWrite, 'replaceAll inside a write transaction');
    // Replaced anyway, but committed first: should `entries` throw, the old content stays whole.
    this.commitPending();
    this.inWrite = true;
    try {
      this.databases.root.transactionSync(() => {
        this.databases.kv.clearSync();
        this.databases.history?.clearSync();
        // A snapshot's entries come in key order: each database is filled with LMDB's append (no
        // tree search per key, leaf pages filled whole: about half the time of a restore) while a
        // key is above every key already in it; any other (a long key's bucket) is a plain put.
        const highest = new Map<Database<Uint8Array, Uint8Array>, Uint8Array>();
        for (const { key, value } of entries) {
          const db = this.databaseOf(key);
          const long = isLongKey(key);
          const stored = long ? bucketKeyOf(key) : key;
          const top = highest.get(db);
          const above = top === undefined || compareBytes(stored, top) > 0;
          if (above && !long) db.putSync(key, value, appendPut);
          else this.set(key, value);
          if (above) highest.set(db, stored);
        }
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
   * Bytes of the pages in use: every database's tree and the free list's own tree, plus the two
   * meta pages. The file's other pages are free (LMDB reuses them for later writes).
   */
  usedBytes(): number {
    const { env, databases } = this.stats();
    const pages = (stat: Record<string, unknown> | undefined): number =>
      stat === undefined ? 0 : ['treeBranchPageCount', 'treeLeafPageCount', 'overflowPages']
        .reduce((sum, field) => sum + (typeof stat[field] === 'number' ? (stat[field] as number) : 0), 0);
    const trees = Object.values(databases).reduce((sum, stat) => sum + pages(stat), 0);
    const pageSize = typeof env['pageSize'] === 'number' ? env['pageSize'] : 4096;
    return (trees + pages(env['free'] as Record<string, unknown> | undefined) + 2) * pageSize;
  }

  /**
   * LMDB's own figures (lmdb-js `getStats()`): the environment's (page size, last page number,
   * free list) and each database's tree (depth, branch, leaf and overflow pages, entries). For tools.
   */
  stats(): { env: Record<string, unknown>; databases: Record<string, Record<string, unknown>> } {
    const { root, kv, history } = this.databases;
    const env = root.getStats() as Record<string, unknown>;
    if (history === null) return { env, databases: { main: env } };
    return {
      env,
      databases: {
        root: env,
        kv: kv.getStats() as Record<string, unknown>,
        history: history.getStats() as Record<string, unknown>,
      },
    };
  }

  /** Whether this store keeps history in a database of its own (stores created since that split). */
  get splitHistory(): boolean {
    return this.databases.history !== null;
  }

  /** Resolves once every commit so far is on disk (fdatasync on a libuv thread). */
  flush(): Promise<void> {
    this.commitPending();
    // lmdb-js has `sync(callback)` (mdb_env_sync on a worker) but leaves it out of its types.
    const db = this.databases.root as unknown as { sync(callback: (error?: Error | null) => void): void };
    return new Promise((resolve, reject) => {
      db.sync((error) => (error === undefined || error === null ? resolve() : reject(error)));
    });
  }

  /**
   * Deferred commits: makes every commit so far durable (fdatasync off the event loop, then the
   * checkpoint record); after an OS crash the store reopens at the newest checkpoint. Synced
   * commits are durable already.
   */
  async checkpoint(): Promise<void> {
    assert(!this.closed, 'checkpoint of a closed store');
    // Synchronously, before the first await: the checkpoint covers every write made before the call.
    this.commitPending();
    if (this.checkpoints !== null) await this.checkpoints.checkpoint();
  }

  /** Syncs the file, closes it and, then only, clears the boot marker. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.commitPending();
    this.closed = true;
    await this.checkpoints?.close();
    if (this.markerDirectory !== null) await this.flush();
    await this.databases.root.close();
    if (this.markerDirectory !== null) clearBootMarker(this.markerDirectory);
  }

  /** A write transaction's put or delete: pending (write-behind) or into LMDB's transaction. */
  private setOrHold(key: Uint8Array, value: Uint8Array | undefined): void {
    assert(this.inWrite, 'writes happen inside write()');
    assert(key.length > 0, 'LMDB keys are never empty');
    if (this.pending === null) this.set(key, value);
    else this.pending.set(key, value);
  }

  private set(key: Uint8Array, value: Uint8Array | undefined): void {
    assert(this.inWrite, 'writes happen inside write()');
    assert(key.length > 0, 'LMDB keys are never empty');
    const db = this.databaseOf(key);
    if (!isLongKey(key)) {
      if (value === undefined) db.removeSync(key);
      else db.putSync(key, value);
      return;
    }
    const bucketKey = bucketKeyOf(key);
    const stored = db.get(bucketKey);
    const entries = updateBucket(stored === undefined ? [] : decodeBucket(stored), key, value);
    if (entries.length === 0) db.removeSync(bucketKey);
    else db.putSync(bucketKey, encodeBucket(entries));
  }

  /** The database that holds `key` (a long key's bucket key has the same first byte). */
  private databaseOf(key: Uint8Array): Database<Uint8Array, Uint8Array> {
    const { kv, history } = this.databases;
    return history !== null && key[0] === historyPrefix ? history : kv;
  }

  /** `range` cut at the history's bounds, ascending: each part lies in one database. */
  private parts(range: KvRange): { db: Database<Uint8Array, Uint8Array>; range: KvRange }[] {
    const { kv, history } = this.databases;
    if (history === null) return [{ db: kv, range }];
    const parts: { db: Database<Uint8Array, Uint8Array>; range: KvRange }[] = [];
    const add = (db: Database<Uint8Array, Uint8Array>, lower: Uint8Array | null, upper: Uint8Array | null): void => {
      const start = lower !== null && compareBytes(lower, range.start) > 0 ? lower : range.start;
      const end = upper !== null && compareBytes(upper, range.end) < 0 ? upper : range.end;
      if (compareBytes(start, end) < 0) parts.push({ db, range: { start, end } });
    };
    add(kv, null, historyStart);
    add(history, historyStart, historyEnd);
    add(kv, historyEnd, null);
    return parts;
  }
}

const historyPrefix = 0x68;
const historyStart = Uint8Array.of(historyPrefix);
const historyEnd = Uint8Array.of(historyPrefix + 1);
const kvName = 'kv';
const historyName = 'history';

interface Databases {
  /** The environment's root database: the data itself in a single-database store, else the names. */
  readonly root: Database<Uint8Array, Uint8Array>;
  /** Every table but history (the root itself in a single-database store). */
  readonly kv: Database<Uint8Array, Uint8Array>;
  /** The history table, or null in a single-database store. */
  readonly history: Database<Uint8Array, Uint8Array> | null;
}

function* rangeOf(db: Database<Uint8Array, Uint8Array>, range: KvRange, reverse: boolean): Generator<KvEntry, void, undefined> {
  const bounds = lmdbBounds(range);
  if (compareBytes(bounds.start, bounds.end) >= 0) return;
  if (reverse) {
    // lmdb-js's reverse range includes its start and excludes its end, the opposite of
    // [start, end): seek from the upper bound without an end, stop below the lower one.
    for (const { key, value } of db.getRange({ start: bounds.end, reverse: true })) {
      if (compareBytes(key, bounds.start) < 0) return;
      yield* inRange(range, key, value, true);
    }
    return;
  }
  for (const { key, value } of db.getRange(bounds)) {
    yield* inRange(range, key, value, false);
  }
}

function countOf(db: Database<Uint8Array, Uint8Array>, range: KvRange): number {
  const bounds = lmdbBounds(range);
  if (compareBytes(bounds.start, bounds.end) >= 0) return 0;
  let count = 0;
  // Keys only (no value copied), but a bucket's: it holds several long keys and may straddle a bound.
  for (const key of db.getKeys({ start: bounds.start, end: bounds.end })) {
    if (!isBucketKey(key)) count += isInRange(range, key) ? 1 : 0;
    else for (const entry of decodeBucket(db.get(key) ?? new Uint8Array(0))) count += isInRange(range, entry.key) ? 1 : 0;
  }
  return count;
}

function entriesOf(key: Uint8Array, value: Uint8Array): KvEntry[] {
  return isBucketKey(key) ? decodeBucket(value) : [{ key, value }];
}

/** The store's size limit unless told otherwise: LMDB refuses writes beyond its map size. */
export const defaultMapSizeBytes = 64 * 1024 * 1024 * 1024;

function openDatabase(path: string, commits: CommitMode, mapSizeBytes: number | undefined, encryptionKey: string | undefined): Databases {

  const root = open<Uint8Array, Uint8Array>({
    // LMDB's page cipher (docs/design/encryption.md); the meta pages stay plaintext, which the
    // checkpoints rely on (lmdb-meta.ts reads and restores them).
    ...(encryptionKey === undefined ? {} : { encryptionKey }),
    path,
    keyEncoding: 'binary',
    encoding: 'binary',
    // 8 KiB pages allow 4026-byte keys; longer ones go to buckets (long-key-bucket.ts).
    pageSize: 8192,
    mapSize: mapSizeBytes ?? defaultMapSizeBytes,
    compression: false,
    cache: false,
    noSync: commits === 'deferred',
    // Plain synced commits: overlappingSync's flush happens inside the commit call anyway.
    overlappingSync: false,
    // Never: see the top of this file.
    useWritemap: false,
    maxDbs: 4,
  });
  // A root database with anything but the two names holds the data itself (a store written
  // before the split): it stays a single database. An empty one starts split.
  // (lmdb-js stores a database's name with its terminating NUL.)
  const names = new Set([`${kvName}\0`, `${historyName}\0`]);
  let single = false;
  for (const key of root.getKeys({ limit: 3 })) {
    if (!names.has(Buffer.from(key).toString('latin1'))) single = true;
  }
  if (single) return { root, kv: root, history: null };
  const sub = { keyEncoding: 'binary', encoding: 'binary', compression: false, cache: false } as const;
  const kv = root.openDB<Uint8Array, Uint8Array>({ name: kvName, ...sub });
  const history = root.openDB<Uint8Array, Uint8Array>({ name: historyName, ...sub });
  return { root, kv, history };
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
