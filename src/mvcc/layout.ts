// Where everything lives in the engine's single ordered key space. One byte of prefix per table;
// integers are big-endian so byte order is numeric order.
//
//   0x01                                  meta (applied index, revision, ...): sorts first, so a
//                                         snapshot stream starts with it
//   'd' requestId                         dedup record (outcome of a mutation with a Request-ID)
//   'e' proposedAtMs:8 requestId          dedup expiry index, oldest first
//   'h' revision:8 seq:4                  history: the events of each revision, in order
//   'k' key                               current value and metadata of each live key
//   'l' lease:8 key                       which keys a lease holds
//   'r' escaped(key) 00 00 revision:8     per-key revision index -> seq of the event in 'h'
//                                         (big-endian; format 1: 4 bytes, 2: the fewest, none
//                                         for seq 0)
//   's' member:8                          dedup clock: a proposer's last stamp and the clock then
import { assert } from '../base/assert.js';
import {
  concatBytes,
  emptyBytes,
  escapeKey,
  escapedKeyEnd,
  prefixEnd,
  readU32,
  readU64,
  u64Bytes,
  unescapeKey,
  writeU32,
  writeU64,
} from './bytes.js';
import type { KvRange, StoreFormat } from './types.js';

export const metaKey = Uint8Array.of(0x01);
export const tablePrefix = {
  dedup: Uint8Array.of(0x64),
  expiry: Uint8Array.of(0x65),
  history: Uint8Array.of(0x68),
  current: Uint8Array.of(0x6b),
  lease: Uint8Array.of(0x6c),
  revisionIndex: Uint8Array.of(0x72),
  dedupSource: Uint8Array.of(0x73),
} as const;

/**
 * The tables whose values hold data a reader of the disk must not see (encryption at rest seals
 * these: src/keys/sealed-engine.ts): the members' record (URLs), the policy (users' password
 * hashes, the token key), namespace ownership, dedup outcomes (answers may carry values), history
 * and current values. The others hold only numbers (the meta record, revision index, lease
 * grants and counter, dedup clock and expiry) or nothing, and their keys are visible anyway.
 */
export const tablesWithData: ReadonlySet<number> = new Set([0x02, 0x03, 0x04, 0x64, 0x68, 0x6b]);

export function tableRange(prefix: Uint8Array): KvRange {
  return { start: prefix, end: prefixEnd(prefix) };
}

export function currentKey(key: Uint8Array): Uint8Array {
  const out = new Uint8Array(1 + key.length);
  out[0] = tablePrefix.current[0] as number;
  out.set(key, 1);
  return out;
}

/** The user keys in [start, end) as a range of the current table. */
export function currentRange(range: KvRange): KvRange {
  return { start: currentKey(range.start), end: currentKey(range.end) };
}

export function historyKey(revision: number, seq: number): Uint8Array {
  const out = new Uint8Array(13);
  out[0] = tablePrefix.history[0] as number;
  writeU64(out, 1, revision);
  writeU32(out, 9, seq);
  return out;
}

export function parseHistoryKey(engineKey: Uint8Array): { revision: number; seq: number } {
  assert(engineKey.length === 13 && engineKey[0] === tablePrefix.history[0], 'history key');
  return { revision: readU64(engineKey, 1), seq: readU32(engineKey, 9) };
}

export function revisionIndexKey(key: Uint8Array, revision: number): Uint8Array {
  // One buffer, filled in place (written for every applied put and delete).
  const escaped = escapeKey(key);
  const out = new Uint8Array(1 + escaped.length + escapedKeyEnd.length + 8);
  out[0] = tablePrefix.revisionIndex[0] as number;
  out.set(escaped, 1);
  out.set(escapedKeyEnd, 1 + escaped.length);
  writeU64(out, 1 + escaped.length + escapedKeyEnd.length, revision);
  return out;
}

/** One key's revision-index entries from `revision` on. */
export function revisionIndexFrom(key: Uint8Array, revision: number): KvRange {
  const start = revisionIndexKey(key, revision);
  // The key's entries share everything before the revision: its escaped bytes and end mark.
  return { start, end: prefixEnd(start.subarray(0, start.length - 8)) };
}

/** A revision-index value: the event's seq within its revision. */
export function revisionIndexValue(seq: number, format: StoreFormat): Uint8Array {
  assert(Number.isInteger(seq) && seq >= 0 && seq <= 0xffff_ffff, 'seq is a u32');
  if (format === 1) {
    const out = new Uint8Array(4);
    writeU32(out, 0, seq);
    return out;
  }
  if (seq === 0) return emptyBytes;
  const length = seq < 0x100 ? 1 : seq < 0x1_0000 ? 2 : seq < 0x100_0000 ? 3 : 4;
  const out = new Uint8Array(length);
  for (let i = length - 1, rest = seq; i >= 0; i--, rest = Math.floor(rest / 0x100)) out[i] = rest & 0xff;
  return out;
}

/** The seq a revision-index value holds, in either format (both big-endian). */
export function revisionIndexSeq(value: Uint8Array): number {
  assert(value.length <= 4, 'a revision-index value is at most a u32');
  let seq = 0;
  for (const byte of value) seq = seq * 0x100 + byte;
  return seq;
}

/** Every revision-index entry of the user keys in [start, end). */
export function revisionIndexRange(range: KvRange): KvRange {
  return {
    start: concatBytes([tablePrefix.revisionIndex, escapeKey(range.start)]),
    end: concatBytes([tablePrefix.revisionIndex, escapeKey(range.end)]),
  };
}

export function parseRevisionIndexKey(engineKey: Uint8Array): { key: Uint8Array; revision: number } {
  assert(engineKey[0] === tablePrefix.revisionIndex[0], 'revision index key');
  const { key, next } = unescapeKey(engineKey, 1);
  assert(next + 8 === engineKey.length, 'revision index key length');
  return { key, revision: readU64(engineKey, next) };
}

export function leaseKey(lease: number, key: Uint8Array): Uint8Array {
  return concatBytes([tablePrefix.lease, u64Bytes(lease), key]);
}

export function leaseRange(lease: number): KvRange {
  const start = concatBytes([tablePrefix.lease, u64Bytes(lease)]);
  return { start, end: prefixEnd(start) };
}

export function dedupKey(requestId: Uint8Array): Uint8Array {
  return concatBytes([tablePrefix.dedup, requestId]);
}

export function expiryKey(proposedAtMs: number, requestId: Uint8Array): Uint8Array {
  return concatBytes([tablePrefix.expiry, u64Bytes(proposedAtMs), requestId]);
}

export function parseExpiryKey(engineKey: Uint8Array): { proposedAtMs: number; requestId: Uint8Array } {
  assert(engineKey[0] === tablePrefix.expiry[0] && engineKey.length >= 9, 'expiry key');
  return { proposedAtMs: readU64(engineKey, 1), requestId: engineKey.slice(9) };
}
