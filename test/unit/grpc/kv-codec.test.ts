// The hand-written Range and Put codecs against proto-loader's, on random messages: what one side
// encodes the other decodes to the same fields (int64 as numbers on our side, text on theirs),
// unknown fields are skipped, and out-of-range int64s still reach int() as refusable values.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { MethodDefinition } from '@grpc/grpc-js';
import { SeededRandom, randomInt } from '../../../src/base/random.js';
import { decodePutRequest, decodeRangeRequest, encodePutResponse, encodeRangeResponse } from '../../../src/api/grpc/kv-codec.js';
import { etcdServices } from '../../../src/api/grpc/proto.js';
import { int, type KeyValueMsg, type RangeResponseMsg } from '../../../src/api/grpc/wire.js';

type Method = MethodDefinition<unknown, unknown>;
const kv = etcdServices().KV as unknown as { Range: Method; Put: Method };
const random = new SeededRandom(2026n);
const someBytes = (max: number): Buffer => Buffer.from(Array.from({ length: randomInt(random, 0, max) }, () => randomInt(random, 0, 255)));
const someInt = (): number => (randomInt(random, 0, 3) === 0 ? 0 : randomInt(random, 0, 3) === 0 ? randomInt(random, 1, 2 ** 31) * 2 ** 21 + randomInt(random, 0, 2 ** 21 - 1) : randomInt(random, 1, 300));
const flag = (): boolean => randomInt(random, 0, 1) === 1;

/** proto-loader's object with int64 text as numbers, for comparison with ours. */
function numeric(value: unknown): unknown {
  if (Buffer.isBuffer(value)) return value.toString('hex');
  if (value instanceof Uint8Array) return Buffer.from(value).toString('hex');
  if (Array.isArray(value)) return value.map(numeric);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, numeric(v)]));
  }
  return typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
}

/** Unknown fields of every wire type: a newer client's additions must be skipped. */
const unknownFields = Buffer.from([0xa8, 0x06, 0x07, 0xb2, 0x06, 0x02, 0x61, 0x62, 0xbd, 0x06, 1, 2, 3, 4, 0xb9, 0x06, 1, 2, 3, 4, 5, 6, 7, 8]);

test('RangeRequest and PutRequest: our decoder reads what proto-loader encodes', () => {
  for (let i = 0; i < 300; i++) {
    const range = {
      key: someBytes(20),
      range_end: someBytes(3),
      limit: String(someInt()),
      revision: String(someInt()),
      sort_order: randomInt(random, 0, 2),
      sort_target: randomInt(random, 0, 4),
      serializable: flag(),
      keys_only: flag(),
      count_only: flag(),
      min_mod_revision: String(someInt()),
      max_mod_revision: String(someInt()),
      min_create_revision: String(someInt()),
      max_create_revision: String(someInt()),
    };
    const bytes = kv.Range.requestSerialize(range);
    const expected = numeric(kv.Range.requestDeserialize(bytes));
    assert.deepEqual(numeric(decodeRangeRequest(bytes)), expected);
    assert.deepEqual(numeric(decodeRangeRequest(Buffer.concat([bytes, unknownFields]))), expected);
    const put = { key: someBytes(20), value: someBytes(300), lease: String(someInt()), prev_kv: flag(), ignore_value: flag(), ignore_lease: flag() };
    const putBytes = kv.Put.requestSerialize(put);
    const putExpected = numeric(kv.Put.requestDeserialize(putBytes));
    assert.deepEqual(numeric(decodePutRequest(putBytes)), putExpected);
    assert.deepEqual(numeric(decodePutRequest(Buffer.concat([unknownFields, putBytes]))), putExpected);
  }
  // An int64 beyond 2^53, or negative, decodes to a value int() refuses, as with proto-loader's text.
  for (const limit of ['9007199254740993', '-1', '18446744073709551615']) {
    const decoded = decodeRangeRequest(kv.Range.requestSerialize({ key: Buffer.from('k'), limit }));
    assert.throws(() => int(decoded.limit, 'limit'), /must be an integer/);
  }
  assert.throws(() => decodeRangeRequest(Buffer.from([0x0a, 0x05, 0x61])), /malformed/);
  assert.throws(() => decodeRangeRequest(Buffer.from([0x18, 0xff])), /malformed/);
});

test('RangeResponse and PutResponse: proto-loader reads what our encoder writes', () => {
  const someKv = (): KeyValueMsg => ({
    key: someBytes(30),
    create_revision: someInt(),
    mod_revision: someInt(),
    version: someInt(),
    value: randomInt(random, 0, 9) === 0 ? Buffer.alloc(70_000, 7) : someBytes(300),
    lease: someInt(),
  });
  for (let i = 0; i < 300; i++) {
    const header = {
      cluster_id: flag() ? BigInt('0xa1b2c3d4e5f60718').toString() : String(someInt()),
      member_id: someInt(),
      revision: someInt(),
      raft_term: someInt(),
    };
    const response: RangeResponseMsg = {
      ...(flag() ? { header } : {}),
      kvs: Array.from({ length: randomInt(random, 0, 5) }, someKv),
      more: flag(),
      count: someInt(),
    };
    const expected = numeric(kv.Range.responseDeserialize(kv.Range.responseSerialize(response)));
    assert.deepEqual(numeric(kv.Range.responseDeserialize(encodeRangeResponse(response))), expected);
    const put = { header, prev_kv: flag() ? someKv() : null };
    const putExpected = numeric(kv.Put.responseDeserialize(kv.Put.responseSerialize(put)));
    assert.deepEqual(numeric(kv.Put.responseDeserialize(encodePutResponse(put))), putExpected);
  }
});
