// Binary encodings of what the store keeps: a key's current record, a history event and the
// meta record. Fixed layouts (no maps, no floats) so equal state is equal bytes on every replica.
import { ByteReader, ByteWriter } from './byte-codec.js';
import { emptyBytes } from './bytes.js';
import type { KeyValue, MvccEvent, MvccMeta } from './types.js';

const recordHeaderBytes = 32;

/** A key's record without its key (the engine key carries it): 4 x u64, then the value. */
export function encodeRecord(kv: KeyValue): Uint8Array {
  return new ByteWriter(recordHeaderBytes + kv.value.length)
    .u64(kv.createRevision)
    .u64(kv.modRevision)
    .u64(kv.version)
    .u64(kv.lease)
    .raw(kv.value)
    .finish();
}

export function decodeRecord(key: string, bytes: Uint8Array, keysOnly = false): KeyValue {
  const reader = new ByteReader(bytes, 'stored', 'key record');
  const createRevision = reader.u64();
  const modRevision = reader.u64();
  const version = reader.u64();
  const lease = reader.u64();
  const value = keysOnly ? emptyBytes : reader.raw(reader.remaining);
  return { key, value, version, createRevision, modRevision, lease };
}

/** The modRevision of a stored record, without decoding the value. */
export function recordModRevision(bytes: Uint8Array): number {
  const reader = new ByteReader(bytes, 'stored', 'key record');
  reader.u64();
  return reader.u64();
}

const eventType = { put: 0, delete: 1 } as const;

export function encodeEvent(event: MvccEvent): Uint8Array {
  const keyBytesMax = event.kv.key.length * 3;
  const writer = new ByteWriter(96 + keyBytesMax + event.kv.value.length + (event.prevKv?.value.length ?? 0));
  writer.u8(eventType[event.type]).u64(event.revision).string(event.kv.key);
  writer.u8(event.prevKv === null ? 0 : 1);
  if (event.prevKv !== null) writer.bytes(encodeRecord(event.prevKv));
  if (event.type === 'put') writer.bytes(encodeRecord(event.kv));
  return writer.finish();
}

export function decodeEvent(bytes: Uint8Array): MvccEvent {
  const reader = new ByteReader(bytes, 'stored', 'history event');
  const typeCode = reader.u8();
  const revision = reader.u64();
  const key = reader.string();
  const prevKv = reader.bool() ? decodeRecord(key, reader.bytes()) : null;
  if (typeCode === eventType.put) {
    const kv = decodeRecord(key, reader.bytes());
    reader.end();
    return { type: 'put', revision, kv, prevKv };
  }
  if (typeCode !== eventType.delete) reader.fail(`event type ${typeCode}`);
  reader.end();
  return { type: 'delete', revision, kv: tombstone(key, revision), prevKv };
}

export function tombstone(key: string, revision: number): KeyValue {
  return { key, value: emptyBytes, version: 0, createRevision: 0, modRevision: revision, lease: 0 };
}

const metaFormat = 1;

export const initialMeta: MvccMeta = {
  appliedIndex: 0,
  appliedTerm: 0,
  revision: 0,
  compactRevision: 0,
  dedupClockMs: 0,
};

export function encodeMeta(meta: MvccMeta): Uint8Array {
  return new ByteWriter(48)
    .u8(metaFormat)
    .u64(meta.appliedIndex)
    .u64(meta.appliedTerm)
    .u64(meta.revision)
    .u64(meta.compactRevision)
    .u64(meta.dedupClockMs)
    .finish();
}

export function decodeMeta(bytes: Uint8Array): MvccMeta {
  const reader = new ByteReader(bytes, 'stored', 'meta record');
  const format = reader.u8();
  if (format !== metaFormat) reader.fail(`meta format ${format}`);
  const meta = {
    appliedIndex: reader.u64(),
    appliedTerm: reader.u64(),
    revision: reader.u64(),
    compactRevision: reader.u64(),
    dedupClockMs: reader.u64(),
  };
  reader.end();
  return meta;
}
