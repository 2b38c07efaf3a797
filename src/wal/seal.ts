// Encryption at rest of WAL records (docs/design/encryption.md). An encrypted segment has a data
// key of its own, made when the segment is created and stored wrapped in its header (the wrap is
// opaque here: the node's keys module makes and opens it). The CRC chain covers the sealed bytes,
// so damage is still found, and named by file and offset, before decryption.
//
// Two forms. Format 2 segments seal every record but the header and the batch records (a write's
// length, which recovery needs to size a torn write) on its own with AES-256-GCM: nonce (12
// random bytes) | ciphertext | tag (16). Format 3 segments (this build writes them) seal each
// write's records together, one AES-GCM call per group commit instead of one per entry (a call
// costs ~4 µs whatever its length, the cipher's work on a small entry a tenth of it): the records
// keep their frames and lengths, each holding its slice of the write's ciphertext, and the batch
// record that opens the write carries the nonce and the tag after the length. The additional data
// is each record's type and length in order, so no record can be moved, dropped, split or retyped
// within the write without failing the tag. A write is opened whole or not at all: recovery keeps
// no record of a torn write (none of them was acknowledged: its fdatasync never returned). The
// records a new segment restates before its first write (hard state, snapshot marker) are sealed
// one by one, as in format 2.
//
// Nonces: random per record, from the CSPRNG. No counter is kept, so nothing a crash loses can
// make one repeat (a torn tail rewritten after a restart draws new nonces); a key seals at most one
// segment's records (a 64 MiB segment holds at most ~2.4 million), so the chance of two equal
// nonces under one key stays below 2^-53, far inside GCM's bound for random nonces (2^32 records
// per key at 2^-32). The nonces are taken from a pool of CSPRNG bytes filled 4 KiB at a time: one
// randomFillSync call costs as much as the AES-GCM seal itself (~4 µs here, whatever its length),
// and pooled bytes are as random; each pooled byte is used once.
import { createCipheriv, createDecipheriv, randomFillSync } from 'node:crypto';

export const sealOverheadBytes = 12 + 16;

/** Makes and opens segment keys: injected by the node (src/keys), null when encryption is off. */
export interface WalKeys {
  /** A fresh random data key and its wrapped form for a new segment's header. */
  newKey(): { readonly key: Buffer; readonly wrapped: Buffer };
  /** Unwraps a segment's key; throws (naming `path`) for a wrong or missing key-encryption key. */
  openKey(wrapped: Buffer, path: string): Buffer;
}

const noncePool = Buffer.alloc(12 * 341);
let noncePoolAt = noncePool.length;

/** Fills `nonce` (12 bytes) with fresh random bytes from the pool, refilling it when spent. */
function randomNonce(nonce: Buffer): void {
  if (noncePoolAt + 12 > noncePool.length) {
    randomFillSync(noncePool);
    noncePoolAt = 0;
  }
  noncePool.copy(nonce, 0, noncePoolAt, noncePoolAt + 12);
  noncePoolAt += 12;
}

export function sealRecord(key: Buffer, payload: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(payload.length + sealOverheadBytes);
  const nonce = out.subarray(0, 12);
  randomNonce(nonce);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  const written = cipher.update(payload).copy(out, 12);
  cipher.final();
  cipher.getAuthTag().copy(out, 12 + written);
  return out;
}

/** The plaintext of a sealed record, or null when it does not authenticate. */
export function openRecord(key: Buffer, sealed: Buffer): Buffer | null {
  if (sealed.length < sealOverheadBytes) return null;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, 12));
    decipher.setAuthTag(sealed.subarray(sealed.length - 16));
    return Buffer.concat([decipher.update(sealed.subarray(12, sealed.length - 16)), decipher.final()]);
  } catch {
    return null;
  }
}

/** What a write-sealed batch record carries after the write's length: nonce | tag. */
export const writeSealBytes = 12 + 16;

export interface PlainRecord {
  readonly type: number;
  readonly payload: Uint8Array;
}

/** Each record's type and length, in order: what the write's tag also covers. */
function writeShape(records: readonly { readonly type: number; readonly payload: Uint8Array }[]): Buffer {
  const shape = Buffer.allocUnsafe(5 * records.length);
  records.forEach((record, i) => {
    shape[5 * i] = record.type;
    shape.writeUInt32LE(record.payload.length, 5 * i + 1);
  });
  return shape;
}

/** One write's records sealed together: their ciphertexts (same lengths) and the nonce | tag. */
export function sealWrite(key: Buffer, records: readonly PlainRecord[]): { payloads: Buffer[]; seal: Buffer } {
  const seal = Buffer.allocUnsafe(writeSealBytes);
  const nonce = seal.subarray(0, 12);
  randomNonce(nonce);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  cipher.setAAD(writeShape(records));
  // GCM is a stream mode: each update gives back as many bytes as it took.
  const payloads = records.map((record) => cipher.update(record.payload));
  cipher.final();
  cipher.getAuthTag().copy(seal, 12);
  return { payloads, seal };
}

/** One write's plaintexts, or null when the write does not authenticate. */
export function openWrite(key: Buffer, seal: Buffer, records: readonly { readonly type: number; readonly payload: Buffer }[]): Buffer[] | null {
  if (seal.length !== writeSealBytes) return null;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, seal.subarray(0, 12));
    decipher.setAAD(writeShape(records));
    decipher.setAuthTag(seal.subarray(12));
    const plains = records.map((record) => decipher.update(record.payload));
    decipher.final();
    return plains;
  } catch {
    return null;
  }
}
