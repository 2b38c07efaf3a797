// The MVCC store as the driver's state machine: entries in, outcomes out, snapshots as bytes.
import type { Entry, Snapshot, SnapshotMeta } from '../raft/index.js';
import type { ApplyOutcome, MvccStore } from '../mvcc/index.js';
import type { StateMachine } from './types.js';
import { snapshotEncodeChunkBytes } from '../base/limits.js';

export class KvStateMachine implements StateMachine<ApplyOutcome> {
  constructor(
    readonly store: MvccStore,
    /**
     * The data of a snapshot that arrived as a file (its Snapshot carries no data), read in
     * bounded pieces: a follower's install never holds a whole-store snapshot in memory.
     */
    private readonly snapshotFileData: (meta: SnapshotMeta) => Iterable<Uint8Array> = () => {
      throw new Error('a snapshot without data, and no snapshot files to read it from');
    },
  ) {}

  appliedIndex(): number {
    return this.store.appliedIndex;
  }

  applyBatch(entries: readonly Entry[]): ApplyOutcome[] {
    return this.store.applyBatch(entries);
  }

  snapshotData(): Uint8Array {
    return Buffer.concat([...this.store.snapshot().chunks]);
  }

  snapshotChunks(): Iterable<Uint8Array> {
    // A chunk is encoded in one go on the event loop; requests are served between chunks.
    return this.store.snapshot({ chunkBytesMax: snapshotEncodeChunkBytes }).chunks;
  }

  restore(snapshot: Snapshot): void {
    this.store.restore(snapshot.data.length > 0 ? [snapshot.data] : this.snapshotFileData(snapshot.meta));
  }
}
