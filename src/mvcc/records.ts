// Binary encodings of what the store keeps: a key's current record, a history event and the
// meta record. Fixed layouts (no maps, no floats) so equal state is equal bytes on every replica.
import { ByteReader, ByteWriter } from './byte-codec.js';
import { emptyBytes } from './bytes.js';
import type { KeyValue, MvccEvent, MvccMeta } from './types.js';

const recordHeaderBytes = 32;

/**
 * The value is a view of `bytes`, not a copy: stored bytes come from an engine read (a copy of
 * its own) or an event being decoded, and nothing writes to them again.
 */
export function decodeRecord(key: string, bytes: Uint8Array, keysOnly = false): KeyValue {
  const reader = new ByteReader(bytes, 'stored', 'key record');
  const createRevision = reader.u64();
  const modRevision = reader.u64();
  const version = reader.u64();
  const lease = reader.u64();
  const value = keysOnly ? emptyBytes : reader.view(reader.remaining);
  return { key, value, version, createRevision, modRevision, lease };
}

/** The modRevision of a stored record, without decoding the value. */
export function recordModRevision(bytes: Uint8Array): number {
  const reader = new ByteReader(bytes, 'stored', 'key record');
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

/** A key's record without its key (the engine key carries it): 4 x u64, then the value. In
 * the shared scratch: valid until the next scratch encoding. */
export function encodeRecordScratch(kv: KeyValue): Uint8Array {
  writeRecord(scratch.reset(), kv);
  return scratch.view();
}

/** A history event, in the shared scratch: valid until the next scratch encoding. */
export function encodeEventScratch(event: MvccEvent, keyBytes: Uint8Array): Uint8Array {
  return writeEvent(scratch.reset(), event, keyBytes).view();
}

function writeEvent(writer: ByteWriter, event: MvccEvent, keyBytes: Uint8Array): ByteWriter {
  const { prevKv, kv } = event;
  writer.u8(eventType[event.type]).u64(event.revision).bytes(keyBytes);
  writer.u8(prevKv === null ? 0 : 1);
  if (prevKv !== null) writeRecord(writer.u32(recordHeaderBytes + prevKv.value.length), prevKv);
  if (event.type === 'put') writeRecord(writer.u32(recordHeaderBytes + kv.value.length), kv);
  return writer;
}

/** A key's record (see encodeRecordScratch), written into a writer. */
function writeRecord(writer: ByteWriter, kv: KeyValue): void {
  writer.u64(kv.createRevision).u64(kv.modRevision).u64(kv.version).u64(kv.lease).raw(kv.value);
}

export function decodeEvent(bytes: Uint8Array): MvccEvent {
  const reader = new ByteReader(bytes, 'stored', 'history event');
  const typeCode = reader.u8();
  const revision = reader.u64();
  const key = reader.string();
  const prevKv = reader.bool() ? decodeRecord(key, reader.bytesView()) : null;
  if (typeCode === eventType.put) {
    const kv = decodeRecord(key, reader.bytesView());
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
