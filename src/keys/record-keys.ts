// The data keys of a store whose records Baton seals itself (src/keys/sealed-engine.ts), kept
// wrapped in `db/records.key` beside `db/state.mdb`. The file holds every data key the store's
// records may be sealed under (numbered 1, 2, ...; the highest is active: new writes use it, older
// ones stay to read what they sealed) and `opens`, the count of write opens: each open takes the
// next number, durably (temp file, fsync, rename, directory fsync) before its first seal, and puts
// it in the first 4 bytes of every nonce it makes, so no crash or restart can reuse a nonce.
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ConfigError } from '../base/config-error.js';
import { unwrapKey, wrapKey, type WrappedKey } from './envelope.js';
import type { Keyring } from './keyring.js';

export const recordKeysFileName = 'records.key';
const label = 'store-records';
const format = 1;
/** Data keys per store: a rotation adds one; 255 fits the record's one-byte key number. */
export const recordKeysMax = 255;

interface WrappedJson {
  readonly no: number;
  readonly kekId: string;
  readonly iv: string;
  readonly wrapped: string;
  readonly tag: string;
}

interface RecordKeysFile {
  readonly format: number;
  readonly cipher: 'aes-256-gcm-records';
  readonly opens: number;
  readonly keys: readonly WrappedJson[];
}

export interface RecordKeys {
  /** Data keys by number; the highest is active. */
  readonly byNo: ReadonlyMap<number, Buffer>;
  readonly activeNo: number;
  /** This open's number (the nonce prefix); 0 for a read-only open. */
  readonly openNo: number;
  /** The KEK ids that wrap the keys on disk (after open: the active KEK only). */
  readonly kekIds: readonly string[];
}

export function recordKeysPath(directory: string): string {
  return join(directory, recordKeysFileName);
}

/** Whether the store in `directory` seals its records (its key file exists). */
export function hasRecordKeys(directory: string): boolean {
  return existsSync(recordKeysPath(directory));
}

/**
 * Creates the key file of a new store (one data key) or opens an existing one: unwraps every data
 * key (a wrong KEK is refused naming the file), rewraps them under the active KEK when an older one
 * wraps them, and, for a write open, takes the next open number durably before returning.
 */
export function openRecordKeys(directory: string, keyring: Keyring, options: { create: boolean; write: boolean }): RecordKeys {
  const path = recordKeysPath(directory);
  let file: RecordKeysFile;
  if (!existsSync(path)) {
    if (!options.create) throw new ConfigError(`${path}: missing (the store's record keys)`);
    file = { format, cipher: 'aes-256-gcm-records', opens: 0, keys: [wrapJson(keyring, 1, randomBytes(32))] };
  } else {
    file = readFile(path);
  }
  const byNo = new Map<number, Buffer>();
  for (const wrapped of file.keys) byNo.set(wrapped.no, unwrapKey(keyring, wrapOf(wrapped), `${label}\0${wrapped.no}`, path));
  const activeNo = Math.max(...byNo.keys());
  if (!options.write) return { byNo, activeNo, openNo: 0, kekIds: [...new Set(file.keys.map((k) => k.kekId))] };
  const openNo = file.opens + 1;
  if (openNo > 0xffff_ffff) throw new ConfigError(`${path}: 2^32 opens used; re-add the member to get a fresh store`);
  const keys = file.keys.map((k) => (k.kekId === keyring.active.id ? k : wrapJson(keyring, k.no, byNo.get(k.no) as Buffer)));
  writeFile(path, { ...file, opens: openNo, keys });
  return { byNo, activeNo, openNo, kekIds: [keyring.active.id] };
}

/** Adds a data key (online rotation of the data key: a running node takes it at its next open). */
export function addRecordKey(directory: string, keyring: Keyring): number {
  const path = recordKeysPath(directory);
  const file = readFile(path);
  const no = Math.max(...file.keys.map((k) => k.no)) + 1;
  if (no > recordKeysMax) throw new ConfigError(`${path}: ${recordKeysMax} data keys already`);
  writeFile(path, { ...file, keys: [...file.keys, wrapJson(keyring, no, randomBytes(32))] });
  return no;
}

/**
 * Removes retired data keys from the file (`baton keys retire`). Never the active (highest) key:
 * new records are sealed under it.
 */
export function removeRecordKeys(directory: string, nos: readonly number[]): number[] {
  const path = recordKeysPath(directory);
  const file = readFile(path);
  const activeNo = Math.max(...file.keys.map((k) => k.no));
  const removed = file.keys.filter((k) => k.no !== activeNo && nos.includes(k.no)).map((k) => k.no);
  if (removed.length === 0) return [];
  writeFile(path, { ...file, keys: file.keys.filter((k) => !removed.includes(k.no)) });
  return removed;
}

/** The data key numbers the file holds, ascending (the last is active), or null without a file. */
export function recordKeyNos(directory: string): number[] | null {
  const path = recordKeysPath(directory);
  return existsSync(path) ? readFile(path).keys.map((k) => k.no).sort((a, b) => a - b) : null;
}

/** A data key's id: names it (in the rewrite's status file) without revealing it. */
export function dataKeyId(dek: Uint8Array): string {
  return createHash('sha256').update('baton-data-key-id\0').update(dek).digest('hex').slice(0, 16);
}

/** The KEK ids wrapping the store's record keys (for `baton keys status`), or null for none. */
export function recordKeysKekIds(directory: string): string[] | null {
  const path = recordKeysPath(directory);
  return existsSync(path) ? [...new Set(readFile(path).keys.map((k) => k.kekId))] : null;
}

function wrapJson(keyring: Keyring, no: number, dek: Buffer): WrappedJson {
  const wrap = wrapKey(keyring.active, dek, `${label}\0${no}`);
  return { no, kekId: wrap.kekId, iv: wrap.iv.toString('base64'), wrapped: wrap.wrapped.toString('base64'), tag: wrap.tag.toString('base64') };
}

function wrapOf(json: WrappedJson): WrappedKey {
  return { kekId: json.kekId, iv: Buffer.from(json.iv, 'base64'), wrapped: Buffer.from(json.wrapped, 'base64'), tag: Buffer.from(json.tag, 'base64') };
}

function readFile(path: string): RecordKeysFile {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ConfigError(`${path}: not a readable key file (${(error as Error).message})`);
  }
  const file = value as Partial<RecordKeysFile>;
  const keysOk = Array.isArray(file.keys) && file.keys.length > 0 && file.keys.every((k) =>
    Number.isInteger(k?.no) && k.no >= 1 && k.no <= recordKeysMax && [k.kekId, k.iv, k.wrapped, k.tag].every((f) => typeof f === 'string'));
  if (file.format !== format || file.cipher !== 'aes-256-gcm-records' || !Number.isSafeInteger(file.opens) || !keysOk) {
    throw new ConfigError(`${path}: not a Baton record key file of format ${format}`);
  }
  return file as RecordKeysFile;
}

function writeFile(path: string, file: RecordKeysFile): void {
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
