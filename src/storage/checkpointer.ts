// Checkpoints make a store with deferred commits durable without a synced commit on the apply
// path. A deferred commit reaches only the page cache, and after an OS crash the disk may hold
// any mix of the pages written since the last sync, including a meta page that names a tree
// whose pages never arrived. Two things keep one tree intact through that:
//
// 1. A read transaction pins the checkpointed tree. LMDB reuses a freed page only when no reader
//    can still see it, so while the pin is held no later commit overwrites a page of that tree;
//    its pages stay exactly as the checkpoint's sync left them.
// 2. Its meta page is saved in the checkpoint file (checkpoint-record.ts) once the data file's
//    sync has finished. After an OS crash, open() writes that page back into both meta slots,
//    so LMDB opens the pinned tree and ignores whatever later commits half reached the disk.
//
// A checkpoint: take the new pin and read the latest meta page (one synchronous step, so no
// commit falls between them), fdatasync the data file (off the event loop), write and sync the
// record, and only then drop the previous pin: at every moment some durable record names a tree
// whose pages are pinned or were never reused. After a process crash the pin is gone but the
// file is whole (the page cache kept every commit), so open() checkpoints before the first
// commit of the new process. The price: pages freed since the pinned tree are reused only after
// the next checkpoint, so the file grows by about one interval's dirty pages.
import { closeSync, constants, existsSync, fdatasync, fdatasyncSync, openSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Database } from 'lmdb';
import { assert } from '../base/assert.js';
import { CorruptFileError } from '../base/errors.js';
import { checkpointFileName, readCheckpoint, writeCheckpoint, writeCheckpointSync } from './checkpoint-record.js';
import { syncPath } from './boot-marker.js';
import { latestMeta, restoreMetaPages, type MetaPage } from './lmdb-meta.js';

interface Pin {
  done(): void;
}

export class Checkpointer {
  private running: Promise<bigint> | null = null;
  private closed = false;

  private constructor(
    private readonly root: Database<Uint8Array, Uint8Array>,
    private readonly dataPath: string,
    /** Descriptors of state.mdb (read-only: for meta reads and fdatasync) and the checkpoint file. */
    private readonly dataFd: number,
    private readonly recordFd: number,
    private sequence: bigint,
    private pin: Pin,
    /** The transaction id of the tree the newest durable record names. */
    private durable: bigint,
    private readonly onCheckpoint: () => void,
  ) {}

  /**
   * Checkpoints the store as it is (before any commit of this process) and starts taking
   * checkpoints. `root` is the store's open root database, `directory` holds state.mdb.
   */
  static start(root: Database<Uint8Array, Uint8Array>, directory: string, dataPath: string, onCheckpoint: () => void = () => {}): Checkpointer {
    const recordPath = join(directory, checkpointFileName);
    const previous = readCheckpoint(recordPath);
    const dataFd = openSync(dataPath, constants.O_RDONLY);
    try {
      const first = checkpointNow(root, dataFd, dataPath, recordPath, (previous?.sequence ?? 0n) + 1n);
      if (previous === null) syncPath(directory); // the record file's directory entry
      const recordFd = openSync(recordPath, constants.O_RDWR);
      onCheckpoint();
      return new Checkpointer(root, dataPath, dataFd, recordFd, first.sequence, first.pin, first.meta.txnId, onCheckpoint);
    } catch (error) {
      closeSync(dataFd);
      throw error;
    }
  }

  /** The transaction id of the newest tree known to be on disk. */
  get durableTxnId(): bigint {
    return this.durable;
  }

  /**
   * Makes every commit so far durable: resolves once the checkpoint file names the current tree.
   * A call made while one runs waits for it, then takes its own.
   */
  checkpoint(): Promise<bigint> {
    assert(!this.closed, 'checkpoint after close');
    if (this.running !== null) return this.running.then(() => this.checkpoint());
    const run = this.take().finally(() => {
      this.running = null;
    });
    this.running = run;
    return run;
  }

  /** Waits for a running checkpoint, drops the pin and closes the files. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.running?.catch(() => {});
    this.pin.done();
    closeSync(this.dataFd);
    closeSync(this.recordFd);
  }

  private async take(): Promise<bigint> {
    // Synchronous: the pin and the meta page name the same latest tree (or the pin an older one,
    // which protects the newer tree's pages as well).
    const pin = this.root.useReadTransaction() as Pin;
    let meta: MetaPage;
    try {
      meta = latestMeta(this.dataFd, this.dataPath);
    } catch (error) {
      pin.done();
      throw error;
    }
    if (meta.txnId === this.durable) {
      pin.done(); // nothing committed since the last checkpoint
      return meta.txnId;
    }
    assert(meta.txnId > this.durable, 'LMDB transaction ids increase');
    try {
      await datasync(this.dataFd);
      const sequence = this.sequence + 1n;
      await writeCheckpoint(this.recordFd, { sequence, meta });
      this.sequence = sequence;
    } catch (error) {
      pin.done();
      throw error;
    }
    const previous = this.pin;
    this.pin = pin;
    this.durable = meta.txnId;
    previous.done();
    this.onCheckpoint();
    return meta.txnId;
  }
}

/** The open-time checkpoint: synchronous, before the first commit. */
function checkpointNow(root: Database<Uint8Array, Uint8Array>, dataFd: number, dataPath: string, recordPath: string, sequence: bigint) {
  const pin = root.useReadTransaction() as Pin;
  try {
    const meta = latestMeta(dataFd, dataPath);
    fdatasyncSync(dataFd);
    writeCheckpointSync(recordPath, { sequence, meta });
    return { sequence, meta, pin };
  } catch (error) {
    pin.done();
    throw error;
  }
}

const datasync = promisify(fdatasync);

/**
 * After an OS crash, before LMDB opens the file: puts back the meta page of the last checkpoint,
 * whose tree was synced and pinned. Returns null when there is no checkpoint to go back to.
 */
export function restoreCheckpoint(directory: string, dataPath: string): MetaPage | null {
  const record = readCheckpoint(join(directory, checkpointFileName));
  if (record === null || !existsSync(dataPath)) return null;
  const { meta } = record;
  const needed = (Number(meta.lastPage) + 1) * meta.pageSize;
  const size = statSync(dataPath).size;
  if (size < needed) {
    throw new CorruptFileError(dataPath, size,
      `the checkpointed tree (txn ${meta.txnId}) needs ${needed} bytes; the file has ${size}`);
  }
  restoreMetaPages(dataPath, meta);
  // The lock file's reader table and transaction id belong to the crashed boot.
  rmSync(`${dataPath}-lock`, { force: true });
  return meta;
}
