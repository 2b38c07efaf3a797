// The LMDB store's data key, kept wrapped in `db/state.key` beside `db/state.mdb`. The store is
// encrypted by LMDB itself (lmdb-js's `encryptionKey`: ChaCha8 over every page but the two meta
// pages, keyed by the page number and transaction id; docs/design/encryption.md says why this
// and not AES-GCM per page). state.key is also the marker that the store is encrypted: with it and
// no keyring the node refuses to start; a keyring and a state.mdb without state.key is a store
// written in plaintext, which is refused too (never opened silently the other way round).
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ConfigError } from '../base/config-error.js';
import { unwrapKey, wrapKey, type WrappedKey } from './envelope.js';
import type { Keyring } from './keyring.js';

export const storeKeyFileName = 'state.key';
const label = 'lmdb-store';
const format = 1;

export interface StoreKeyFile {
  readonly format: number;
  readonly cipher: 'lmdb-chacha8';
  readonly kekId: string;
  readonly iv: string;
  readonly wrapped: string;
  readonly tag: string;
}

export interface StoreKey {
  /** What lmdb-js takes as `encryptionKey`: 32 ASCII characters (24 random bytes, base64). */
  readonly lmdbKey: string;
  /** The id of the KEK that wraps it on disk (after open: the active one). */
  readonly kekId: string;
  /** Whether open rewrapped it under the active KEK (it was under an older one). */
  readonly rewrapped: boolean;
}

/**
 * The store's data key for the store file at `directory/state.mdb`: unwrapped, created (before
 * LMDB creates the file, when `encryptNew`) or null for a plaintext store. A store that has a key
 * file is always opened encrypted, whatever `encryptNew` says. Rewraps a key wrapped by
 * an older KEK under the active one (a rename: the data key, and so the file, are unchanged).
 */
export function openStoreKey(directory: string, dataFileName: string, keyring: Keyring | null, encryptNew = true): StoreKey | null {
  const keyPath = join(directory, storeKeyFileName);
  const dataPath = join(directory, dataFileName);
  if (!existsSync(keyPath)) {
    // encryptNew false: the store stays plaintext (--encryption-store-cipher none, the default).
    if (keyring === null || !encryptNew) return null;
    if (existsSync(dataPath)) {
      throw new ConfigError(`${dataPath}: this store was written without encryption, but encryption is configured (no ${storeKeyFileName} beside it); start without the key, or wipe the member and re-add it to copy a peer's state encrypted`);
    }
    const lmdbKey = randomBytes(24).toString('base64');
    writeKeyFile(keyPath, wrapKey(keyring.active, Buffer.from(lmdbKey, 'latin1'), label));
    return { lmdbKey, kekId: keyring.active.id, rewrapped: false };
  }
  const file = readKeyFile(keyPath);
  if (keyring === null) {
    throw new ConfigError(`${dataPath} is encrypted (${keyPath}, key-encryption key ${file.kekId}); start with --encryption-key-file or --encryption-key-command`);
  }
  const lmdbKey = unwrapKey(keyring, wrapOf(file), label, keyPath).toString('latin1');
  if (file.kekId === keyring.active.id) return { lmdbKey, kekId: file.kekId, rewrapped: false };
  writeKeyFile(keyPath, wrapKey(keyring.active, Buffer.from(lmdbKey, 'latin1'), label));
  return { lmdbKey, kekId: keyring.active.id, rewrapped: true };
}

/** The KEK id a store's key file names, or null for a plaintext store (for `baton keys status`). */
export function storeKeyId(directory: string): string | null {
  const keyPath = join(directory, storeKeyFileName);
  return existsSync(keyPath) ? readKeyFile(keyPath).kekId : null;
}

/** Rewraps a store's data key under the keyring's active KEK (online: a rename). */
export function rewrapStoreKey(directory: string, keyring: Keyring): { from: string; to: string } | null {
  const keyPath = join(directory, storeKeyFileName);
  if (!existsSync(keyPath)) return null;
  const file = readKeyFile(keyPath);
  const dek = unwrapKey(keyring, wrapOf(file), label, keyPath);
  if (file.kekId !== keyring.active.id) writeKeyFile(keyPath, wrapKey(keyring.active, dek, label));
  return { from: file.kekId, to: keyring.active.id };
}

function wrapOf(file: StoreKeyFile): WrappedKey {
  return {
    kekId: file.kekId,
    iv: Buffer.from(file.iv, 'base64'),
    wrapped: Buffer.from(file.wrapped, 'base64'),
    tag: Buffer.from(file.tag, 'base64'),
  };
}

function readKeyFile(path: string): StoreKeyFile {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ConfigError(`${path}: not a readable key file (${(error as Error).message})`);
  }
  const file = value as Partial<StoreKeyFile>;
  const strings = [file.kekId, file.iv, file.wrapped, file.tag].every((field) => typeof field === 'string');
  if (file.format !== format || file.cipher !== 'lmdb-chacha8' || !strings) {
    throw new ConfigError(`${path}: not a Baton store key file of format ${format}`);
  }
  return file as StoreKeyFile;
}

/** Writes the key file durably and atomically (temp file, fsync, rename, directory fsync). */
function writeKeyFile(path: string, wrap: WrappedKey): void {
  const file: StoreKeyFile = {
    format, cipher: 'lmdb-chacha8', kekId: wrap.kekId,
    iv: wrap.iv.toString('base64'), wrapped: wrap.wrapped.toString('base64'), tag: wrap.tag.toString('base64'),
  };
  const temp = `${path}.tmp`;
  const fd = openSync(temp, 'w', 0o600);
  try {
    writeSync(fd, `${JSON.stringify(file)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, path);
  const dir = openSync(dirname(path), 'r');
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
}
