// LMDB keys stop at 4026 bytes (with an 8 KiB page), but Baton keys go to 4096 bytes and the
// state machine prefixes and suffixes them. Keys longer than `inlineKeyBytesMax` therefore share
// a "bucket" stored under their first `inlineKeyBytesMax` bytes plus 0xFF, holding the full keys
// and values sorted. Order is preserved: every inline key is at most `inlineKeyBytesMax` bytes,
// so it compares against a bucket key exactly as against each long key the bucket holds.
import { compareBytes } from '../mvcc/index.js';
import type { KvEntry } from '../mvcc/index.js';

export const inlineKeyBytesMax = 3968;
const bucketMark = 0xff;

export function isLongKey(key: Uint8Array): boolean {
  return key.length > inlineKeyBytesMax;
}

export function isBucketKey(engineKey: Uint8Array): boolean {
  return engineKey.length === inlineKeyBytesMax + 1;
}

export function bucketKeyOf(key: Uint8Array): Uint8Array {
  const out = new Uint8Array(inlineKeyBytesMax + 1);
  out.set(key.subarray(0, inlineKeyBytesMax));
  out[inlineKeyBytesMax] = bucketMark;
  return out;
}

/** LMDB bounds that cover every inline key and bucket that may hold keys in [start, end). */
export function lmdbBounds(range: { start: Uint8Array; end: Uint8Array }): {
  start: Uint8Array;
  end: Uint8Array;
} {
  const start = isLongKey(range.start) ? range.start.subarray(0, inlineKeyBytesMax) : range.start;
  if (!isLongKey(range.end)) return { start, end: range.end };
  const end = new Uint8Array(inlineKeyBytesMax + 2);
  end.set(bucketKeyOf(range.end));
  return { start, end };
}

export function decodeBucket(bytes: Uint8Array): KvEntry[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const entries: KvEntry[] = [];
  let offset = 0;
  while (offset < bytes.length) {
    const keyLength = view.getUint32(offset);
    const key = bytes.slice(offset + 4, offset + 4 + keyLength);
    offset += 4 + keyLength;
    const valueLength = view.getUint32(offset);
    const value = bytes.slice(offset + 4, offset + 4 + valueLength);
    offset += 4 + valueLength;
    entries.push({ key, value });
  }
  return entries;
}

export function encodeBucket(entries: readonly KvEntry[]): Uint8Array {
  let length = 0;
  for (const entry of entries) length += 8 + entry.key.length + entry.value.length;
  const out = new Uint8Array(length);
  const view = new DataView(out.buffer);
  let offset = 0;
  for (const entry of entries) {
    view.setUint32(offset, entry.key.length);
    out.set(entry.key, offset + 4);
    offset += 4 + entry.key.length;
    view.setUint32(offset, entry.value.length);
    out.set(entry.value, offset + 4);
    offset += 4 + entry.value.length;
  }
  return out;
}

/** The bucket after setting (value) or removing (undefined) `key`, still sorted. */
export function updateBucket(
  entries: readonly KvEntry[],
  key: Uint8Array,
  value: Uint8Array | undefined,
): KvEntry[] {
  const kept = entries.filter((entry) => compareBytes(entry.key, key) !== 0);
  if (value !== undefined) kept.push({ key: key.slice(), value });
  return kept.sort((a, b) => compareBytes(a.key, b.key));
}
