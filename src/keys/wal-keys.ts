// Data keys of WAL segments (src/wal/seal.ts): a fresh random key per segment, its wrap stored in
// the segment header as kekId (8 bytes) | iv (12) | tag (16) | wrapped key (32).
import { randomBytes } from 'node:crypto';
import { unwrapKey, wrapKey, WrongKeyError, type WrappedKey } from './envelope.js';
import type { Keyring } from './keyring.js';

const label = 'wal-segment';
const wrapBytes = 8 + 12 + 16 + 32;

/** The same shape as src/wal's WalKeys (the WAL cannot import this folder; the node hands it over). */
export interface SegmentKeys {
  newKey(): { readonly key: Buffer; readonly wrapped: Buffer };
  openKey(wrapped: Buffer, path: string): Buffer;
}

export function segmentKeysOf(keyring: Keyring): SegmentKeys {
  return {
    newKey() {
      const key = randomBytes(32);
      return { key, wrapped: encodeWrap(wrapKey(keyring.active, key, label)) };
    },
    openKey(wrapped, path) {
      return unwrapKey(keyring, decodeWrap(wrapped, path), label, path);
    },
  };
}

/** The key id that wraps a segment's key (for `baton keys status`), from its header's wrap. */
export function segmentKeyId(wrapped: Buffer): string {
  return wrapped.subarray(0, 8).toString('hex');
}

function encodeWrap(wrap: WrappedKey): Buffer {
  return Buffer.concat([Buffer.from(wrap.kekId, 'hex'), wrap.iv, wrap.tag, wrap.wrapped]);
}

function decodeWrap(bytes: Buffer, path: string): WrappedKey {
  if (bytes.length !== wrapBytes) throw new WrongKeyError(`${path}: the wrapped segment key has ${bytes.length} bytes, not ${wrapBytes}`);
  return {
    kekId: bytes.subarray(0, 8).toString('hex'),
    iv: bytes.subarray(8, 20),
    tag: bytes.subarray(20, 36),
    wrapped: bytes.subarray(36),
  };
}
