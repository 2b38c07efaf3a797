// Data blocks of Raft snapshot files (src/snap/format.ts) sealed under a data key per file: the
// key is random, wrapped by the active KEK (envelope.ts) into the file's metadata JSON; each block
// is AES-256-GCM with nonce = the block's index (a fresh key per file, so a counter nonce never
// repeats under one key and there is no state a crash could lose) and additional data = that
// index, so a block moved inside the file fails to authenticate. The file's CRC chain covers the
// sealed bytes, so damage is still found and named before anything is decrypted.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { ConfigError } from '../base/config-error.js';
import { unwrapKey, wrapKey } from './envelope.js';
import type { Keyring } from './keyring.js';

const label = 'snapshot-file';
export const blockTagBytes = 16;

/** The wrapped data key as the metadata JSON holds it (base64 fields). */
export interface SealedKeyJson {
  readonly kekId: string;
  readonly iv: string;
  readonly tag: string;
  readonly wrapped: string;
}

export interface BlockSealer {
  readonly sealed: SealedKeyJson;
  /** Block `index`'s plaintext, sealed: ciphertext | 16-byte tag. */
  seal(index: number, plain: Uint8Array): Buffer;
}

/** Block index → plaintext; throws when the block does not authenticate. */
export type BlockUnsealer = (index: number, sealed: Uint8Array) => Buffer;

export function newBlockSealer(keyring: Keyring): BlockSealer {
  const key = randomBytes(32);
  const wrap = wrapKey(keyring.active, key, label);
  return {
    sealed: { kekId: wrap.kekId, iv: wrap.iv.toString('base64'), tag: wrap.tag.toString('base64'), wrapped: wrap.wrapped.toString('base64') },
    seal(index, plain) {
      const cipher = createCipheriv('aes-256-gcm', key, nonceOf(index));
      cipher.setAAD(nonceOf(index));
      return Buffer.concat([cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
    },
  };
}

/** Unwraps a file's data key: no keyring or the wrong one is refused naming the file and the key id. */
export function openBlockUnsealer(keyring: Keyring | null, sealed: SealedKeyJson, path: string): BlockUnsealer {
  if (keyring === null) {
    throw new ConfigError(`${path} is encrypted (key-encryption key ${sealed.kekId}); start with --encryption-key-file or --encryption-key-command`);
  }
  const key = unwrapKey(keyring, {
    kekId: sealed.kekId, iv: Buffer.from(sealed.iv, 'base64'), tag: Buffer.from(sealed.tag, 'base64'), wrapped: Buffer.from(sealed.wrapped, 'base64'),
  }, label, path);
  return (index, bytes) => {
    if (bytes.length < blockTagBytes) throw new Error('block shorter than its tag');
    const body = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const decipher = createDecipheriv('aes-256-gcm', key, nonceOf(index));
    decipher.setAAD(nonceOf(index));
    decipher.setAuthTag(body.subarray(body.length - blockTagBytes));
    return Buffer.concat([decipher.update(body.subarray(0, body.length - blockTagBytes)), decipher.final()]);
  };
}

export function isSealedKeyJson(value: unknown): value is SealedKeyJson {
  if (typeof value !== 'object' || value === null) return false;
  const json = value as Record<string, unknown>;
  return ['kekId', 'iv', 'tag', 'wrapped'].every((name) => typeof json[name] === 'string');
}

function nonceOf(index: number): Buffer {
  const nonce = Buffer.alloc(12);
  nonce.writeUIntBE(index, 6, 6);
  return nonce;
}
