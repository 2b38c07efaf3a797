// The durable KvEngine: one LMDB environment, binary keys and values, every write batch one
// `transactionSync` (committed and flushed to disk before it returns). No noSync, no writemap:
// both trade crash safety for speed (../shared/guides/dependencies.md). Nothing else writes to
// this environment, so no async lmdb writes can split a batch.
import { mkdirSync, statSync } from 'node:fs';
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
import type { LmdbEngineOptions } from './types.js';

const dataFileName = 'state.mdb';

export class LmdbEngine implements KvEngine {
  private inWrite = false;

  private constructor(
    private readonly db: Database<Uint8Array, Uint8Array>,
    readonly path: string,
  ) {}

  /** Opens (or creates) the store in directory `options.directory`. */
  static open(options: LmdbEngineOptions): LmdbEngine {
    mkdirSync(options.directory, { recursive: true });
    const path = join(options.directory, dataFileName);
    const db = open<Uint8Array, Uint8Array>({
      path,
      keyEncoding: 'binary',
      encoding: 'binary',
      // 8 KiB pages allow 4026-byte keys; longer ones go to buckets (long-key-bucket.ts).
      pageSize: 8192,
      mapSize: options.mapSizeBytes ?? 64 * 1024 * 1024 * 1024,
      compression: false,
      cache: false,
      noSync: false,
      useWritemap: false,
    });
    return new LmdbEngine(db, path);
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
    for (const { key, value } of this.db.getRange(bounds)) {
      yield* inRange(range, key, value);
    }
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

  async close(): Promise<void> {
    await this.db.close();
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

function* inRange(range: KvRange, key: Uint8Array, value: Uint8Array): Generator<KvEntry> {
  const entries = isBucketKey(key) ? decodeBucket(value) : [{ key, value }];
  for (const entry of entries) {
    if (compareBytes(entry.key, range.start) >= 0 && compareBytes(entry.key, range.end) < 0) {
      yield entry;
    }
  }
}
