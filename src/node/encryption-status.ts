// Which key-encryption key wraps each encrypted file of a member's data directory, for
// `baton keys status` (docs/design/encryption.md): the store's key file and every WAL segment's
// header. A key id no file names any more can leave the key file.
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
  return files;
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
