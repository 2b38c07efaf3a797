// Which key-encryption key wraps each encrypted file of a member's data directory, for
// `baton keys status` (docs/design/encryption.md): the store's key file(s), every WAL segment's
// header and every Raft snapshot file's metadata. A key id no file names any more can leave the key file.
import { closeSync, existsSync, openSync, readdirSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { recordKeysKekIds, segmentKeyId, storeKeyId } from '../keys/index.js';
import { decodeSegmentHeader, readFrame } from '../wal/index.js';

export interface WrappedFile {
  readonly file: string;
  /** The KEK id, or null for a plaintext file. */
  readonly kekId: string | null;
}

export function wrappedFiles(dataDir: string): WrappedFile[] {
  const db = join(dataDir, 'db');
  const files: WrappedFile[] = [];
  const records = recordKeysKekIds(db);
  if (existsSync(join(db, 'state.mdb'))) {
    // A store that seals its records names the KEK(s) wrapping its data keys in records.key.
    if (records === null) files.push({ file: join(db, 'state.mdb'), kekId: storeKeyId(db) });
    else for (const id of records) files.push({ file: join(db, 'state.mdb'), kekId: id });
  }
  const walDir = join(dataDir, 'wal');
  const names = existsSync(walDir) ? readdirSync(walDir).filter((name) => name.endsWith('.wal')).sort() : [];
  for (const name of names) files.push({ file: join(walDir, name), kekId: segmentKekId(join(walDir, name)) });
  // Raft snapshot files name their data key's KEK in the metadata JSON (src/snap/format.ts).
  const snapDir = join(dataDir, 'snap');
  const snaps = existsSync(snapDir) ? readdirSync(snapDir).filter((name) => name.endsWith('.snap')).sort() : [];
  for (const name of snaps) files.push({ file: join(snapDir, name), kekId: snapshotKekId(join(snapDir, name)) });
  return files;
}

function snapshotKekId(path: string): string | null {
  const head = Buffer.alloc(24 + 64 * 1024);
  const fd = openSync(path, 'r');
  let read: number;
  try {
    read = readSync(fd, head, 0, head.length, 0);
  } finally {
    closeSync(fd);
  }
  if (read < 24) return null;
  const metaBytes = head.readUInt32LE(12);
  try {
    const meta = JSON.parse(head.subarray(24, Math.min(read, 24 + metaBytes)).toString('utf8')) as { sealed?: { kekId?: unknown } };
    return typeof meta.sealed?.kekId === 'string' ? meta.sealed.kekId : null;
  } catch {
    return null; // damaged: start-up names it; status only reports what it can read
  }
}

function segmentKekId(path: string): string | null {
  const head = Buffer.alloc(4096);
  const fd = openSync(path, 'r');
  let read: number;
  try {
    read = readSync(fd, head, 0, head.length, 0);
  } finally {
    closeSync(fd);
  }
  const frame = readFrame(head.subarray(0, read), 0, 0);
  if (frame.kind !== 'record') return null;
  const header = decodeSegmentHeader(frame.payload);
  return typeof header === 'string' || header.wrappedKey === null ? null : segmentKeyId(header.wrappedKey);
}
