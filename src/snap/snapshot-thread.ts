// Local snapshots written by a worker thread. A snapshot streams the whole store (every key and
// all of its history) through encoding, checksums and the file; on the event loop that took a
// quarter of a member's main thread for seconds at a time, and put p99 doubled whenever any member
// of the cell snapshotted. The thread reads the LMDB store through its own read transaction (one
// consistent view, like the main thread's), so the snapshot's index is whatever that view holds:
// the thread asks for that index's Raft metadata, writes and syncs the file, and reports it; the
// caller compacts the log only then, so a snapshot the core names always has its file.
import { Worker } from 'node:worker_threads';
import { assert } from '../base/assert.js';
import type { SnapshotMeta } from '../raft/index.js';
import type { CommitMode } from '../storage/index.js';
import type { WrittenSnapshot } from './types.js';

/** What the thread is started with. */
export interface SnapshotThreadData {
  /** The LMDB store's directory (a node's `db/`) and how its commits are made. */
  readonly dbDirectory: string;
  readonly commits: CommitMode;
  /** An encrypted store's data key (the thread opens the same environment, so the same key). */
  readonly encryptionKey?: string;
  /** The node's data directory (snapshot files go to its `snap/`). */
  readonly dataDir: string;
  /** Encryption at rest: the key-encryption keys, active first (raw bytes; a thread is in this process). */
  readonly keys?: readonly Uint8Array[];
  /** A store that seals its records: its data keys by number (the thread only reads). */
  readonly recordKeys?: { readonly activeNo: number; readonly keys: readonly (readonly [number, Uint8Array])[] };
}

export type ToSnapshotThread =
  | { readonly type: 'take' }
  | { readonly type: 'meta'; readonly meta: SnapshotMeta | null }
  | { readonly type: 'close' };

export type FromSnapshotThread =
  | { readonly type: 'view'; readonly index: number; readonly term: number }
  | { readonly type: 'done'; readonly written: WrittenSnapshot | null }
  | { readonly type: 'failed'; readonly message: string }
  | { readonly type: 'closed' };

const closeWaitMs = 2000;

export class SnapshotThread {
  private take: {
    readonly metaAt: (index: number) => SnapshotMeta | null;
    readonly resolve: (written: WrittenSnapshot | null) => void;
    readonly reject: (error: Error) => void;
  } | null = null;
  private failure: Error | null = null;
  private closing: Promise<void> | null = null;
  private closedHeard: () => void = () => {};

  /** Started at the first snapshot (see start). */
  private worker: Worker | null = null;

  private constructor(private readonly data: SnapshotThreadData) {}

  /**
   * The thread itself starts with the first snapshot: loading its modules and opening the store
   * costs a member about a third of a second of CPU at boot, and a member whose store is the
   * durable state (checkpoints) writes a snapshot only for a follower that needs one, often never.
   */
  static start(data: SnapshotThreadData): SnapshotThread {
    return new SnapshotThread(data);
  }

  private started(): Worker {
    if (this.worker !== null) return this.worker;
    const worker = new Worker(new URL('./snapshot-thread-entry.js', import.meta.url), { workerData: this.data });
    // An idle thread must not keep a stopping process alive.
    worker.unref();
    worker.on('message', (message: FromSnapshotThread) => this.onMessage(message));
    worker.on('error', (error) => this.onFailure(error));
    worker.on('exit', (code) => {
      if (this.closing === null) this.onFailure(new Error(`the snapshot thread exited (code ${code})`));
      this.closedHeard();
    });
    this.worker = worker;
    return worker;
  }

  /**
   * Writes a durable snapshot file of the store as a read view taken now sees it. `metaAt` gives
   * the Raft metadata for the view's applied index, or null when that index no longer needs a
   * snapshot (then no file is written). Resolves with the file's metadata and size, or null.
   * One at a time.
   */
  snapshot(metaAt: (index: number) => SnapshotMeta | null): Promise<WrittenSnapshot | null> {
    if (this.failure !== null) return Promise.reject(this.failure);
    if (this.closing !== null) return Promise.reject(new Error('the snapshot thread is closed'));
    assert(this.take === null, 'one snapshot at a time');
    return new Promise((resolve, reject) => {
      this.take = { metaAt, resolve, reject };
      this.post({ type: 'take' });
    });
  }

  /** Stops the thread; a snapshot being written is abandoned (its temp file removed, or left for the next start). */
  close(): Promise<void> {
    if (this.worker === null) {
      this.closing ??= Promise.resolve();
      return this.closing;
    }
    const worker = this.worker;
    this.closing ??= new Promise<void>((resolve) => {
      const timer = setTimeout(() => void worker.terminate(), closeWaitMs);
      this.closedHeard = () => {
        clearTimeout(timer);
        resolve();
      };
      this.post({ type: 'close' });
    }).then(async () => {
      await worker.terminate();
      this.take?.reject(new Error('the snapshot thread closed'));
      this.take = null;
    });
    return this.closing;
  }

  private onMessage(message: FromSnapshotThread): void {
    switch (message.type) {
      case 'view': {
        assert(this.take !== null, 'a view answers a take');
        let meta: SnapshotMeta | null = null;
        try {
          meta = this.take.metaAt(message.index);
          // The view and the log must agree on the term of the entry the view applied last.
          if (meta !== null) assert(meta.index === message.index && meta.term === message.term, 'snapshot view matches the log');
        } catch (error) {
          meta = null;
          this.onFailure(error as Error);
        }
        this.post({ type: 'meta', meta });
        return;
      }
      case 'done': {
        const take = this.take;
        this.take = null;
        take?.resolve(message.written);
        return;
      }
      case 'failed':
        this.onFailure(new Error(`snapshot thread: ${message.message}`));
        return;
      case 'closed':
        this.closedHeard();
        return;
    }
  }

  private onFailure(error: Error): void {
    this.failure ??= error;
    const take = this.take;
    this.take = null;
    take?.reject(error);
  }

  private post(message: ToSnapshotThread): void {
    this.started().postMessage(message);
  }
}
