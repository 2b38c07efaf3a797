// The etcd key mapping (etcd "K" = Baton "/K") and the read plans for etcd's ranges, checked
// against a brute-force range over a set of keys: a plan must select exactly [key, range_end).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { status } from '@grpc/grpc-js';
import { CompactedError, FutureRevisionError, InvalidArgumentError, LeaseNotFoundError, TooLargeError } from '../../../src/base/errors.js';
import { batonKey, etcdKey, prefixEnd, rangePlan, rangeTarget } from '../../../src/api/grpc/keys.js';
import { MemoryEngine, MvccStore, defaultMvccLimits, encodeCommand } from '../../../src/mvcc/index.js';
import { EntryType } from '../../../src/raft/types.js';
import { rangeResponse, rangeWork } from '../../../src/api/grpc/kv-read.js';
import { toGrpcError } from '../../../src/api/grpc/errors.js';
import { nameOfKey } from '../../../src/api/grpc/lock-service.js';
import { snapshotBody, snapshotPadding } from '../../../src/api/grpc/snapshot-stream.js';
import { createHash } from 'node:crypto';
import { lockKeyPrefix } from '../../../src/lock/api.js';
import type { KeyValue } from '../../../src/api/types.js';
import type { RangeRequestMsg } from '../../../src/api/grpc/wire.js';

const b = (text: string): Buffer => Buffer.from(text, 'utf8');

test('etcd keys map to Baton keys and back, one to one, keeping the byte order of UTF-8 keys', () => {
  const keys = ['foo', '/foo', 'a/b/c', 'é', '日本', '\u0000x', 'z'];
  for (const key of keys) assert.equal(etcdKey(batonKey(b(key))).toString('utf8'), key);
  assert.equal(batonKey(b('foo')), '/foo');
  assert.equal(batonKey(b('/foo')), '//foo');
  const sortedEtcd = [...keys].map(b).sort(Buffer.compare).map((k) => k.toString());
  const sortedBaton = keys.map((k) => Buffer.from(batonKey(b(k)))).sort(Buffer.compare).map((k) => k.toString().slice(1));
  assert.deepEqual(sortedBaton, sortedEtcd);
  assert.throws(() => batonKey(Buffer.alloc(0)), /key is not provided/);
  // Bytes that are not UTF-8 (etcdctl check perf's keys) are escapes (src/base/key-bytes.ts).
  assert.equal(batonKey(Buffer.from([0x61, 0xff, 0xfe])), '/a\uF7FF\uF7FE');
  assert.deepEqual(etcdKey('/a\uF7FF\uF7FE'), Buffer.from([0x61, 0xff, 0xfe]));
  assert.throws(() => batonKey(b('a/../b')), InvalidArgumentError);
});

test("prefixEnd is etcd's: last byte below 0xff plus one, the rest dropped", () => {
  assert.deepEqual(prefixEnd(b('abc')), b('abd'));
  assert.deepEqual(prefixEnd(Buffer.from([0x61, 0xff, 0xff])), b('b'));
  assert.deepEqual(prefixEnd(Buffer.from([0xff])), Buffer.from([0]));
});

test('a range plan selects exactly the keys in [key, range_end)', () => {
  const stored = ['a', 'a/1', 'a/2', 'ab', 'b', 'b/x', 'c', 'é', 'éa', 'z'];
  const cases: [string | Buffer, string | Buffer][] = [
    ['a', ''], // one key
    ['a/', prefixEnd(b('a/'))], // a prefix
    ['a', prefixEnd(b('a'))],
    ['\u0000', '\u0000'], // every key
    ['ab', '\u0000'], // from a key on
    ['a/2', 'b/y'], // a range that is not a prefix
    ['a', 'c'],
    ['b', 'a'], // empty
    ['é', prefixEnd(b('é'))], // a prefix ending in a multi-byte character
    ['d', 'éa'],
  ];
  for (const [from, to] of cases) {
    const key = typeof from === 'string' ? b(from) : from;
    const end = typeof to === 'string' ? b(to) : to;
    const expected = stored.filter((k) => {
      const kb = b(k);
      if (end.length === 0) return Buffer.compare(kb, key) === 0;
      if (end.length === 1 && end[0] === 0) return Buffer.compare(kb, key) >= 0 || (key.length === 1 && key[0] === 0);
      return Buffer.compare(kb, key) >= 0 && Buffer.compare(kb, end) < 0;
    });
    const plan = rangePlan(key, end);
    // What the Baton query would return, then the edge filter.
    const selected = stored.filter((k) => {
      const baton = batonKey(b(k));
      const inQuery = plan.prefix ? baton.startsWith(plan.key) : baton === plan.key;
      return inQuery && (plan.filter === null || plan.filter(b(k)));
    });
    assert.deepEqual(selected, expected, `[${key.toString()}, ${end.toString('hex')})`);
  }
});

test('a range target reads exactly [key, range_end) in one Baton read, with limit, count and more', () => {
  const stored = ['a', 'a/1', 'a/2', 'ab', 'b', 'b/x', 'c', 'é', 'éa', 'z', '\u0000x', 'y\u0000'];
  const store = new MvccStore(new MemoryEngine());
  stored.forEach((key, i) => {
    const data = encodeCommand({ proposedAtMs: 1, op: { type: 'put', key: batonKey(b(key)), value: b('v') } }, defaultMvccLimits);
    store.applyBatch([{ index: i + 1, term: 1, type: EntryType.normal, data }]);
  });
  const sorted = stored.map(b).sort(Buffer.compare);
  const cases: [string | Buffer, string | Buffer][] = [
    ['a', ''], // one key
    ['a/', prefixEnd(b('a/'))], // a prefix
    ['\u0000', '\u0000'], // every key
    ['ab', '\u0000'], // from a key on
    ['a/2', 'b/y'],
    ['a', 'c'],
    ['b', 'a'], // empty
    ['d', 'éa'],
    ['a', Buffer.from([0xff])], // an end that is not UTF-8
    ['é', Buffer.from([0xc3, 0xa9, 0xff])],
    ['y', 'y\u0000\u0000'],
  ];
  for (const [from, to] of cases) {
    const key = typeof from === 'string' ? b(from) : from;
    const end = typeof to === 'string' ? b(to) : to;
    const expected = sorted.filter((k) => {
      if (end.length === 0) return Buffer.compare(k, key) === 0;
      if (end.length === 1 && end[0] === 0) return Buffer.compare(k, key) >= 0;
      return Buffer.compare(k, key) >= 0 && Buffer.compare(k, end) < 0;
    });
    const target = rangeTarget(key, end);
    const what = `[${key.toString('hex')}, ${end.toString('hex')})`;
    if (end.length === 0) {
      assert.deepEqual(target, { key: batonKey(key), prefix: false }, what);
      continue;
    }
    for (const limit of [0, 2]) {
      const result = store.range({ type: 'get', ...target, limit });
      const kept = limit === 0 ? expected : expected.slice(0, limit);
      assert.deepEqual(result.kvs.map((kv) => etcdKey(kv.key)), kept, what);
      assert.equal(result.count, expected.length, what);
      assert.equal(result.more, kept.length < expected.length, what);
    }
  }
  assert.throws(() => rangeTarget(Buffer.alloc(0), b('z')), /key is not provided/);
  // Outside a txn a plain range goes straight through, limit and all; inside, it is filtered here.
  const plain = rangeWork(request({ key: b('a'), range_end: b('c'), limit: '5' }), false);
  assert.equal(plain.finish, null);
  assert.deepEqual([plain.baton.key, Buffer.from(plain.baton.rangeEnd ?? []).toString(), plain.baton.limit], ['/a', '/c', 5]);
  const inTxn = rangeWork(request({ key: b('a'), range_end: b('c') }), true);
  assert.ok(inTxn.finish !== null && inTxn.baton.rangeEnd === undefined && inTxn.baton.prefix === true);
});

const kv = (key: string, createRevision: number, modRevision: number, version: number, value: string): KeyValue => ({
  key: `/${key}`,
  value: b(value),
  createRevision,
  modRevision,
  version,
  lease: 0,
});

function request(fields: Partial<RangeRequestMsg>): RangeRequestMsg {
  return {
    key: b('k/'),
    range_end: prefixEnd(b('k/')),
    limit: '0',
    revision: '0',
    sort_order: 0,
    sort_target: 0,
    serializable: false,
    keys_only: false,
    count_only: false,
    min_mod_revision: '0',
    max_mod_revision: '0',
    min_create_revision: '0',
    max_create_revision: '0',
    ...fields,
  };
}

test("sorted and filtered ranges finish at the edge as etcd answers them (count before the limit)", () => {
  const kvs = [kv('k/a', 5, 9, 3, 'zz'), kv('k/b', 2, 2, 1, 'aa'), kv('k/c', 7, 7, 1, 'mm')];
  const result = { revision: 9, count: 3, more: false, kvs };
  // Plain prefix: straight through.
  assert.equal(rangeWork(request({ limit: '2' }), false).finish, null);
  // Last created first, limit 1 (clientv3's WithLastCreate).
  const lastCreate = rangeWork(request({ sort_order: 2, sort_target: 2, limit: '1' }), false);
  const done = lastCreate.finish?.(result);
  assert.deepEqual(done?.kvs.map((k) => k.key), ['/k/c']);
  assert.equal(done?.count, 3);
  assert.equal(done?.more, true);
  // NONE with a target other than KEY sorts ascending (etcd).
  const byValue = rangeWork(request({ sort_target: 4 }), false).finish?.(result);
  assert.deepEqual(byValue?.kvs.map((k) => k.key), ['/k/b', '/k/c', '/k/a']);
  // Revision filters.
  const recent = rangeWork(request({ min_mod_revision: '7' }), false).finish?.(result);
  assert.deepEqual(recent?.kvs.map((k) => k.key), ['/k/a', '/k/c']);
  // count_only: the count, no kvs.
  const counted = rangeWork(request({ count_only: true, sort_order: 2 }), false).finish?.(result);
  assert.deepEqual([counted?.count, counted?.kvs.length], [3, 0]);
  // In a txn the plain path cannot ask Baton for count_only or keys_only: the answer is trimmed here.
  const inTxn = rangeWork(request({ count_only: true }), true);
  assert.deepEqual(rangeResponse(inTxn, result, undefined).kvs, []);
  assert.equal(rangeResponse(inTxn, result, undefined).count, 3);
  const keysOnly = rangeResponse(rangeWork(request({ keys_only: true }), true), result, undefined);
  assert.deepEqual(keysOnly.kvs.map((k) => k.value.length), [0, 0, 0]);
  // Past the edge's bound: refused, not answered partially.
  assert.throws(() => lastCreate.finish?.({ ...result, more: true }), TooLargeError);
});

test("Baton's errors become etcd's gRPC codes and messages", () => {
  const log = (): void => assert.fail('typed errors are not logged');
  assert.deepEqual(pick(toGrpcError(new CompactedError(5), log)), [status.OUT_OF_RANGE, 'etcdserver: mvcc: required revision has been compacted']);
  assert.deepEqual(pick(toGrpcError(new FutureRevisionError(9, 5), log)), [status.OUT_OF_RANGE, 'etcdserver: mvcc: required revision is a future revision']);
  assert.deepEqual(pick(toGrpcError(new LeaseNotFoundError('x'), log)), [status.NOT_FOUND, 'etcdserver: requested lease not found']);
  assert.deepEqual(pick(toGrpcError(new TooLargeError('txn operations and compares', 130, 128, 'too_many_operations'), log)), [
    status.INVALID_ARGUMENT,
    'etcdserver: too many operations in txn request',
  ]);
  assert.match(toGrpcError(new TooLargeError('request', 2e6, 1.5e6), log).details, /^etcdserver: request is too large/);
  let logged = 0;
  assert.equal(toGrpcError(new Error('bug'), () => logged++).code, status.INTERNAL);
  assert.equal(logged, 1);
});

test('a contender key names its lock back, and nothing else does', () => {
  assert.equal(nameOfKey('/locks/jobs/000000000042', lockKeyPrefix), 'jobs');
  assert.equal(nameOfKey('/locks/000000000042', lockKeyPrefix), null);
  assert.equal(nameOfKey('/other/jobs/000000000042', lockKeyPrefix), null);
});

function pick(error: { code: number; details: string }): [number, string] {
  return [error.code, error.details];
}

test('snapshot framing: any length pads to 512-byte blocks and comes back exactly', () => {
  for (const length of [0, 1, 300, 509, 510, 511, 512, 1023, 4096]) {
    const body = Buffer.alloc(length, 7);
    const content = Buffer.concat([body, snapshotPadding(length)]);
    assert.equal(content.length % 512, 0, `length ${length}`);
    const file = Buffer.concat([content, createHash('sha256').update(content).digest()]);
    assert.deepEqual(snapshotBody(file), body);
  }
  assert.throws(() => snapshotBody(Buffer.alloc(600)), /wrong size/);
});
