// Vocabulary of snapshot files. A snapshot file is self-describing and self-checking, and the
// same bytes travel to a lagging follower: the receiver verifies exactly what the sender stored.
import type { SnapshotMeta } from '../raft/index.js';
import type { Keyring } from '../keys/index.js';

export interface SnapLogger {
  warn(message: string): void;
}

export interface SnapshotStoreOptions {
  readonly logger?: SnapLogger;
  /** Data block size in the file: the granularity of checksums and of damage reports. */
  readonly blockBytes?: number;
  /** Snapshot files kept after a new one is installed (older ones are deleted). */
  readonly keepCount?: number;
  /** Encryption at rest: new files are sealed under the active key; sealed files are read with it. */
  readonly keyring?: Keyring | null;
}

export const snapDefaults = {
  blockBytes: 64 * 1024,
  keepCount: 2,
  chunkBytes: 1024 * 1024,
} as const;

/** A snapshot file on disk, as named: <index>-<term>.snap in 16 hex digits each. */
export interface SnapshotFileInfo {
  readonly path: string;
  readonly fileName: string;
  readonly index: number;
  readonly term: number;
}

/** One piece of a snapshot file for the wire: `bytes` are the file's bytes at `offset`. */
export interface SnapshotChunk {
  readonly offset: number;
  readonly bytes: Uint8Array;
  /** True for the chunk that ends the file. */
  readonly last: boolean;
}

/** What a snapshot policy looks at (all counts since the last snapshot). */
export interface SnapshotPolicyInput {
  readonly appliedIndex: number;
  readonly snapshotIndex: number;
  readonly logBytesSinceSnapshot: number;
}

export interface SnapshotPolicy {
  /** Snapshot once this many entries were applied since the last one. */
  readonly entriesMax: number;
  /** ... or once the log grew by this many bytes since the last one. */
  readonly logBytesMax: number;
}

export type { SnapshotMeta };

/** A snapshot file written in the background: its metadata and its size. */
export interface WrittenSnapshot {
  readonly meta: SnapshotMeta;
  readonly bytes: number;
}
