// The one reader of backup files (`baton snapshot save`, or `etcdctl snapshot save` against the
// etcd facade: the same stream framed as etcd frames it, padding to 512-byte blocks whose last two
// bytes give its length, then the SHA-256 of all before). `snapshot status` and `snapshot restore`
// both read through here, in bounded pieces (never the whole file in memory), so a later layer
// (encrypted backups) plugs in at one place. The stream is checked whole before anything uses it:
// damage or a cut names the file and the offset; another format version names both versions.
import { createHash } from 'node:crypto';
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { CorruptFileError } from '../base/errors.js';
import { decodeSnapshot } from '../mvcc/index.js';
import { isSealedFile, openSealedFile, type Keyring } from '../keys/index.js';

export interface BackupFile {
  readonly path: string;
  /** 'baton' (baton snapshot save) or 'etcdctl' (etcdctl snapshot save, etcd's framing). */
  readonly framing: 'baton' | 'etcdctl';
  readonly sizeBytes: number;
  /**
   * SHA-256 of the whole file (hex): the backup's identity in a restore record. Read after a full
   * pass over chunks() it costs nothing more; before one, it reads the file.
   */
  readonly sha256: string;
  /** The key-encryption key id of an encrypted backup (src/keys/sealed-file.ts), else null. */
  readonly kekId: string | null;
  /** The stream's engine entries (meta included); null when opened with `checkStream: false`. */
  readonly entries: number | null;
  /** The checked snapshot stream, read again from the file in pieces of at most 1 MiB. */
  chunks(): Iterable<Uint8Array>;
}

const pieceBytes = 1024 * 1024;
const blockBytes = 512;
const sha256Bytes = 32;
/** "BTSN": a Baton snapshot stream's first bytes (src/mvcc/snapshot-stream.ts). */
const batonMagic = Buffer.from('BTSN', 'latin1');

/**
 * Opens and checks a backup file; throws CorruptFileError naming the file and offset. An encrypted
 * backup needs `keyring` (refused naming the file and the key id it needs without it, or with
 * the wrong one); its chunks are authenticated as they are read.
 */
export function openBackupFile(path: string, keyring: Keyring | null = null, options: OpenOptions = {}): BackupFile {
  const checkStream = options.checkStream ?? true;
  const sizeBytes = fileSize(path);
  if (sizeBytes > 0 && isSealedFile(path)) return openSealedBackup(path, keyring, checkStream);
  const head = Buffer.alloc(Math.min(batonMagic.length, sizeBytes));
  readAt(path, head, 0);
  if (!head.equals(batonMagic)) {
    throw new CorruptFileError(path, 0, 'not a Baton snapshot (an etcd bbolt snapshot is read by `etcdctl snapshot status`)');
  }
  const bodyBytes = etcdBodyBytes(path, sizeBytes);
  if (bodyBytes !== null) {
    // etcd's framing: the stream is a prefix of the file, the hash is of all of it.
    const sha256 = fileSha256(path, sizeBytes);
    const chunks = (): Iterable<Uint8Array> => readRange(path, 0, bodyBytes);
    const entries = checkStream ? countEntries(path, chunks()) : null;
    return { path, framing: 'etcdctl', sizeBytes, sha256, entries, kekId: null, chunks };
  }
  // Baton's framing: the stream is the whole file, so the file's hash is taken on the way through
  // the first full read of it (the check here, or a restore's), not in a read of its own.
  let sha256: string | null = null;
  const chunks = function* hashing(): Generator<Uint8Array> {
    const whole = sha256 === null ? createHash('sha256') : null;
    for (const piece of readRange(path, 0, sizeBytes)) {
      whole?.update(piece);
      yield piece;
    }
    if (whole !== null) sha256 ??= whole.digest('hex');
  };
  const entries = checkStream ? countEntries(path, chunks()) : null;
  return {
    path, framing: 'baton', sizeBytes, entries, kekId: null, chunks,
    get sha256(): string {
      return (sha256 ??= fileSha256(path, sizeBytes));
    },
  };
}

function fileSha256(path: string, sizeBytes: number): string {
  const whole = createHash('sha256');
  for (const piece of readRange(path, 0, sizeBytes)) whole.update(piece);
  return whole.digest('hex');
}

export interface OpenOptions {
  /**
   * Whether to read the whole stream now (its entries counted, any damage thrown here). A restore
   * passes false: it decodes the stream once as it writes, aborts on damage, and names the file
   * through namingFile(), so the file is not read twice.
   */
  readonly checkStream?: boolean;
}

/** Entries in the stream; damage names the file (and, encrypted, the decrypted stream's offset). */
function countEntries(path: string, chunks: Iterable<Uint8Array>): number {
  let entries = 0;
  try {
    for (const _entry of decodeSnapshot(chunks)) entries++;
  } catch (error) {
    throw namingFile(path, error);
  }
  return entries;
}

/** Reads a backup's whole stream: its entry count, or its damage thrown as the file's. */
export function checkBackupStream(backup: BackupFile): number {
  return countEntries(backup.path, backup.chunks());
}

/**
 * A stream's damage as the file's: the stream's own check names no file, and its offsets are the
 * file's (a plain backup) or the decrypted stream's (an encrypted one, every chunk authenticated,
 * so a stream written wrong); a chunk's own damage already names the file.
 */
export function namingFile(path: string, error: unknown): unknown {
  if (!(error instanceof CorruptFileError) || error.path === path) return error;
  const sealed = sizeOf(path) > 0 && isSealedFile(path);
  return new CorruptFileError(path, error.offset, sealed ? `decrypted stream offset ${error.offset}: ${error.reason}` : error.reason);
}

function openSealedBackup(path: string, keyring: Keyring | null, checkStream: boolean): BackupFile {
  const sealed = openSealedFile(path, keyring);
  const sha256 = fileSha256(path, sealed.sizeBytes);
  const chunks = (): Iterable<Uint8Array> => sealed.plaintext();
  const entries = checkStream ? countEntries(path, chunks()) : null;
  return { path, framing: 'baton', sizeBytes: sealed.sizeBytes, sha256, entries, kekId: sealed.kekId, chunks };
}

function sizeOf(path: string): number {
  try {
    return fileSize(path);
  } catch {
    return 0;
  }
}

/** The stream's length inside etcd's framing when the file has it (size and SHA-256 agree), else null. */
function etcdBodyBytes(path: string, sizeBytes: number): number | null {
  if (sizeBytes < blockBytes + sha256Bytes || sizeBytes % blockBytes !== sha256Bytes) return null;
  const contentBytes = sizeBytes - sha256Bytes;
  const hash = createHash('sha256');
  for (const piece of readRange(path, 0, contentBytes)) hash.update(piece);
  const trailer = Buffer.alloc(sha256Bytes);
  readAt(path, trailer, contentBytes);
  // A Baton stream may happen to have this size: the hash decides.
  if (!hash.digest().equals(trailer)) return null;
  const paddingField = Buffer.alloc(2);
  readAt(path, paddingField, contentBytes - 2);
  const padding = paddingField.readUInt16BE(0);
  if (padding < 2 || padding > blockBytes + 1 || padding > contentBytes) throw new CorruptFileError(path, contentBytes - 2, 'bad padding');
  return contentBytes - padding;
}

function fileSize(path: string): number {
  const fd = openSync(path, 'r');
  try {
    return fstatSync(fd).size;
  } finally {
    closeSync(fd);
  }
}

function readAt(path: string, target: Buffer, position: number): void {
  const fd = openSync(path, 'r');
  try {
    let done = 0;
    while (done < target.length) {
      const read = readSync(fd, target, done, target.length - done, position + done);
      if (read === 0) throw new CorruptFileError(path, position + done, 'truncated');
      done += read;
    }
  } finally {
    closeSync(fd);
  }
}

/** [start, end) of the file in fresh pieces (a consumer may keep them). */
function* readRange(path: string, start: number, end: number): Generator<Uint8Array> {
  const fd = openSync(path, 'r');
  try {
    for (let position = start; position < end; ) {
      const piece = Buffer.alloc(Math.min(pieceBytes, end - position));
      const read = readSync(fd, piece, 0, piece.length, position);
      if (read === 0) throw new CorruptFileError(path, position, 'truncated');
      position += read;
      yield piece.subarray(0, read);
    }
  } finally {
    closeSync(fd);
  }
}
