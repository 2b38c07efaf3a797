// The durable Raft log of a node: the WAL for entries and hard state, snapshot files beside it.
// The log starts after a point that something durable covers: a snapshot file, or the state
// machine's own store at a checkpoint (its durable applied index). That is made durable before
// the WAL records that the log starts after it, and only then are the segments below released,
// so a crash at any point leaves a log that recovers.
import type { Ready, Snapshot, SnapshotMeta } from '../raft/index.js';
import type { SnapshotStore } from '../snap/index.js';
import type { Wal } from '../wal/index.js';
import type { SnapshotThread } from '../snap/snapshot-thread.js';
import { assert } from '../base/assert.js';
import type { LogStore, WrittenSnapshot } from './types.js';

export interface DurableLogStoreOptions {
  /** Hears how long each Ready's WAL write took. */
  readonly onSyncSeconds?: (seconds: number) => void;
  /** Hears how long each local snapshot took, file to released log. */
  readonly onSnapshotSeconds?: (seconds: number) => void;
  /** Writes local snapshots off the event loop (without it, saveSnapshot streams them here). */
  readonly thread?: SnapshotThread;
  /**
   * The state machine's store is durable at checkpoints: this makes everything applied so far
   * durable and resolves with that applied index. With it the log store offers `checkpoint`.
   */
  readonly checkpointState?: () => Promise<number>;
}

export class DurableLogStore implements LogStore {
  /**
   * Set while a Ready with a leader's snapshot is being persisted. Several Readys may be handed
   * over at once, and their WAL writes must stay in hand-off order: the snapshot's checks await
   * the disk, so later Readys wait for it instead of overtaking it (a later hard state written
   * first made the earlier one look like a commit index going back).
   */
  private snapshotInFlight: Promise<void> | null = null;
  readonly snapshotInBackground?: LogStore['snapshotInBackground'];

  readonly checkpoint?: LogStore['checkpoint'];
  private readonly onSyncSeconds: (seconds: number) => void;
  private readonly onSnapshotSeconds: (seconds: number) => void;

  constructor(
    private readonly wal: Wal,
    private readonly snapshots: SnapshotStore,
    options: DurableLogStoreOptions = {},
  ) {
    this.onSyncSeconds = options.onSyncSeconds ?? (() => {});
    this.onSnapshotSeconds = options.onSnapshotSeconds ?? (() => {});
    const { thread, checkpointState } = options;
    if (thread !== undefined) this.snapshotInBackground = (metaAt) => this.writeInBackground(thread, metaAt);
    if (checkpointState !== undefined) this.checkpoint = (releaseMeta) => this.checkpointThenRelease(checkpointState, releaseMeta);
  }

  async persist(ready: Ready): Promise<void> {
    if (ready.snapshot === null && this.snapshotInFlight === null) return this.persistInOrder(ready);
    const previous = this.snapshotInFlight;
    const run = (async () => {
      if (previous !== null) await previous.catch(() => {});
      await this.persistInOrder(ready);
    })();
    const tracked = run.finally(() => {
      if (this.snapshotInFlight === tracked) this.snapshotInFlight = null;
    });
    tracked.catch(() => {}); // the caller handles `run`'s failure; this copy only orders
    this.snapshotInFlight = tracked;
    return run;
  }

  private async persistInOrder(ready: Ready): Promise<void> {
    const started = performance.now();
    if (ready.snapshot !== null) {
      // A snapshot from the leader arrives as a verified, installed file: not written twice.
      if (!(await this.snapshots.has(ready.snapshot.meta))) {
        // Only a snapshot carrying its data can be written here; one that arrived as a file has it.
        assert(ready.snapshot.data.length > 0, 'a snapshot without data has its file');
        await this.snapshots.save(ready.snapshot.meta, ready.snapshot.data);
      }
      await this.wal.markSnapshot(ready.snapshot.meta);
    }
    if (ready.entries.length > 0 || ready.hardState !== null) {
      await this.wal.save(ready.entries, ready.hardState);
    }
    this.onSyncSeconds((performance.now() - started) / 1000);
  }

  async saveSnapshot(snapshot: Snapshot, chunks?: Iterable<Uint8Array>): Promise<void> {
    const started = performance.now();
    await this.snapshots.save(snapshot.meta, chunks === undefined ? snapshot.data : toAsync(chunks));
    await this.logStartsAfter(snapshot.meta, started);
  }

  private async writeInBackground(
    thread: SnapshotThread,
    metaAt: (index: number) => SnapshotMeta | null,
  ): Promise<WrittenSnapshot | null> {
    const started = performance.now();
    const written = await thread.snapshot(metaAt);
    if (written === null) return null;
    await this.logStartsAfter(written.meta, started);
    return written;
  }

  private async checkpointThenRelease(
    checkpointState: () => Promise<number>,
    releaseMeta: (durableIndex: number) => SnapshotMeta | null,
  ): Promise<{ durableIndex: number; released: SnapshotMeta | null }> {
    const durableIndex = await checkpointState();
    const released = releaseMeta(durableIndex);
    if (released !== null) {
      assert(released.index <= durableIndex, 'the log is released only below the durable state');
      await this.wal.markSnapshot(released);
      await this.wal.releaseBefore(released.index);
    }
    return { durableIndex, released };
  }

  /** A durable snapshot file exists for `meta`: the WAL says the log starts after it, and sheds what it covers. */
  private async logStartsAfter(meta: SnapshotMeta, started: number): Promise<void> {
    await this.wal.markSnapshot(meta);
    await this.wal.releaseBefore(meta.index);
    this.onSnapshotSeconds((performance.now() - started) / 1000);
  }
}

async function* toAsync(chunks: Iterable<Uint8Array>): AsyncIterable<Uint8Array> {
  yield* chunks;
}
