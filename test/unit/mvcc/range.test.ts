// [key, rangeEnd) reads (etcd's ranges and pagination) and reverse engine ranges (a lock queue's
// predecessor), on the in-memory engine and on LMDB: checked against brute force over a history
// of random puts, deletes and re-creates, at the current revision and at every retained past one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidArgumentError, KeyNotFoundError } from '../../../src/base/errors.js';
import { SeededRandom, randomInt } from '../../../src/base/random.js';
import { EntryType } from '../../../src/raft/types.js';
import { MemoryEngine, MvccStore, compareBytes, defaultMvccLimits, encodeCommand, fromUtf8, utf8 } from '../../../src/mvcc/index.js';
import type { Command, CommandResult, KeyValue, KvEngine, KvEntry, RangeRequest } from '../../../src/mvcc/index.js';
import { LmdbEngine } from '../../../src/storage/index.js';

type EngineKind = 'memory' | 'lmdb';

async function withEngine(kind: EngineKind, body: (engine: KvEngine) => void): Promise<void> {
  if (kind === 'memory') return body(new MemoryEngine());
  const dir = mkdtempSync(join(tmpdir(), 'baton-range-'));
  const engine = LmdbEngine.open({ directory: dir });
  try {
    body(engine);
  } finally {
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const bytes = (text: string): Uint8Array => utf8(text);
const keyText = (entry: KvEntry): string => Buffer.from(entry.key).toString('latin1');

for (const kind of ['memory', 'lmdb'] as const) {
  test(`${kind}: reverse ranges yield [start, end) descending and counts count it, long (bucketed) keys included`, () =>
    withEngine(kind, (engine) => {
      const random = new SeededRandom(7n);
      const long = (stem: string): string => stem + 'x'.repeat(4_000) + String(randomInt(random, 0, 9));
      const keys = ['a', 'b', 'ba', 'bb', 'c', 'c\u0000', 'd', long('b'), long('b'), long('c'), 'z'];
      engine.write((writer) => {
        for (const key of keys) writer.put(Buffer.from(key, 'latin1'), bytes(`v-${key.length}`));
      });
      const stored = [...new Set(keys)].map((k) => Buffer.from(k, 'latin1')).sort(compareBytes);
      const bounds = ['', 'a', 'b', 'b\u0000', 'bx', long('b').slice(0, 3_990), 'c', 'c\u0000', 'c\u0001', 'e', 'zz'];
      for (const from of bounds) {
        for (const to of bounds) {
          const start = Buffer.from(from === '' ? '\u0000' : from, 'latin1');
          const end = Buffer.from(to === '' ? '\u0000' : to, 'latin1');
          const expected = stored.filter((k) => compareBytes(k, start) >= 0 && compareBytes(k, end) < 0).map((k) => k.toString('latin1'));
          const forward = [...engine.range({ start, end })].map(keyText);
          const backward = [...engine.range({ start, end, reverse: true })].map(keyText);
          assert.deepEqual(forward, expected, `[${from.length}, ${to.length})`);
          assert.deepEqual(backward, [...expected].reverse(), `reverse [${from.length}, ${to.length})`);
          assert.equal(engine.count?.({ start, end }), expected.length, `count [${from.length}, ${to.length})`);
        }
      }
    }));

  test(`${kind}: [key, rangeEnd) reads match brute force at every revision, with limit, more, count`, () =>
    withEngine(kind, (engine) => {
      const store = new MvccStore(engine);
      let index = 0;
      const apply = (op: Command): CommandResult => {
        const data = encodeCommand({ proposedAtMs: 1, op }, defaultMvccLimits);
        const [outcome] = store.applyBatch([{ index: ++index, term: 1, type: EntryType.normal, data }]);
        assert.ok(outcome?.type === 'applied', JSON.stringify(outcome));
        return outcome.result;
      };
      // Live keys after each revision: the model every read is checked against.
      const states = new Map<number, Map<string, KeyValue>>([[0, new Map()]]);
      const random = new SeededRandom(42n);
      const names = ['/a', '/a/1', '/a/2', '/a\u0000', '/ab', '/b', '/b/x', '/c', '/é', '/éa', '/日本', '/z'];
      for (let step = 0; step < 120; step++) {
        const key = names[randomInt(random, 0, names.length - 1)] as string;
        const previous = new Map(states.get(store.revision));
        const before = store.revision;
        if (randomInt(random, 0, 3) === 0) apply({ type: 'delete', key });
        else apply({ type: 'put', key, value: bytes(`s${step}`) });
        if (store.revision === before) continue; // a delete of an absent key
        const now = store.range({ type: 'get', key: '/', prefix: true });
        previous.clear();
        for (const kv of now.kvs) previous.set(kv.key, kv);
        states.set(store.revision, previous);
      }
      const bounds = ['/', '/a', '/a/', '/a/2', '/a\u0000', '/ab', '/b', '/c', '/d', '/é', '/z', '/zz'];
      const ends: Uint8Array[] = [...bounds.map(bytes), Uint8Array.of(0x30), Uint8Array.of(0x2f, 0xff), bytes('/')];
      const check = (revision: number): void => {
        const state = states.get(revision);
        assert.ok(state !== undefined);
        const live = [...state.values()].sort((a, b) => compareBytes(bytes(a.key), bytes(b.key)));
        for (const key of bounds) {
          for (const rangeEnd of ends) {
            const expected = live.filter((kv) => compareBytes(bytes(kv.key), bytes(key)) >= 0 && compareBytes(bytes(kv.key), rangeEnd) < 0);
            for (const limit of [0, 1, 3]) {
              const request: RangeRequest = { type: 'get', key, rangeEnd, limit, revision };
              const got = store.range(request);
              const kept = limit === 0 ? expected : expected.slice(0, limit);
              const what = `${key} .. ${Buffer.from(rangeEnd).toString('hex')} limit ${limit} at ${revision}`;
              assert.deepEqual(got.kvs, kept, what);
              assert.equal(got.count, expected.length, what);
              assert.equal(got.more, kept.length < expected.length, what);
              assert.equal(got.revision, revision);
            }
            const counted = store.range({ type: 'get', key, rangeEnd, countOnly: true, revision });
            assert.deepEqual([counted.count, counted.kvs.length, counted.more], [expected.length, 0, false]);
            const keysOnly = store.range({ type: 'get', key, rangeEnd, keysOnly: true, limit: 2, revision });
            assert.deepEqual(keysOnly.kvs.map((kv) => [kv.key, kv.value.length, kv.modRevision]), expected.slice(0, 2).map((kv) => [kv.key, 0, kv.modRevision]));
          }
        }
      };
      const revisions = [...states.keys()].filter((r) => r > 0);
      // The last one is the current revision (read from the current table, not history).
      for (const revision of revisions) check(revision);
      // After compaction: keys whose history went below the compaction point have no index entries.
      const compactAt = revisions[Math.floor(revisions.length / 2)] as number;
      apply({ type: 'compact', revision: compactAt });
      for (let i = 0; i < 10; i++) apply({ type: 'put', key: '/zz-filler', value: bytes(String(i)) }); // compaction steps
      assert.equal(store.compactionPending(), false);
      for (const revision of revisions.filter((r) => r >= compactAt)) check(revision);
    }));
}

test('range requests: rules and shapes', () => {
  const store = new MvccStore(new MemoryEngine());
  const data = encodeCommand({ proposedAtMs: 1, op: { type: 'put', key: '/k', value: bytes('v') } }, defaultMvccLimits);
  store.applyBatch([{ index: 1, term: 1, type: EntryType.normal, data }]);
  const end = bytes('/l');
  assert.throws(() => store.range({ type: 'get', key: '/k', prefix: true, rangeEnd: end }), InvalidArgumentError);
  assert.throws(() => store.range({ type: 'get', key: '/k', rangeEnd: new Uint8Array(0) }), InvalidArgumentError);
  assert.throws(() => store.range({ type: 'get', key: '/k', rangeEnd: new Uint8Array(defaultMvccLimits.keyBytesMax + 2).fill(0x7a) }), /too large|rangeEnd/);
  // An empty range answers empty (etcd too); a single absent key stays key_not_found.
  assert.deepEqual(store.range({ type: 'get', key: '/x', rangeEnd: bytes('/a') }).kvs, []);
  assert.deepEqual(store.range({ type: 'get', key: '/x', rangeEnd: bytes('/y') }).count, 0);
  assert.throws(() => store.range({ type: 'get', key: '/x' }), KeyNotFoundError);
  // Every key from '/' on, and any bytes as the bound.
  assert.deepEqual(store.range({ type: 'get', key: '/', rangeEnd: Uint8Array.of(0x30) }).kvs.map((kv) => kv.key), ['/k']);
  assert.deepEqual(store.range({ type: 'get', key: '/k', rangeEnd: Uint8Array.of(0x2f, 0x6b, 0xff) }).kvs.map((kv) => fromUtf8(kv.value)), ['v']);
  // Inside a txn a get reads one key or a prefix: the log's txn format has no range end.
  const txn: Command = { type: 'txn', compare: [], success: [{ type: 'get', key: '/k', rangeEnd: end }], failure: [] };
  assert.throws(() => encodeCommand({ proposedAtMs: 1, op: txn }, defaultMvccLimits), InvalidArgumentError);
});

test('a first-key read with skipCount reads one key (and a peek), not the whole prefix', () => {
  const inner = new MemoryEngine();
  let entriesRead = 0;
  let counted = 0;
  // The engine as the store reads it, counting what range() yields and how often count() runs.
  const engine: KvEngine = {
    get: (key) => inner.get(key),
    *range(range) {
      for (const entry of inner.range(range)) {
        entriesRead++;
        yield entry;
      }
    },
    count: (range) => {
      counted++;
      return inner.count(range);
    },
    write: (body) => inner.write(body),
    snapshotEntries: () => inner.snapshotEntries(),
    replaceAll: (entries) => inner.replaceAll(entries),
  };
  const store = new MvccStore(engine, defaultMvccLimits);
  const ops: Command[] = Array.from({ length: 500 }, (_, i) => ({ type: 'put', key: `/q/${String(i).padStart(4, '0')}`, value: bytes('x') }));
  store.applyBatch(ops.map((op, i) => ({ index: i + 1, term: 1, type: EntryType.normal, data: encodeCommand({ proposedAtMs: 1, op }, defaultMvccLimits) })));
  const request: RangeRequest = { type: 'get', key: '/q/', prefix: true, limit: 1 };
  entriesRead = 0;
  const counting = store.range(request);
  assert.equal(counting.count, 500);
  const countedBefore = counted;
  entriesRead = 0;
  const first = store.range({ ...request, skipCount: true });
  assert.deepEqual(first.kvs.map((kv) => kv.key), ['/q/0000']);
  assert.equal(first.more, true);
  assert.equal(counted, countedBefore, 'no count');
  assert.ok(entriesRead <= 2, `read ${entriesRead} entries`);
  assert.deepEqual(store.range({ type: 'get', key: '/q/0499', prefix: true, limit: 1, skipCount: true }).more, false);
});
