// The MVCC store as the driver's state machine: entries in, outcomes out, snapshots as bytes.
import type { Entry, Snapshot } from '../raft/index.js';
import type { ApplyOutcome, MvccStore } from '../mvcc/index.js';
import type { StateMachine } from './types.js';
import { snapshotEncodeChunkBytes } from '../base/limits.js';

export class KvStateMachine implements StateMachine<ApplyOutcome> {
  constructor(readonly store: MvccStore) {}

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
    this.store.restore([snapshot.data]);
  }
}
