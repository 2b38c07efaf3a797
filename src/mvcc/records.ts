// Binary encodings of what the store keeps: a key's current record, a history event and the
// meta record. Fixed layouts (no maps, no floats) so equal state is equal bytes on every replica.
//
// Two store formats (the meta record's first byte says which one a store writes; see
// `StoreFormat`). Readers take both, record by record: a store upgraded to format 2 keeps the
// format-1 records it wrote before until they are rewritten or compacted away.
//
//   key record, format 1:  u64 createRevision, u64 modRevision, u64 version, u64 lease, value
//   key record, format 2:  u8 0b10_0000cl, varint modRevision,
//                          [unless c: varint version, varint modRevision - createRevision],
//                          [if l: varint lease], value
//                          (c: created at modRevision, so version 1; l: a lease is attached)
//   event, format 1:       u8 type (0 put, 1 delete), u64 revision, u32 + key,
//                          u8 hasPrev [u32 + prevKv record], [put: u32 + kv record]
//   event, format 2:       u8 0b10_0000pd, varint + key, [if p: prevKv record (format 2)]
//                          (d: a delete; p: the key existed before; the revision is the history
//                          key's). A put does not hold its new kv: that is the prevKv of the
//                          key's next event, or its current record if none follows.
//
// A format-1 record starts with a u64 below 2^53 or a type byte, so its first byte is at most
// 0x1f; a format-2 one starts with 0b10xx_xxxx. Compaction deletes only events below the
// compact revision, and the kv a retained event lacks lives in a later event or the current
// table, which compaction never touches: history at or above the compact revision stays complete.
import { assert } from '../base/assert.js';
import { ByteReader, ByteWriter } from './byte-codec.js';
import { emptyBytes, fromUtf8, utf8 } from './bytes.js';
import type { KeyValue, MvccEvent, MvccMeta, StoreFormat } from './types.js';

const recordHeaderBytes = 32;

/** The first byte of a format-2 record: these two bits, then six bits of flags. */
const compactTag = 0x80;
const tagMask = 0xc0;
const recordFlag = { lease: 0x01, created: 0x02 } as const;
const eventFlag = { delete: 0x01, prev: 0x02 } as const;

/** Whether a stored key record or event is in format 2 (else format 1). */
export function isCompact(bytes: Uint8Array): boolean {
  return ((bytes[0] ?? 0) & tagMask) === compactTag;
}

/**
 * The value is a view of `bytes`, not a copy: stored bytes come from an engine read (a copy of
 * its own) or an event being decoded, and nothing writes to them again.
 */
export function decodeRecord(key: string, bytes: Uint8Array, keysOnly = false): KeyValue {
  const reader = new ByteReader(bytes, 'stored', 'key record');
  return isCompact(bytes) ? readRecordCompact(reader, key, keysOnly) : readRecordFixed(reader, key, keysOnly);
}

function readRecordFixed(reader: ByteReader, key: string, keysOnly: boolean): KeyValue {
  const createRevision = reader.u64();
  const modRevision = reader.u64();
  const version = reader.u64();
  const lease = reader.u64();
  const value = keysOnly ? emptyBytes : reader.view(reader.remaining);
  return { key, value, version, createRevision, modRevision, lease };
}

function readRecordCompact(reader: ByteReader, key: string, keysOnly: boolean): KeyValue {
  const tag = reader.u8();
  if ((tag & ~(compactTag | recordFlag.lease | recordFlag.created)) !== 0) reader.fail(`record tag ${tag}`);
  const modRevision = reader.varint();
  let version = 1;
  let createRevision = modRevision;
  if ((tag & recordFlag.created) === 0) {
    version = reader.varint();
    const age = reader.varint();
    if (age > modRevision) reader.fail('created after its last change');
    createRevision = modRevision - age;
  }
  const lease = (tag & recordFlag.lease) === 0 ? 0 : reader.varint();
  const value = keysOnly ? emptyBytes : reader.view(reader.remaining);
  return { key, value, version, createRevision, modRevision, lease };
}

/** The modRevision of a stored record, without decoding the value. */
export function recordModRevision(bytes: Uint8Array): number {
  const reader = new ByteReader(bytes, 'stored', 'key record');
  if (isCompact(bytes)) {
    reader.u8();
    return reader.varint();
  }
  reader.u64();
  return reader.u64();
}

const eventType = { put: 0, delete: 1 } as const;

/**
 * Every applied write encodes a record and an event that go straight into KvWriter.put, which
 * copies them before it returns: they are encoded into this one reused buffer instead of a new
 * allocation each (a third of applying's time was allocating and filling buffers).
 */
const scratch = new ByteWriter(4096);

/** A key's record without its key (the engine key carries it). In the shared scratch: valid
 * until the next scratch encoding. */
export function encodeRecordScratch(kv: KeyValue, format: StoreFormat): Uint8Array {
  writeRecord(scratch.reset(), kv, format);
  return scratch.view();
}

/** A history event, in the shared scratch: valid until the next scratch encoding. */
export function encodeEventScratch(event: MvccEvent, keyBytes: Uint8Array, format: StoreFormat): Uint8Array {
  const writer = scratch.reset();
  if (format === 1) writeEventFixed(writer, event, keyBytes);
  else writeEventCompact(writer, event, keyBytes);
  return writer.view();
}

function writeEventFixed(writer: ByteWriter, event: MvccEvent, keyBytes: Uint8Array): void {
  const { prevKv, kv } = event;
  writer.u8(eventType[event.type]).u64(event.revision).bytes(keyBytes);
  writer.u8(prevKv === null ? 0 : 1);
  if (prevKv !== null) writeRecordFixed(writer.u32(recordHeaderBytes + prevKv.value.length), prevKv);
  if (event.type === 'put') writeRecordFixed(writer.u32(recordHeaderBytes + kv.value.length), kv);
}

function writeEventCompact(writer: ByteWriter, event: MvccEvent, keyBytes: Uint8Array): void {
  const { prevKv } = event;
  const tag = compactTag | (event.type === 'delete' ? eventFlag.delete : 0) | (prevKv === null ? 0 : eventFlag.prev);
  writer.u8(tag).varint(keyBytes.length).raw(keyBytes);
  if (prevKv !== null) writeRecordCompact(writer, prevKv);
}

function writeRecord(writer: ByteWriter, kv: KeyValue, format: StoreFormat): void {
  if (format === 1) writeRecordFixed(writer, kv);
  else writeRecordCompact(writer, kv);
}

function writeRecordFixed(writer: ByteWriter, kv: KeyValue): void {
  writer.u64(kv.createRevision).u64(kv.modRevision).u64(kv.version).u64(kv.lease).raw(kv.value);
}

function writeRecordCompact(writer: ByteWriter, kv: KeyValue): void {
  assert(kv.createRevision <= kv.modRevision && kv.version >= 1, 'a record is created before it changes');
  const created = kv.version === 1 && kv.createRevision === kv.modRevision;
  const tag = compactTag | (created ? recordFlag.created : 0) | (kv.lease === 0 ? 0 : recordFlag.lease);
  writer.u8(tag).varint(kv.modRevision);
  if (!created) writer.varint(kv.version).varint(kv.modRevision - kv.createRevision);
  if (kv.lease !== 0) writer.varint(kv.lease);
  writer.raw(kv.value);
}

/**
 * A history event as stored. `kv` is null for a format-2 put (the store supplies it: see the
 * header); a delete's kv is its tombstone.
 */
export interface StoredEvent {
  readonly type: 'put' | 'delete';
  readonly revision: number;
  readonly key: string;
  readonly kv: KeyValue | null;
  readonly prevKv: KeyValue | null;
}

/** `revision`: the history key's. */
export function decodeStoredEvent(revision: number, bytes: Uint8Array): StoredEvent {
  const reader = new ByteReader(bytes, 'stored', 'history event');
  return isCompact(bytes) ? readEventCompact(reader, revision) : readEventFixed(reader, revision);
}

function readEventFixed(reader: ByteReader, revision: number): StoredEvent {
  const typeCode = reader.u8();
  if (reader.u64() !== revision) reader.fail('the event names another revision than its key');
  const key = reader.string();
  const prevKv = reader.bool() ? decodeRecord(key, reader.bytesView()) : null;
  if (typeCode === eventType.put) {
    const kv = decodeRecord(key, reader.bytesView());
    reader.end();
    return { type: 'put', revision, key, kv, prevKv };
  }
  if (typeCode !== eventType.delete) reader.fail(`event type ${typeCode}`);
  reader.end();
  return { type: 'delete', revision, key, kv: tombstone(key, revision), prevKv };
}

function readEventCompact(reader: ByteReader, revision: number): StoredEvent {
  const tag = reader.u8();
  if ((tag & ~(compactTag | eventFlag.delete | eventFlag.prev)) !== 0) reader.fail(`event tag ${tag}`);
  const key = readKeyCompact(reader);
  let prevKv: KeyValue | null = null;
  if ((tag & eventFlag.prev) !== 0) prevKv = readRecordCompact(reader, key, false);
  reader.end();
  if ((tag & eventFlag.delete) === 0) return { type: 'put', revision, key, kv: null, prevKv };
  return { type: 'delete', revision, key, kv: tombstone(key, revision), prevKv };
}

function readKeyCompact(reader: ByteReader): string {
  const bytes = reader.view(reader.varint());
  try {
    return fromUtf8(bytes);
  } catch {
    return reader.fail('invalid UTF-8');
  }
}

/**
 * A format-2 event's head (its tag and key: the bytes before any prevKv record), the key, and
 * whether a prevKv record follows; null for a format-1 event or bytes whose head does not parse.
 * (The sealed store keeps the prevKv record's seal as it was: src/keys/sealed-event.ts.)
 */
export function compactEventHead(bytes: Uint8Array): { readonly headBytes: number; readonly key: Uint8Array; readonly hasPrev: boolean } | null {
  if (!isCompact(bytes)) return null;
  const reader = new ByteReader(bytes, 'input', 'history event');
  try {
    const tag = reader.u8();
    const key = reader.view(reader.varint());
    return { headBytes: reader.position, key, hasPrev: (tag & eventFlag.prev) !== 0 };
  } catch {
    return null;
  }
}

/** The user key an event is about, as stored (UTF-8), without decoding the rest. */
export function storedEventKey(bytes: Uint8Array): Uint8Array {
  const reader = new ByteReader(bytes, 'stored', 'history event');
  if (isCompact(bytes)) {
    reader.u8();
    return reader.view(reader.varint());
  }
  reader.u8();
  reader.u64();
  return reader.bytesView();
}

/** A key record as format 2 stores it (a format-2 record is already): the content hash's form. */
export function canonicalRecord(bytes: Uint8Array): Uint8Array {
  if (isCompact(bytes)) return bytes;
  const writer = new ByteWriter(bytes.length);
  writeRecordCompact(writer, decodeRecord('', bytes));
  return writer.finish();
}

/** An event as format 2 stores it (see canonicalRecord). */
export function canonicalEvent(revision: number, bytes: Uint8Array): Uint8Array {
  if (isCompact(bytes)) return bytes;
  const event = decodeStoredEvent(revision, bytes);
  const writer = new ByteWriter(bytes.length);
  const kv = event.kv ?? tombstone(event.key, revision);
  writeEventCompact(writer, { type: event.type, revision, kv, prevKv: event.prevKv }, utf8(event.key));
  return writer.finish();
}

/** The event as readers see it; `kv`: a format-2 put's (see StoredEvent), else ignored. */
export function completeEvent(event: StoredEvent, kv: KeyValue | null): MvccEvent {
  const full = event.kv ?? kv;
  assert(full !== null && full.modRevision === event.revision && full.key === event.key, 'the kv of a put at its revision');
  return { type: event.type, revision: event.revision, kv: full, prevKv: event.prevKv };
}

export function tombstone(key: string, revision: number): KeyValue {
  return { key, value: emptyBytes, version: 0, createRevision: 0, modRevision: revision, lease: 0 };
}

/** The store format a store writes: its meta record's first byte (format 1: stores before it). */
export const storeFormatLatest: StoreFormat = 5;
/** The first store format whose cell may be sent leaseGrantBatch (op 19): see StoreFormat. */
export const storeFormatGrantBatch: StoreFormat = 3;
/** The first store format whose cell may be sent leaseRevokeBatch (op 21): see StoreFormat. */
export const storeFormatRevokeBatch: StoreFormat = 4;
/** The first store format whose cell assigns lease ids from its cell's base (lease-state.ts). */
export const storeFormatLeaseIdBase: StoreFormat = 5;

/** A new store writes the latest format; a store with a meta record, the one it names. */
export const initialMeta: MvccMeta = {
  appliedIndex: 0,
  appliedTerm: 0,
  revision: 0,
  compactRevision: 0,
  dedupClockMs: 0,
  storeFormat: storeFormatLatest,
  epoch: 0,
};

/**
 * u8 storeFormat, u64 appliedIndex, appliedTerm, revision, compactRevision, dedupClockMs, then
 * u64 epoch only when it is not 0: a store of epoch 0 (every store before restores) keeps its
 * bytes, and a version without epochs refuses a restored store's meta rather than misread it.
 */
export function encodeMeta(meta: MvccMeta): Uint8Array {
  const writer = new ByteWriter(49)
    .u8(meta.storeFormat)
    .u64(meta.appliedIndex)
    .u64(meta.appliedTerm)
    .u64(meta.revision)
    .u64(meta.compactRevision)
    .u64(meta.dedupClockMs);
  if (meta.epoch !== 0) writer.u64(meta.epoch);
  return writer.finish();
}

export function decodeMeta(bytes: Uint8Array): MvccMeta {
  const reader = new ByteReader(bytes, 'stored', 'meta record');
  const format = reader.u8();
  // A newer version's store: going on would write records it cannot read back the same way.
  if (!Number.isInteger(format) || format < 1 || format > storeFormatLatest) reader.fail(`store format ${format} (this version writes 1 to ${storeFormatLatest})`);
  const meta = {
    appliedIndex: reader.u64(),
    appliedTerm: reader.u64(),
    revision: reader.u64(),
    compactRevision: reader.u64(),
    dedupClockMs: reader.u64(),
    storeFormat: format as StoreFormat,
    epoch: reader.remaining === 0 ? 0 : reader.u64(),
  };
  reader.end();
  return meta;
}
