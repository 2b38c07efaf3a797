// The durable Raft log of a node: the WAL for entries and hard state, snapshot files beside it.
// A snapshot is made durable before the WAL records that the log starts after it, and only then
// are the segments below it released, so a crash at any point leaves a log that recovers.
import type { Ready, Snapshot } from '../raft/index.js';
import type { SnapshotStore } from '../snap/index.js';
import type { Wal } from '../wal/index.js';
import type { LogStore } from './types.js';

export class DurableLogStore implements LogStore {
  constructor(
    private readonly wal: Wal,
    private readonly snapshots: SnapshotStore,
    private readonly onSyncSeconds: (seconds: number) => void = () => {},
    private readonly onSnapshotSeconds: (seconds: number) => void = () => {},
  ) {}

  async persist(ready: Ready): Promise<void> {
    const started = performance.now();
    if (ready.snapshot !== null) {
      // A snapshot from the leader arrives as a verified, installed file: not written twice.
      if (!(await this.snapshots.has(ready.snapshot.meta))) {
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
    await this.wal.markSnapshot(snapshot.meta);
    await this.wal.releaseBefore(snapshot.meta.index);
    this.onSnapshotSeconds((performance.now() - started) / 1000);
  }
}

async function* toAsync(chunks: Iterable<Uint8Array>): AsyncIterable<Uint8Array> {
  yield* chunks;
}
