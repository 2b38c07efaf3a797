// Vocabulary of the write-ahead log. The WAL is an edge (it does disk I/O), but its record
// framing, CRC chaining, scanning and replay are pure functions over buffers so they can be
// tested without a disk; only recover.ts, io-ops.ts and wal.ts touch files.
import type { WalKeys } from './seal.js';
import type { Entry, HardState, SnapshotMeta } from '../raft/index.js';

export const RecordType = {
  segmentHeader: 1,
  entry: 2,
  hardState: 3,
  snapshot: 4,
  /** Starts every group-commit write: its payload is the write's length in bytes (u32). */
  batch: 5,
} as const;
export type RecordType = (typeof RecordType)[keyof typeof RecordType];

/** Where log lines go (one line per torn-tail truncation, stray temp file, ...). */
export interface WalLogger {
  warn(message: string): void;
}

export interface WalOptions {
  /** Size of a preallocated segment; a single record larger than this gets a larger segment. */
  readonly segmentBytes?: number;
  /**
   * The most bytes one group commit writes into a segment before its fdatasync (a lone larger
   * record is written alone). A crash can only tear the last write; recovery bounds it by the
   * write's batch record, or by this cap when that record itself is unreadable.
   */
  readonly writeBytesMax?: number;
  readonly logger?: WalLogger;
  /** Encryption at rest: new segments are encrypted, encrypted ones opened (seal.ts). */
  readonly keys?: WalKeys | null;
  /**
   * The index of the snapshot the caller restores from; recovered entries start after it.
   * Defaults to the WAL's latest snapshot marker. An older one (the newest snapshot file was
   * damaged) works while the log still holds every entry after it; else CorruptFileError.
   */
  readonly restoreIndex?: number;
  /** 'worker' (default) syncs on a worker thread; 'inline' runs I/O on the caller's thread. */
  readonly executor?: 'worker' | 'inline' | WalExecutor;
}

export const walDefaults = {
  segmentBytes: 64 * 1024 * 1024,
  writeBytesMax: 4 * 1024 * 1024,
} as const;

/** What the WAL held when it was opened. */
export interface RecoveredWal {
  /** The latest persisted hard state ({0, 0, 0} on first boot). */
  readonly hardState: HardState;
  /** The latest snapshot marker: the log starts after `snapshotMeta.index`. */
  readonly snapshotMeta: SnapshotMeta | null;
  /** Entries after the restore point (the latest snapshot marker by default), contiguous. */
  readonly entries: readonly Entry[];
  /** Set when a torn tail was truncated: which file and from which byte offset. */
  readonly truncated: { readonly path: string; readonly offset: number } | null;
}

/** One encoded record waiting for the disk, with the log's state right after it. */
export interface PendingRecord {
  readonly frameType: RecordType;
  readonly payload: Uint8Array;
  /** Log state once this record is applied: a new segment restates it after a rollover. */
  readonly lastIndexAfter: number;
  readonly hardStateAfter: HardState;
  readonly snapshotAfter: SnapshotMeta | null;
}

/** The parsed segment header (first record of every segment file). */
export interface SegmentHeader {
  readonly seq: number;
  /** The log's lastIndex + 1 when the segment was created (entries may later overwrite below). */
  readonly firstIndex: number;
  /** CRC of the previous segment's last record: the chain continues across files. */
  readonly chainSeed: number;
  readonly writeBytesMax: number;
  /** An encrypted segment's data key, wrapped (seal.ts); null: the segment is plaintext. */
  readonly wrappedKey: Buffer | null;
  /** An encrypted segment whose writes are sealed whole (format 3, seal.ts); else one by one. */
  readonly sealsWrites?: boolean;
}

/** Disk work for the executor: plain data, so it can cross to a worker thread. */
export type WalOp =
  | {
      readonly type: 'create';
      readonly seq: number;
      readonly path: string;
      readonly tmpPath: string;
      readonly sizeBytes: number;
      /** A zero-filled, synced file of sizeBytes prepared ahead of time, or null to fill now. */
      readonly sparePath: string | null;
      /** Header plus restated hard state and snapshot marker, synced before the rename. */
      readonly prefix: Uint8Array;
    }
  | { readonly type: 'open'; readonly seq: number; readonly path: string }
  | {
      readonly type: 'write';
      readonly seq: number;
      readonly offset: number;
      readonly data: Uint8Array;
    }
  | { readonly type: 'sync'; readonly seq: number }
  | { readonly type: 'close'; readonly seq: number }
  | { readonly type: 'unlink'; readonly paths: readonly string[]; readonly dir: string };

/** Runs batches of ops in order, one batch at a time. */
export interface WalExecutor {
  run(ops: readonly WalOp[]): Promise<void>;
  close(): Promise<void>;
}
