// Envelope encryption of data keys: a data key (DEK) is random, one per encrypted file, and is
// stored only wrapped (AES-256-GCM) by a key-encryption key (KEK, keyring.ts), together with that
// KEK's id. The GCM tag authenticates the wrap: a wrong KEK (or a damaged wrapped key) fails here,
// before the data key is used, so a node with the wrong key is told so by name instead of reading
// garbage (LMDB's page cipher has no authentication of its own; docs/design/encryption.md).
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { ConfigError } from '../base/config-error.js';
import type { Keyring, Kek } from './keyring.js';

export interface WrappedKey {
  readonly kekId: string;
  /** 12-byte GCM nonce, random per wrap (a KEK wraps few keys: 2^-32 collision bound is far). */
  readonly iv: Buffer;
  readonly wrapped: Buffer;
  readonly tag: Buffer;
}

/** Wraps `dek` with `kek`; `label` (the file's kind) is authenticated so a wrap cannot be moved between kinds. */
export function wrapKey(kek: Kek, dek: Uint8Array, label: string): WrappedKey {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', kek.key, iv);
  cipher.setAAD(Buffer.from(`baton-dek\0${label}\0${kek.id}`));
  const wrapped = Buffer.concat([cipher.update(dek), cipher.final()]);
  return { kekId: kek.id, iv, wrapped, tag: cipher.getAuthTag() };
}

/** The KEK a wrap needs is not in the keyring, or it does not open the wrap: the wrong key. */
export class WrongKeyError extends ConfigError {
  override name = 'WrongKeyError';
}

/** Unwraps a data key; `path` is the file it belongs to, named in the refusal. */
export function unwrapKey(keyring: Keyring, wrap: WrappedKey, label: string, path: string): Buffer {
  const kek = keyring.byId.get(wrap.kekId);
  if (kek === undefined) {
    const have = [...keyring.byId.keys()].join(', ');
    throw new WrongKeyError(`${path}: encrypted under key-encryption key ${wrap.kekId}, which is not among the configured keys (${have})`);
  }
  try {
    const decipher = createDecipheriv('aes-256-gcm', kek.key, wrap.iv);
    decipher.setAAD(Buffer.from(`baton-dek\0${label}\0${kek.id}`));
    decipher.setAuthTag(wrap.tag);
    return Buffer.concat([decipher.update(wrap.wrapped), decipher.final()]);
  } catch {
    // The id matched, so the key is right: the wrapped key itself is damaged.
    throw new WrongKeyError(`${path}: the wrapped data key does not authenticate under key ${wrap.kekId} (the key file is damaged)`);
  }
}
