// The doors between a node's driver and its parts. The driver is written against these, so the
// same code runs with the real WAL, LMDB store and TCP transport, or with test doubles.
import type { Entry, MemberId, Ready, Role, Snapshot, SnapshotMeta } from '../raft/index.js';
import type { WrittenSnapshot } from '../snap/types.js';

// Doors defined where their implementations live, listed here with the rest of the driver's.
export type { Timers } from '../base/timers.js';
export type { PeerSender } from '../transport/types.js';
export type { WrittenSnapshot } from '../snap/types.js';

/**
 * A service that hears what the driver did (the list is given to NodeDriver.start, in order).
 * All three run synchronously inside the driver's step, before any proposal's caller resumes.
 */
export interface DriverListener<Outcome> {
  /** Committed entries were applied (in one transaction), with their outcomes in entry order. */
  onApplied?(entries: readonly Entry[], outcomes: readonly Outcome[], appliedIndex: number): void;
  /** A snapshot replaced the state machine's whole state. */
  onRestored?(snapshot: Snapshot): void;
  onLeaderChange?(leader: MemberId, role: Role): void;
}

/** Durable storage for the Raft log: the WAL plus snapshot files. */
export interface LogStore {
  /** Persist a Ready's snapshot, entries and hard state; resolves once durable (fdatasync). */
  persist(ready: Ready): Promise<void>;
  /**
   * Keep a locally made snapshot; the log below it may then be released. With `chunks`, the
   * file is written from them (the state streamed once) instead of from `snapshot.data`.
   */
  saveSnapshot(snapshot: Snapshot, chunks?: Iterable<Uint8Array>): Promise<void>;
  /**
   * Optional, preferred when present: writes a snapshot of the state machine's durable state off
   * the event loop, from a read view of its own (`metaAt` gives the Raft metadata of the index
   * that view holds, or null when it needs no snapshot), then releases the log below it. Resolves
   * once its file is durable, or with null when none was written. The caller compacts the core's
   * log only after that, so a snapshot the core names has its file.
   */
  readonly snapshotInBackground?: (metaAt: (index: number) => SnapshotMeta | null) => Promise<WrittenSnapshot | null>;
  /**
   * Optional, preferred over both snapshot paths when present: the state machine's store is itself
   * the durable state, made durable at checkpoints (no whole-store copy). Makes everything applied
   * so far durable; then, when `releaseMeta(durableIndex)` names an index (the Raft metadata of
   * one at or below it), records that the log starts after it and releases the segments below.
   */
  readonly checkpoint?: (releaseMeta: (durableIndex: number) => SnapshotMeta | null) =>
    Promise<{ readonly durableIndex: number; readonly released: SnapshotMeta | null }>;
}


/** The replicated state machine (MVCC store). Apply is synchronous and deterministic. */
export interface StateMachine<Outcome> {
  appliedIndex(): number;
  /** Apply committed entries in order, in one storage transaction; one outcome per entry. */
  applyBatch(entries: readonly Entry[]): Outcome[];
  /** A consistent copy of the state at appliedIndex(). */
  snapshotData(): Uint8Array;
  /**
   * The same copy as a stream of bounded chunks from one consistent view taken now, so that a
   * snapshot goes to its file without the whole state in memory (optional).
   */
  snapshotChunks?(): Iterable<Uint8Array>;
  /** Replace the whole state with a snapshot's. */
  restore(snapshot: Snapshot): void;
}
