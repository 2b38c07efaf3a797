// The receiving side of a snapshot transfer: chunks go to <name>.partial; after a dropped
// connection (or a restart) the receiver resumes from the end of the last verified block; at the
// end the whole file is verified and installed atomically. Transport-agnostic: whatever carries
// the bytes only needs `receivedBytes` (to resume) and `write` / `finish`.
import { promises as fsp } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { assert } from '../base/assert.js';
import { CorruptFileError, InvalidArgumentError } from '../base/errors.js';
import type { SnapshotMeta } from '../raft/index.js';
import { ensureDir, parseFile, verifySnapshotFile, writeAll } from './file-io.js';
import {
  parsePartialFileName, partialFileName, snapshotFileName,
} from './file-name.js';
import type { SnapshotStore } from './store.js';

export class SnapshotReceiver {
  // Invariant: receivedBytes <= totalBytes, and the partial file holds exactly receivedBytes.
  private received: number;
  private handle: FileHandle | null;

  private constructor(
    private readonly store: SnapshotStore,
    readonly meta: SnapshotMeta,
    readonly totalBytes: number,
    readonly partialPath: string,
    handle: FileHandle,
    received: number,
  ) {
    this.handle = handle;
    this.received = received;
  }

  /**
   * Starts or resumes receiving the snapshot `meta` of `totalBytes` file bytes. A partial file
   * from an earlier attempt is checked block by block and kept up to its last good block.
   */
  static async open(
    store: SnapshotStore,
    incoming: { meta: SnapshotMeta; totalBytes: number; checksum?: number },
  ): Promise<SnapshotReceiver> {
    assert(Number.isSafeInteger(incoming.totalBytes) && incoming.totalBytes > 0, 'a file size');
    await ensureDir(store.dir);
    const { index, term } = incoming.meta;
    const identity = incoming.checksum === undefined
      ? undefined : { totalBytes: incoming.totalBytes, checksum: incoming.checksum };
    const partialName = partialFileName(index, term, identity);
    const partialPath = join(store.dir, partialName);
    await removeOtherPartials(store.dir, { index, term, keep: partialName });
    const resumeAt = await resumableBytes(partialPath, incoming.meta, store);
    const handle = await fsp.open(partialPath, resumeAt > 0 ? 'r+' : 'w');
    await handle.truncate(resumeAt);
    const { meta, totalBytes } = incoming;
    return new SnapshotReceiver(store, meta, totalBytes, partialPath, handle, resumeAt);
  }

  /** Bytes already stored: where the sender should continue. */
  get receivedBytes(): number {
    return this.received;
  }

  /**
   * Stores file bytes at `offset`. Bytes already held are skipped (a resent chunk); a gap is an
   * error, since the partial file must stay a prefix.
   */
  async write(offset: number, bytes: Uint8Array): Promise<void> {
    const handle = this.openHandle();
    if (offset > this.received) {
      throw new InvalidArgumentError(`chunk at ${offset} leaves a gap after ${this.received}`);
    }
    const fresh = bytes.subarray(Math.min(bytes.length, this.received - offset));
    if (this.received + fresh.length > this.totalBytes) {
      throw new InvalidArgumentError(`chunk runs past the announced ${this.totalBytes} bytes`);
    }
    await writeAll(handle, fresh, this.received);
    this.received += fresh.length;
  }

  /** Verifies the complete file and installs it; returns the installed path. */
  async finish(): Promise<string> {
    const handle = this.openHandle();
    const received = this.received;
    assert(received === this.totalBytes, `received ${received} of ${this.totalBytes} bytes`);
    await handle.sync();
    await handle.close();
    this.handle = null;
    try {
      const { meta } = await verifySnapshotFile(this.partialPath);
      if (meta.index !== this.meta.index || meta.term !== this.meta.term) {
        throw new CorruptFileError(this.partialPath, 0, 'received metadata differs from announced');
      }
    } catch (error) {
      // A bad transfer cannot be resumed from: start over next time.
      await fsp.rm(this.partialPath, { force: true });
      throw error;
    }
    const finalPath = join(this.store.dir, snapshotFileName(this.meta.index, this.meta.term));
    await this.store.install(this.partialPath, finalPath);
    return finalPath;
  }

  /** Stops receiving; the partial file stays for a later resume unless `discard`. */
  async abort(options: { discard?: boolean } = {}): Promise<void> {
    if (this.handle !== null) await this.handle.close();
    this.handle = null;
    if (options.discard === true) await fsp.rm(this.partialPath, { force: true });
  }

  private openHandle(): FileHandle {
    assert(this.handle !== null, 'the receiver is open');
    return this.handle;
  }
}

/** Convenience for a pull-style transport: drain `chunks` (file bytes, in order) and install. */
export async function receiveSnapshot(
  store: SnapshotStore,
  incoming: { meta: SnapshotMeta; totalBytes: number; chunks: AsyncIterable<Uint8Array> },
): Promise<string> {
  const receiver = await SnapshotReceiver.open(store, incoming);
  try {
    // A fresh stream starts at offset 0: bytes already held from an earlier try are skipped.
    let offset = 0;
    for await (const chunk of incoming.chunks) {
      await receiver.write(offset, chunk);
      offset += chunk.length;
    }
    return await receiver.finish();
  } catch (error) {
    await receiver.abort();
    throw error;
  }
}

/**
 * Removes partial downloads of the same snapshot under another identity (a different leader's
 * file for the same index and term): their bytes cannot be continued by this transfer.
 */
async function removeOtherPartials(
  dir: string,
  wanted: { index: number; term: number; keep: string },
): Promise<void> {
  for (const name of await fsp.readdir(dir)) {
    const parsed = parsePartialFileName(name);
    if (parsed === null || name === wanted.keep) continue;
    if (parsed.index === wanted.index && parsed.term === wanted.term) {
      await fsp.rm(join(dir, name), { force: true });
    }
  }
}

async function resumableBytes(
  partialPath: string,
  meta: SnapshotMeta,
  store: SnapshotStore,
): Promise<number> {
  try {
    await fsp.access(partialPath);
  } catch {
    return 0;
  }
  try {
    const { parser } = await parseFile(partialPath, { partial: true });
    const sameSnapshot = parser.meta?.index === meta.index && parser.meta.term === meta.term;
    return sameSnapshot ? parser.verifiedOffset : 0;
  } catch (error) {
    if (!(error instanceof CorruptFileError)) throw error;
    store.logger.warn(`snap: partial download restarts from its last good block: ${error.message}`);
    return error.offset > 0 ? await lastGoodBefore(partialPath, error.offset) : 0;
  }
}

/** Re-parses up to a damaged offset to learn the last verified block boundary before it. */
async function lastGoodBefore(partialPath: string, damagedAt: number): Promise<number> {
  const handle = await fsp.open(partialPath, 'r+');
  try {
    await handle.truncate(damagedAt);
  } finally {
    await handle.close();
  }
  const { parser } = await parseFile(partialPath, { partial: true });
  return parser.verifiedOffset;
}
