// Byte helpers for the engine's ordered key space: unsigned lexicographic order, big-endian
// integers (so numeric order equals byte order) and an order-preserving key escape.
import { assert } from '../base/assert.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

export const emptyBytes = new Uint8Array(0);

export function utf8(text: string): Uint8Array {
  return encoder.encode(text);
}

export function fromUtf8(bytes: Uint8Array): string {
  return decoder.decode(bytes);
}

export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const d = (a[i] as number) - (b[i] as number);
    if (d !== 0) return d;
  }
  return a.length - b.length;
}

/** In `sorted` (ascending by key bytes), the first index whose key is >= `key`. */
export function lowerBoundByKey(sorted: readonly { readonly key: Uint8Array }[], key: Uint8Array): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (compareBytes((sorted[middle] as { key: Uint8Array }).key, key) < 0) low = middle + 1;
    else high = middle;
  }
  return low;
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return compareBytes(a, b) === 0;
}

export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  let length = 0;
  for (const part of parts) length += part.length;
  const out = new Uint8Array(length);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

export function startsWith(bytes: Uint8Array, prefix: Uint8Array): boolean {
  if (bytes.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (bytes[i] !== prefix[i]) return false;
  return true;
}

/** The smallest byte string greater than every string that starts with `prefix`. */
export function prefixEnd(prefix: Uint8Array): Uint8Array {
  for (let i = prefix.length - 1; i >= 0; i--) {
    const byte = prefix[i] as number;
    if (byte < 0xff) {
      const out = prefix.slice(0, i + 1);
      out[i] = byte + 1;
      return out;
    }
  }
  // Only an all-0xFF prefix has no end; engine key prefixes are never like that.
  assert(false, 'prefixEnd of an all-0xFF prefix');
}

/** Writes a non-negative safe integer as 8 big-endian bytes. */
export function writeU64(out: Uint8Array, offset: number, value: number): void {
  // The message is built only on failure: this runs several times per applied entry.
  if (!(Number.isSafeInteger(value) && value >= 0)) assert(false, `u64 out of range: ${value}`);
  const high = Math.floor(value / 0x1_0000_0000);
  const low = value >>> 0;
  out[offset] = high >>> 24;
  out[offset + 1] = (high >>> 16) & 0xff;
  out[offset + 2] = (high >>> 8) & 0xff;
  out[offset + 3] = high & 0xff;
  out[offset + 4] = low >>> 24;
  out[offset + 5] = (low >>> 16) & 0xff;
  out[offset + 6] = (low >>> 8) & 0xff;
  out[offset + 7] = low & 0xff;
}

export function readU64(bytes: Uint8Array, offset: number): number {
  assert(offset + 8 <= bytes.length, 'u64 read past the end');
  const high = readU32(bytes, offset);
  const low = readU32(bytes, offset + 4);
  const value = high * 0x1_0000_0000 + low;
  assert(Number.isSafeInteger(value), 'u64 beyond 2^53');
  return value;
}

export function writeU32(out: Uint8Array, offset: number, value: number): void {
  out[offset] = value >>> 24;
  out[offset + 1] = (value >>> 16) & 0xff;
  out[offset + 2] = (value >>> 8) & 0xff;
  out[offset + 3] = value & 0xff;
}

export function readU32(bytes: Uint8Array, offset: number): number {
  assert(offset + 4 <= bytes.length, 'u32 read past the end');
  return (
    ((bytes[offset] as number) * 0x100_0000 +
      ((bytes[offset + 1] as number) << 16) +
      ((bytes[offset + 2] as number) << 8) +
      (bytes[offset + 3] as number)) >>>
    0
  );
}

export function u64Bytes(value: number): Uint8Array {
  const out = new Uint8Array(8);
  writeU64(out, 0, value);
  return out;
}

/**
 * Order-preserving, prefix-preserving escape so a key can be followed by more fields: 0x00
 * becomes 0x00 0x01, and `escapedKeyEnd` (0x00 0x00) terminates. Keys without NUL pass unchanged.
 */
export function escapeKey(key: Uint8Array): Uint8Array {
  let zeros = 0;
  for (const byte of key) if (byte === 0) zeros++;
  if (zeros === 0) return key;
  const out = new Uint8Array(key.length + zeros);
  let j = 0;
  for (const byte of key) {
    out[j++] = byte;
    if (byte === 0) out[j++] = 1;
  }
  return out;
}

export const escapedKeyEnd = new Uint8Array([0, 0]);

/** Reads an escaped key starting at `offset`; returns the key and the offset after its end mark. */
export function unescapeKey(bytes: Uint8Array, offset: number): { key: Uint8Array; next: number } {
  const out: number[] = [];
  let i = offset;
  for (;;) {
    assert(i < bytes.length, 'escaped key without its end mark');
    const byte = bytes[i] as number;
    if (byte !== 0) {
      out.push(byte);
      i++;
      continue;
    }
    const mark = bytes[i + 1];
    if (mark === 0) return { key: Uint8Array.from(out), next: i + 2 };
    assert(mark === 1, 'bad key escape');
    out.push(0);
    i += 2;
  }
}

/** Bytes as a string with one char per byte: a cheap Map key that sorts in byte order. */
export function latin1(bytes: Uint8Array): string {
  let out = '';
  for (let i = 0; i < bytes.length; i += 4096) {
    out += String.fromCharCode(...bytes.subarray(i, i + 4096));
  }
  return out;
}

export function fromLatin1(text: string): Uint8Array {
  const out = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
  return out;
}
