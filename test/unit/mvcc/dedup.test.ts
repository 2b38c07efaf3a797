// Request-ID deduplication is replicated state: a retry inside the window (measured with the
// leaders' proposal times in the entries) gets the first outcome, errors included, and changes
// nothing, also after a snapshot install; after the window it applies anew; expired records are
// pruned a few per command, identically on every replica.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EntryType, type Entry } from '../../../src/raft/types.js';
import { MemoryEngine, MvccStore, defaultMvccLimits, encodeCommand } from '../../../src/mvcc/index.js';
import type { ApplyOutcome, Command } from '../../../src/mvcc/index.js';

const limits = { ...defaultMvccLimits, dedupPrunePerCommandMax: 2 };
const windowMs = limits.dedupWindowMs;
const value = (text: string): Uint8Array => new TextEncoder().encode(text);

class Log {
  private index = 0;
  entry(op: Command, options: { requestId?: string; atMs: number }): Entry {
    const data = encodeCommand({ ...options, proposedAtMs: options.atMs, op }, limits);
    return { index: ++this.index, term: 1, type: EntryType.normal, data };
  }
}

function only(outcomes: ApplyOutcome[]): ApplyOutcome {
  assert.equal(outcomes.length, 1);
  return outcomes[0] as ApplyOutcome;
}

test('a retry inside the window returns the first outcome and changes nothing', () => {
  const store = new MvccStore(new MemoryEngine(), limits);
  const log = new Log();
  const put: Command = { type: 'put', key: '/k', value: value('one') };
  const first = only(store.applyBatch([log.entry(put, { requestId: 'a', atMs: 1_000 })]));
  assert.equal(first.type, 'applied');
  store.applyBatch([log.entry({ type: 'put', key: '/other', value: value('x') }, { atMs: 2_000 })]);
  const revision = store.revision;
  const hash = store.hash();
  const retry = only(store.applyBatch([log.entry(put, { requestId: 'a', atMs: 1_000 + windowMs })]));
  assert.ok(retry.type === 'applied' && retry.duplicate);
  assert.deepEqual(retry.type === 'applied' ? retry.result : null, first.type === 'applied' ? first.result : null);
  assert.equal(store.revision, revision);
  // A retry even with a different command body gets the first answer (the ID decides).
  const odd = only(store.applyBatch([log.entry({ type: 'delete', key: '/k' }, { requestId: 'a', atMs: 3_000 })]));
  assert.ok(odd.type === 'applied' && odd.result.type === 'put');
  assert.equal(store.range({ type: 'get', key: '/k' }).kvs[0]?.version, 1);
  assert.notEqual(store.hash(), hash, 'the dedup clock moved');
});

test('a failed mutation is remembered as failed', () => {
  const store = new MvccStore(new MemoryEngine(), limits);
  const log = new Log();
  const createOnly: Command = { type: 'put', key: '/lock', value: value('me'), ifVersion: 0 };
  store.applyBatch([log.entry(createOnly, { atMs: 10 })]);
  const lost = only(store.applyBatch([log.entry(createOnly, { requestId: 'b', atMs: 20 })]));
  assert.ok(lost.type === 'failed' && lost.error.code === 'precondition_failed');
  store.applyBatch([log.entry({ type: 'delete', key: '/lock' }, { atMs: 30 })]);
  const retry = only(store.applyBatch([log.entry(createOnly, { requestId: 'b', atMs: 40 })]));
  assert.ok(retry.type === 'failed' && retry.duplicate);
  assert.equal(retry.error.code, 'precondition_failed');
  assert.deepEqual(retry.error.details, lost.error.details);
  assert.equal(retry.error.constructor, lost.error.constructor);
});

/** Request IDs with a stored record (expired or not), read straight from the engine. */
function storedIds(engine: MemoryEngine): string[] {
  const table = { start: Uint8Array.of(0x64), end: Uint8Array.of(0x65) };
  return [...engine.range(table)].map((entry) => new TextDecoder().decode(entry.key.subarray(1)));
}

test('after the window the same ID applies anew; expired records are pruned a few at a time', () => {
  const engine = new MemoryEngine();
  const store = new MvccStore(engine, limits);
  const log = new Log();
  const ids = ['p', 'q', 'r', 's', 't'];
  for (const id of ids) store.applyBatch([log.entry({ type: 'put', key: `/${id}`, value: value(id) }, { requestId: id, atMs: 100 })]);
  const later = 100 + windowMs + 1;
  const again = only(store.applyBatch([log.entry({ type: 'put', key: '/p', value: value('2') }, { requestId: 'p', atMs: later })]));
  assert.ok(again.type === 'applied' && !again.duplicate);
  assert.equal(store.range({ type: 'get', key: '/p' }).kvs[0]?.version, 2);
  // The prune at that command removed at most two of the expired records, oldest first.
  // That command first pruned two expired records (p and q: oldest, then by ID), then wrote p anew.
  assert.deepEqual(storedIds(engine), ['p', 'r', 's', 't']);
  assert.equal(store.hasRequest('p', later), true);
  assert.equal(store.hasRequest('s', later), false, 'expired, not yet pruned: acts as absent');
  store.applyBatch([log.entry({ type: 'compact', revision: 0 }, { atMs: later })]);
  assert.deepEqual(storedIds(engine), ['p', 't']);
  store.applyBatch([log.entry({ type: 'compact', revision: 0 }, { atMs: later })]);
  assert.deepEqual(storedIds(engine), ['p']);
});

test('dedup survives a snapshot install and a replay on another replica', () => {
  const source = new MvccStore(new MemoryEngine(), limits);
  const log = new Log();
  const put: Command = { type: 'put', key: '/k', value: value('v') };
  source.applyBatch([log.entry(put, { requestId: 'z', atMs: 5 })]);
  const replica = new MvccStore(new MemoryEngine(), limits);
  replica.restore(source.snapshot().chunks);
  const retry = log.entry(put, { requestId: 'z', atMs: 6 });
  const a = only(source.applyBatch([retry]));
  const b = only(replica.applyBatch([retry]));
  assert.ok(a.type === 'applied' && a.duplicate && b.type === 'applied' && b.duplicate);
  assert.equal(replica.hash({ includeAppliedIndex: true }), source.hash({ includeAppliedIndex: true }));
  assert.equal(replica.revision, 1);
});
