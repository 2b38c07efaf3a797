// Key-encryption keys (KEKs): 32-byte AES-256 keys the operator supplies, from a file
// (--encryption-key-file) or from a command that prints them (--encryption-key-command, the
// plugin point for a KMS or a secret manager). One key per line, hex (64 digits) or, for a file
// holding exactly 32 bytes, raw. The first key is the active one: every data key wrapped from now
// on is wrapped by it; the others stay only to unwrap data keys written before a rotation. A KEK
// is named by its id, a hash of the key (never the key): the id is stored beside every wrapped data
// key, so a file names the KEK it needs and `baton keys status` can say which ids are still in use.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ConfigError } from '../base/config-error.js';

export const kekBytes = 32;

export interface Kek {
  /** 16 hex digits of SHA-256 over a label and the key: names the key without revealing it. */
  readonly id: string;
  readonly key: Buffer;
}

export interface Keyring {
  /** Wraps every new data key. */
  readonly active: Kek;
  /** Every key by id, the active one included. */
  readonly byId: ReadonlyMap<string, Kek>;
}

export type KeySource = { readonly file: string } | { readonly command: string };

export function kekId(key: Uint8Array): string {
  return createHash('sha256').update('baton-kek-id\0').update(key).digest('hex').slice(0, 16);
}

/** Builds a keyring from keys, active first. */
export function keyringOf(keys: readonly Uint8Array[]): Keyring {
  if (keys.length === 0) throw new ConfigError('encryption: no key-encryption key given');
  const byId = new Map<string, Kek>();
  for (const raw of keys) {
    if (raw.length !== kekBytes) throw new ConfigError(`encryption: a key-encryption key must be ${kekBytes} bytes, got ${raw.length}`);
    const kek = { id: kekId(raw), key: Buffer.from(raw) };
    if (!byId.has(kek.id)) byId.set(kek.id, kek);
  }
  const active = byId.get(kekId(keys[0] as Uint8Array)) as Kek;
  return { active, byId };
}

/** Reads the keyring from its source; a bad file, command or key stops the node naming the source. */
export function loadKeyring(source: KeySource): Keyring {
  let bytes: Buffer;
  let what: string;
  if ('file' in source) {
    what = `--encryption-key-file ${source.file}`;
    try {
      bytes = readFileSync(source.file);
    } catch (error) {
      throw new ConfigError(`${what}: ${(error as Error).message}`);
    }
  } else {
    what = `--encryption-key-command ${JSON.stringify(source.command)}`;
    try {
      // Through the shell, as an operator writes it; bounded so a hung KMS cannot hang the start.
      bytes = execFileSync('/bin/sh', ['-c', source.command], { timeout: 30_000, maxBuffer: 64 * 1024, stdio: ['ignore', 'pipe', 'inherit'] });
    } catch (error) {
      throw new ConfigError(`${what} failed: ${(error as Error).message.split('\n')[0]}`);
    }
  }
  try {
    return keyringOf(parseKeys(bytes));
  } catch (error) {
    throw new ConfigError(`${what}: ${(error as Error).message}`);
  }
}

/** Keys from a key file's bytes: exactly 32 raw bytes, or hex keys one a line ('#' comments). */
export function parseKeys(bytes: Buffer): Buffer[] {
  const text = bytes.toString('latin1');
  const lines = text.split('\n').map((line) => line.trim()).filter((line) => line !== '' && !line.startsWith('#'));
  if (lines.length > 0 && lines.every((line) => /^[0-9a-fA-F]{64}$/.test(line))) {
    return lines.map((line) => Buffer.from(line, 'hex'));
  }
  if (bytes.length === kekBytes) return [Buffer.from(bytes)];
  throw new Error(`expected ${kekBytes} raw bytes or lines of 64 hex digits`);
}
