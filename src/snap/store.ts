// Snapshot files under <dataDir>/snap/. Saving is atomic (temp file, fsync, rename, directory
// fsync), so a crash leaves either the old set of snapshots or the new one, never half a file
// under a final name. Loading verifies every checksum; a damaged newest file is skipped for an
// older intact one (with a log line) as long as it still covers what the WAL needs.
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { assert } from '../base/assert.js';
import { CorruptFileError } from '../base/errors.js';
import type { Snapshot, SnapshotMeta } from '../raft/index.js';
import { ensureDir, parseFile, snapshotDataSync, syncDir, verifySnapshotFile, writeAll } from './file-io.js';
import {
  parsePartialFileName, parseSnapshotFileName, snapshotFileName, tmpSuffix,
} from './file-name.js';
import { SnapshotBlockEncoder, encodeSnapshotHead } from './format.js';
import { blockTagBytes, newBlockSealer, type Keyring } from '../keys/index.js';
import { snapDefaults } from './types.js';
import type { SnapLogger, SnapshotFileInfo, SnapshotStoreOptions } from './types.js';

const stderrLogger: SnapLogger = { warn: (message) => process.stderr.write(`${message}\n`) };

export class SnapshotStore {
  readonly dir: string;
  readonly logger: SnapLogger;
  readonly blockBytes: number;
  readonly keepCount: number;
  readonly keyring: Keyring | null;

  constructor(dataDir: string, options: SnapshotStoreOptions = {}) {
    this.dir = join(dataDir, 'snap');
    this.logger = options.logger ?? stderrLogger;
    this.blockBytes = options.blockBytes ?? snapDefaults.blockBytes;
    this.keepCount = options.keepCount ?? snapDefaults.keepCount;
    this.keyring = options.keyring ?? null;
    assert(this.keepCount >= 1 && this.blockBytes >= 1, 'sane snapshot store options');
  }

  /** Creates the directory and removes temp files a crash left behind. */
  async init(): Promise<void> {
    await ensureDir(this.dir);
    for (const name of await fsp.readdir(this.dir)) {
      if (name.endsWith(tmpSuffix)) {
        this.logger.warn(`snap: removing unfinished snapshot ${join(this.dir, name)}`);
        await fsp.unlink(join(this.dir, name));
      }
    }
  }

  /** Snapshot files by index, newest first (partial downloads and temp files excluded). */
  async list(): Promise<SnapshotFileInfo[]> {
    await fsp.mkdir(this.dir, { recursive: true });
    const infos: SnapshotFileInfo[] = [];
    for (const fileName of await fsp.readdir(this.dir)) {
      const parsed = parseSnapshotFileName(fileName);
      if (parsed !== null) infos.push({ ...parsed, fileName, path: join(this.dir, fileName) });
    }
    return infos.sort((a, b) => b.index - a.index || b.term - a.term);
  }

  /**
   * Writes a snapshot atomically and prunes old ones; returns the file path. `data` may be a
   * stream of chunks (e.g. from a state-machine dump) so the whole state need not be in memory.
   */
  async save(meta: SnapshotMeta, data: Uint8Array | AsyncIterable<Uint8Array>): Promise<string> {
    await ensureDir(this.dir);
    const fileName = snapshotFileName(meta.index, meta.term);
    const path = join(this.dir, fileName);
    const tmpPath = path + tmpSuffix;
    const handle = await fsp.open(tmpPath, 'w');
    try {
      const sealer = this.keyring === null ? null : newBlockSealer(this.keyring);
      const head = encodeSnapshotHead(meta, this.blockBytes + (sealer === null ? 0 : blockTagBytes), sealer?.sealed ?? null);
      const encoder = new SnapshotBlockEncoder(head.crc);
      await writeAll(handle, head.bytes, 0);
      let position = head.bytes.length;
      let index = 0;
      for await (const plain of toBlocks(data, this.blockBytes)) {
        const block = sealer === null ? plain : sealer.seal(index++, plain);
        const header = encoder.blockHeader(block);
        // One writev per block; the rare short write falls back to plain writes.
        const { bytesWritten } = await handle.writev([header, block], position);
        if (bytesWritten < header.length + block.length) {
          const rest = Buffer.concat([header, block]).subarray(bytesWritten);
          await writeAll(handle, rest, position + bytesWritten);
        }
        position += header.length + block.length;
      }
      await writeAll(handle, encoder.end(), position);
      await handle.sync();
    } catch (error) {
      await handle.close();
      await fsp.rm(tmpPath, { force: true });
      throw error;
    }
    await handle.close();
    await this.install(tmpPath, path);
    return path;
  }

  /** The path of the snapshot file for `meta` (whether or not it exists). */
  pathOf(meta: Pick<SnapshotMeta, 'index' | 'term'>): string {
    return join(this.dir, snapshotFileName(meta.index, meta.term));
  }

  /**
   * Whether the snapshot file for `meta` exists. Files under final names only ever appear
   * complete, synced and verified (save and install rename them into place), so an existing one
   * need not be written again (e.g. a snapshot received from the leader, then stepped).
   */
  async has(meta: Pick<SnapshotMeta, 'index' | 'term'>): Promise<boolean> {
    try {
      await fsp.access(this.pathOf(meta));
      return true;
    } catch {
      return false;
    }
  }

  /** Moves a complete, synced file into place, makes the name durable, and prunes. */
  async install(fromPath: string, toPath: string): Promise<void> {
    await fsp.rename(fromPath, toPath);
    await syncDir(this.dir);
    await this.prune();
  }

  /**
   * The data of the snapshot file for `meta` in bounded pieces, read synchronously, for a restore
   * in one store transaction (damage throws CorruptFileError before the iteration ends).
   */
  dataOf(meta: Pick<SnapshotMeta, 'index' | 'term'>): Iterable<Uint8Array> {
    return snapshotDataSync(this.pathOf(meta), this.keyring);
  }

  /** Verifies one snapshot file (reading it in bounded pieces) and returns its metadata. */
  async verify(path: string): Promise<SnapshotMeta> {
    return (await verifySnapshotFile(path)).meta;
  }

  /** Loads and verifies one snapshot file; its data is held in memory once. */
  async load(path: string): Promise<Snapshot> {
    const { size } = await fsp.stat(path);
    // The data is smaller than the file, so one allocation of the file's size holds it.
    const target = new Uint8Array(size);
    let at = 0;
    const { parser } = await parseFile(path, {
      onData: (bytes) => {
        target.set(bytes, at);
        at += bytes.length;
      },
      keyring: this.keyring,
    });
    assert(parser.meta !== null && at === parser.plainBytes, 'a verified file has metadata');
    return { meta: parser.meta, data: target.subarray(0, at) };
  }

  /**
   * The newest intact snapshot at or after `minIndex` (the WAL's snapshot marker), or null when
   * none exists and none is needed. Damaged files are skipped with a log line; if nothing intact
   * covers `minIndex`, the first damage found is thrown (the node must not start).
   */
  async loadNewest(options: { minIndex?: number } = {}): Promise<Snapshot | null> {
    const minIndex = options.minIndex ?? 0;
    let damage: CorruptFileError | null = null;
    for (const info of await this.list()) {
      if (info.index < minIndex) break;
      try {
        const snapshot = await this.load(info.path);
        if (snapshot.meta.index !== info.index || snapshot.meta.term !== info.term) {
          throw new CorruptFileError(info.path, 0, 'metadata disagrees with the file name');
        }
        return snapshot;
      } catch (error) {
        if (!(error instanceof CorruptFileError)) throw error;
        this.logger.warn(`snap: skipping damaged snapshot: ${error.message}`);
        damage ??= error;
      }
    }
    if (damage !== null) throw damage;
    if (minIndex > 0) {
      throw new CorruptFileError(this.dir, 0, `no snapshot file at or after index ${minIndex}`);
    }
    return null;
  }

  /** Keeps the newest `keepCount` snapshot files; removes older ones and stale partials. */
  async prune(): Promise<number> {
    const infos = await this.list();
    const doomed = infos.slice(this.keepCount);
    const oldestKept = infos[Math.min(infos.length, this.keepCount) - 1]?.index ?? 0;
    for (const info of doomed) await fsp.rm(info.path, { force: true });
    for (const name of await fsp.readdir(this.dir)) {
      const parsed = parsePartialFileName(name);
      if (parsed !== null && parsed.index <= oldestKept) {
        await fsp.rm(join(this.dir, name), { force: true });
      }
    }
    if (doomed.length > 0) await syncDir(this.dir);
    return doomed.length;
  }
}

/** Re-cuts any input into blocks of at most blockBytes (data is never copied for a big array). */
async function* toBlocks(
  data: Uint8Array | AsyncIterable<Uint8Array>,
  blockBytes: number,
): AsyncGenerator<Uint8Array> {
  const sources: AsyncIterable<Uint8Array> | Uint8Array[] =
    data instanceof Uint8Array ? [data] : data;
  for await (const source of sources) {
    for (let at = 0; at < source.length; at += blockBytes) {
      yield source.subarray(at, Math.min(source.length, at + blockBytes));
    }
  }
}
