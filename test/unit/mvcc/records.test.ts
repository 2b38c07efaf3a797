// The record encodings of both store formats: varints are the shortest form and refuse any
// other; key records, history events, revision-index values and the meta record round-trip in
// either format, the two formats tell themselves apart by their first byte, format 1 is laid out
// as before issue 22, and a format-1 record's content form is the format-2 encoding of the same
// record. Format 2 is what makes the store smaller: the sizes asserted are the point.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AssertionError } from '../../../src/base/assert.js';
import { InvalidArgumentError } from '../../../src/base/errors.js';
import { ByteReader, ByteWriter } from '../../../src/mvcc/byte-codec.js';
import { revisionIndexSeq, revisionIndexValue } from '../../../src/mvcc/layout.js';
import {
  canonicalEvent,
  canonicalRecord,
  completeEvent,
  decodeMeta,
  decodeRecord,
  decodeStoredEvent,
  encodeEventScratch,
  encodeMeta,
  encodeRecordScratch,
  recordModRevision,
  storedEventKey,
  tombstone,
} from '../../../src/mvcc/records.js';
import type { KeyValue, MvccEvent, StoreFormat } from '../../../src/mvcc/index.js';

const formats: readonly StoreFormat[] = [1, 2];
const text = (s: string): Uint8Array => new TextEncoder().encode(s);
const copy = (bytes: Uint8Array): Uint8Array => bytes.slice();

test('varints: the shortest form of every integer up to 2^53, and nothing else', () => {
  const values = [0, 1, 127, 128, 255, 16_383, 16_384, 2 ** 21 - 1, 2 ** 21, 2 ** 32, 2 ** 49, Number.MAX_SAFE_INTEGER];
  for (const value of values) {
    const bytes = new ByteWriter().varint(value).finish();
    assert.equal(bytes.length, Math.ceil(value.toString(2).length / 7), `${value}`);
    const reader = new ByteReader(bytes, 'input', 'test');
    assert.equal(reader.varint(), value);
    reader.end();
  }
  assert.throws(() => new ByteWriter().varint(-1), AssertionError);
  assert.throws(() => new ByteWriter().varint(2 ** 53), AssertionError);
  const read = (...bytes: number[]): number => new ByteReader(Uint8Array.from(bytes), 'input', 'test').varint();
  assert.throws(() => read(0x80, 0x00), InvalidArgumentError, 'a longer form than needed');
  assert.throws(() => read(0x80), InvalidArgumentError, 'truncated');
  assert.throws(() => read(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), InvalidArgumentError, 'over 8 bytes');
  assert.throws(() => read(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x10), InvalidArgumentError, '2^53');
  assert.equal(read(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f), Number.MAX_SAFE_INTEGER);
});

const records: KeyValue[] = [
  { key: '/k', value: text('v'), version: 1, createRevision: 7, modRevision: 7, lease: 0 },
  { key: '/k', value: new Uint8Array(0), version: 3, createRevision: 7, modRevision: 90_000, lease: 12 },
  { key: '/é', value: new Uint8Array(300).fill(0xaa), version: 1, createRevision: 5, modRevision: 9, lease: 1 },
  { key: '/big', value: Uint8Array.of(0x80, 0xff), version: 2 ** 40, createRevision: 1, modRevision: 2 ** 53 - 1, lease: 2 ** 53 - 1 },
];

test('key records round-trip in both formats; format 1 is the 32-byte header of before; format 2 is smaller', () => {
  for (const kv of records) {
    const fixed = copy(encodeRecordScratch(kv, 1));
    const compact = copy(encodeRecordScratch(kv, 2));
    assert.equal(fixed.length, 32 + kv.value.length);
    assert.equal(fixed[0], Math.floor(kv.createRevision / 2 ** 56), 'format 1 starts with createRevision, big-endian');
    // Smaller unless the numbers are near 2^53 (8 varint bytes each).
    if (kv.modRevision < 2 ** 32) assert.ok(compact.length < fixed.length - 16, `${compact.length} vs ${fixed.length}`);
    for (const bytes of [fixed, compact]) {
      assert.deepEqual(decodeRecord(kv.key, bytes), kv);
      assert.deepEqual(decodeRecord(kv.key, bytes, true), { ...kv, value: new Uint8Array(0) });
      assert.equal(recordModRevision(bytes), kv.modRevision);
      assert.deepEqual(canonicalRecord(bytes), compact);
    }
  }
  // A key created at its revision with no lease: 1 tag byte + a 3-byte revision, then the value.
  assert.equal(encodeRecordScratch({ ...records[0] as KeyValue, createRevision: 100_000, modRevision: 100_000 }, 2).length, 5);
  assert.throws(() => decodeRecord('/k', Uint8Array.of(0xa0, 1)), AssertionError, 'unknown flags');
});

function event(type: 'put' | 'delete', prevKv: KeyValue | null, revision = 90_001): MvccEvent {
  const kv = type === 'put' ? { key: '/k', value: text('new'), version: (prevKv?.version ?? 0) + 1, createRevision: prevKv?.createRevision ?? revision, modRevision: revision, lease: 0 } : tombstone('/k', revision);
  return { type, revision, kv, prevKv };
}

test('history events round-trip; a format-2 put holds no new value, and its kv comes from outside', () => {
  const prev = records[1] as KeyValue;
  for (const original of [event('put', null), event('put', prev), event('delete', prev)]) {
    const keyBytes = text(original.kv.key);
    const fixed = copy(encodeEventScratch(original, keyBytes, 1));
    const compact = copy(encodeEventScratch(original, keyBytes, 2));
    const fromFixed = decodeStoredEvent(original.revision, fixed);
    assert.deepEqual(completeEvent(fromFixed, null), original, 'format 1 holds the kv');
    const fromCompact = decodeStoredEvent(original.revision, compact);
    if (original.type === 'put') {
      assert.equal(fromCompact.kv, null);
      assert.throws(() => completeEvent(fromCompact, null), AssertionError, 'a put needs its kv');
      assert.throws(() => completeEvent(fromCompact, { ...original.kv, modRevision: 5 }), AssertionError, 'of its revision');
    }
    assert.deepEqual(completeEvent(fromCompact, original.kv), original);
    for (const bytes of [fixed, compact]) {
      assert.deepEqual(storedEventKey(bytes), keyBytes);
      assert.deepEqual(canonicalEvent(original.revision, bytes), compact);
    }
    // The value stored once: a format-2 event is its key plus (if any) the previous record.
    const prevBytes = original.prevKv === null ? 0 : encodeRecordScratch(original.prevKv, 2).length;
    assert.equal(compact.length, 1 + 1 + keyBytes.length + prevBytes);
  }
  assert.throws(() => decodeStoredEvent(5, copy(encodeEventScratch(event('put', null, 6), text('/k'), 1))), AssertionError, 'revision of its key');
});

test('revision-index values: format 1 a u32, format 2 the fewest big-endian bytes; either reads back', () => {
  for (const seq of [0, 1, 255, 256, 65_535, 65_536, 2 ** 24 - 1, 2 ** 24, 2 ** 32 - 1]) {
    assert.equal(revisionIndexValue(seq, 1).length, 4);
    assert.equal(revisionIndexValue(seq, 2).length, seq === 0 ? 0 : Math.ceil(seq.toString(2).length / 8));
    for (const format of formats) assert.equal(revisionIndexSeq(revisionIndexValue(seq, format)), seq);
  }
});

test('the meta record: its first byte is the store format; format 1 as before; newer formats refused', () => {
  const meta = { appliedIndex: 9, appliedTerm: 2, revision: 7, compactRevision: 3, dedupClockMs: 1_700_000_000_000, epoch: 0 };
  for (const storeFormat of formats) {
    const bytes = encodeMeta({ ...meta, storeFormat });
    assert.equal(bytes.length, 41);
    assert.equal(bytes[0], storeFormat);
    assert.deepEqual(decodeMeta(bytes), { ...meta, storeFormat });
  }
  const newer = encodeMeta({ ...meta, storeFormat: 2 });
  newer[0] = 6;
  assert.throws(() => decodeMeta(newer), AssertionError);
});

test('the meta record: epoch 0 keeps the 41 bytes of stores before epochs; a later epoch appends it', () => {
  const meta = { appliedIndex: 1, appliedTerm: 1, revision: 3 * 2 ** 40 + 5, compactRevision: 3 * 2 ** 40, dedupClockMs: 0, storeFormat: 2 as const };
  const restored = encodeMeta({ ...meta, epoch: 3 });
  assert.equal(restored.length, 49);
  assert.deepEqual(decodeMeta(restored), { ...meta, epoch: 3 });
  assert.deepEqual(decodeMeta(restored.subarray(0, 41)), { ...meta, epoch: 0 });
  assert.throws(() => decodeMeta(restored.subarray(0, 45)), AssertionError);
});
