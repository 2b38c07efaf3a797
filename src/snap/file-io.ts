// Small async file helpers for snapshot files. All of it runs on libuv's thread pool, so a
// multi-megabyte snapshot write or fsync never stalls the event loop.
import { closeSync, fstatSync, openSync, promises as fsp, readSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { assert } from '../base/assert.js';
import { SnapshotParser } from './format.js';
import type { SnapshotMeta } from '../raft/index.js';
import type { Keyring } from '../keys/index.js';

export async function syncDir(dir: string): Promise<void> {
  const handle = await fsp.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** mkdir -p, then fsync the parent when the directory is new (its name must survive a crash). */
export async function ensureDir(dir: string): Promise<void> {
  const created = await fsp.mkdir(dir, { recursive: true });
  // mkdir returns the first directory it made: sync the parent of each new one.
  for (let at = dir; created !== undefined && at !== dirname(created); at = dirname(at)) {
    await syncDir(dirname(at));
  }
}

export async function writeAll(
  handle: FileHandle,
  data: Uint8Array,
  position: number,
): Promise<void> {
  let done = 0;
  while (done < data.length) {
    const { bytesWritten } = await handle.write(data, done, data.length - done, position + done);
    done += bytesWritten;
  }
}

/**
 * Reads `path` through a parser in bounded reads (never the whole file at once, unless onData
 * keeps it); `onData` bytes are only valid during the call. Throws CorruptFileError on damage;
 * `partial` accepts a file that stops early (a resumable download).
 */
export async function parseFile(
  path: string,
  options: { onData?: (bytes: Uint8Array) => void; readBytes?: number; partial?: boolean; keyring?: Keyring | null } = {},
): Promise<{ parser: SnapshotParser; sizeBytes: number }> {
  const parser = new SnapshotParser(path, options.onData ?? null, options.keyring ?? null);
  const handle = await fsp.open(path, 'r');
  try {
    const { size } = await handle.stat();
    const readBytes = options.readBytes ?? 1024 * 1024;
    const buffer = Buffer.allocUnsafe(Math.min(readBytes, Math.max(size, 1)));
    let position = 0;
    while (position < size) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
      if (bytesRead === 0) break;
      parser.push(buffer.subarray(0, bytesRead));
      position += bytesRead;
    }
    if (options.partial !== true) parser.finish();
    return { parser, sizeBytes: size };
  } finally {
    await handle.close();
  }
}

/**
 * The data of a snapshot file in bounded pieces, read synchronously (for a restore, itself one
 * synchronous store transaction): the file is never held in memory whole. A piece may be
 * yielded before the rest of its block is checked; damage throws CorruptFileError before the
 * iteration ends, so a restore in one transaction aborts with nothing kept.
 */
export function* snapshotDataSync(path: string, keyring: Keyring | null = null, readBytes = 1024 * 1024): Generator<Uint8Array, void, undefined> {
  const pieces: Uint8Array[] = [];
  const parser = new SnapshotParser(path, (bytes) => pieces.push(Uint8Array.from(bytes)), keyring);
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    const buffer = Buffer.allocUnsafe(Math.min(readBytes, Math.max(size, 1)));
    let position = 0;
    while (position < size) {
      const bytesRead = readSync(fd, buffer, 0, buffer.length, position);
      if (bytesRead === 0) break;
      parser.push(buffer.subarray(0, bytesRead));
      position += bytesRead;
      yield* pieces.splice(0);
    }
    parser.finish();
    yield* pieces.splice(0);
  } finally {
    closeSync(fd);
  }
}

/** Verifies a whole snapshot file and returns its metadata (the data is not kept). */
export async function verifySnapshotFile(
  path: string,
): Promise<{ meta: SnapshotMeta; sizeBytes: number }> {
  const { parser, sizeBytes } = await parseFile(path);
  assert(parser.meta !== null, 'a complete file has metadata');
  return { meta: parser.meta, sizeBytes };
}
