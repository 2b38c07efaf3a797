// Request-ID deduplication is replicated state: a retry inside the window (measured with the
// dedup clock, which the proposers' clock steps carried in the entries advance) gets the first
// outcome, errors included, and changes nothing, also after a snapshot install; after the window
// it applies anew; expired records are pruned a few per command, identically on every replica.
// A member whose wall clock is off or steps by more than the window cannot expire records.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EntryType, type Entry } from '../../../src/raft/types.js';
import { MemoryEngine, MvccStore, defaultMvccLimits, encodeCommand } from '../../../src/mvcc/index.js';
import type { ApplyOutcome, Command } from '../../../src/mvcc/index.js';

const limits = { ...defaultMvccLimits, dedupPrunePerCommandMax: 2 };
const windowMs = limits.dedupWindowMs;
const stepMaxMs = windowMs / 60;
const yearMs = 365 * 24 * 3_600_000;
const value = (text: string): Uint8Array => new TextEncoder().encode(text);

class Log {
  private index = 0;
  /** An entry proposed by `member` (default 1) whose wall clock read `atMs`. */
  entry(op: Command, options: { requestId?: string; atMs: number; member?: number | null }): Entry {
    const { requestId, atMs, member = 1 } = options;
    const source = member === null ? {} : { source: member };
    const envelope = { ...(requestId === undefined ? {} : { requestId }), proposedAtMs: atMs, ...source, op };
    return { index: ++this.index, term: 1, type: EntryType.normal, data: encodeCommand(envelope, limits) };
  }
}

const tick: Command = { type: 'compact', revision: 0 };

/** Entries from `member` every `everyMs` of its clock, from `fromMs` up to `toMs` included. */
function ticks(store: MvccStore, log: Log, options: { member: number; fromMs: number; toMs: number; everyMs?: number }): void {
  const everyMs = options.everyMs ?? stepMaxMs;
  for (let atMs = options.fromMs; atMs <= options.toMs; atMs += everyMs) {
    store.applyBatch([log.entry(tick, { atMs, member: options.member })]);
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
  ticks(store, log, { member: 1, fromMs: 2_000, toMs: 1_000 + windowMs });
  const retry = only(store.applyBatch([log.entry(put, { requestId: 'a', atMs: 1_000 + windowMs })]));
  assert.ok(retry.type === 'applied' && retry.duplicate);
  assert.deepEqual(retry.type === 'applied' ? retry.result : null, first.type === 'applied' ? first.result : null);
  assert.equal(store.revision, revision);
  // The same ID on a different command is refused (request_id_reused, naming the first), and
  // changes nothing (issue 21).
  const odd = only(store.applyBatch([log.entry({ type: 'delete', key: '/k' }, { requestId: 'a', atMs: 3_000, member: 2 })]));
  assert.ok(odd.type === 'failed' && odd.error.code === 'request_id_reused');
  assert.equal(odd.type === 'failed' ? odd.error.details['key'] : null, '/k');
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
  // Time passes on member 1 (each entry may move the clock by at most a 60th of the window).
  ticks(store, log, { member: 1, fromMs: 100 + stepMaxMs, toMs: 100 + windowMs });
  const hash = store.hash();
  const later = 100 + windowMs + 1;
  const again = only(store.applyBatch([log.entry({ type: 'put', key: '/p', value: value('2') }, { requestId: 'p', atMs: later })]));
  assert.ok(again.type === 'applied' && !again.duplicate);
  assert.equal(store.range({ type: 'get', key: '/p' }).kvs[0]?.version, 2);
  // The prune at that command removed at most two of the expired records, oldest first.
  // That command first pruned two expired records (p and q: oldest, then by ID), then wrote p anew.
  assert.deepEqual(storedIds(engine), ['p', 'r', 's', 't']);
  assert.notEqual(store.hash(), hash);
  assert.equal(store.hasRequest('p'), true);
  assert.equal(store.hasRequest('s'), false, 'expired, not yet pruned: acts as absent');
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
  source.applyBatch([log.entry(tick, { atMs: 7, member: 2 })]);
  const replica = new MvccStore(new MemoryEngine(), limits);
  replica.restore(source.snapshot().chunks);
  const retry = log.entry(put, { requestId: 'z', atMs: 6 });
  const a = only(source.applyBatch([retry]));
  const b = only(replica.applyBatch([retry]));
  assert.ok(a.type === 'applied' && a.duplicate && b.type === 'applied' && b.duplicate);
  assert.equal(replica.hash({ includeAppliedIndex: true }), source.hash({ includeAppliedIndex: true }));
  assert.equal(replica.revision, 1);
  // The members' last stamps travel in the snapshot: both replicas move the clock alike.
  const both = [source, replica];
  for (let i = 1; i <= 70; i++) {
    const entry = log.entry(tick, { atMs: 7 + i * stepMaxMs, member: 2 });
    for (const store of both) store.applyBatch([entry]);
  }
  const expired = log.entry(put, { requestId: 'z', atMs: 8 });
  for (const store of both) assert.ok(only(store.applyBatch([expired])).type === 'applied' && store.revision === 2);
  assert.equal(replica.hash({ includeAppliedIndex: true }), source.hash({ includeAppliedIndex: true }));
});

test('a member whose clock is a year ahead or behind cannot expire records or stamp them expired', () => {
  const store = new MvccStore(new MemoryEngine(), limits);
  const log = new Log();
  const now = 1_000_000_000_000;
  const put = (key: string): Command => ({ type: 'put', key, value: value(key) });
  store.applyBatch([log.entry(put('/a'), { requestId: 'a', atMs: now, member: 1 })]);
  // Member 2 runs a year ahead, member 3 a year behind; both propose a lot, some with Request-IDs.
  for (let i = 0; i < 200; i++) {
    store.applyBatch([log.entry(tick, { atMs: now + yearMs + i * 100, member: 2 })]);
    store.applyBatch([log.entry(tick, { atMs: now - yearMs + i * 100, member: 3 })]);
  }
  store.applyBatch([log.entry(put('/b'), { requestId: 'b', atMs: now - yearMs + 20_000, member: 3 })]);
  store.applyBatch([log.entry(put('/c'), { requestId: 'c', atMs: now + yearMs + 20_000, member: 2 })]);
  const revision = store.revision;
  // Retries through any member, a minute later on each member's own clock: all answered, none applied.
  for (const [id, member, atMs] of [['a', 2, now + yearMs + 60_000], ['b', 1, now + 60_000], ['c', 3, now - yearMs + 60_000]] as const) {
    const retry = only(store.applyBatch([log.entry(put(`/${id}`), { requestId: id, atMs, member })]));
    assert.ok(retry.type === 'applied' && retry.duplicate, `retry of ${id} through member ${member}`);
  }
  assert.equal(store.revision, revision);
});

test('a proposer clock stepping by more than the window moves the dedup clock by at most a 60th of it', () => {
  const store = new MvccStore(new MemoryEngine(), limits);
  const log = new Log();
  const put: Command = { type: 'put', key: '/k', value: value('v') };
  store.applyBatch([log.entry(put, { requestId: 'r', atMs: 1_000, member: 1 })]);
  // Member 1's clock steps +15 min, back, +15 min again; member 2's steps -15 min, then back.
  const steps: [number, number][] = [[1, 901_000], [1, 2_000], [1, 903_000], [2, 1_000_000], [2, 100_000], [2, 1_001_000]];
  for (const [member, atMs] of steps) store.applyBatch([log.entry(tick, { atMs, member })]);
  const retry = only(store.applyBatch([log.entry(put, { requestId: 'r', atMs: 904_000, member: 1 })]));
  assert.ok(retry.type === 'applied' && retry.duplicate);
  assert.equal(store.revision, 1);
  // The three forward steps cost three 60ths of the window: the record lives 57 more steps of 10 s.
  let tens = 0;
  while (store.hasRequest('r')) {
    tens++;
    store.applyBatch([log.entry(tick, { atMs: 904_000 + tens * stepMaxMs, member: 1 })]);
  }
  assert.equal(tens, 58);
});

test('sparse traffic lengthens the window but records still expire after a bounded number of entries', () => {
  const store = new MvccStore(new MemoryEngine(), limits);
  const log = new Log();
  const put: Command = { type: 'put', key: '/k', value: value('v') };
  const hourMs = 3_600_000;
  store.applyBatch([log.entry(put, { requestId: 's', atMs: hourMs, member: 1 })]);
  // One entry an hour, round-robin over three members: the clock moves stepMax per round (the
  // members' overlapping steps are not added up), so the record lasts about 3 x 60 entries.
  let entries = 0;
  while (store.hasRequest('s')) {
    entries++;
    store.applyBatch([log.entry(tick, { atMs: hourMs * (entries + 1), member: 1 + (entries % 3) })]);
    assert.ok(entries <= 3 * 62, `still inside the window after ${entries} hourly entries`);
  }
  assert.ok(entries > 60, 'not before the clock moved a whole window');
});

test('the same entries from skewed, stepping members give the same bytes on every replica', () => {
  const entries: Entry[] = [];
  const log = new Log();
  let atMs = 5_000;
  for (let i = 0; i < 600; i++) {
    atMs += (i * 7919) % 23_000;
    const member = 1 + (i % 3);
    const skew = member === 2 ? yearMs : member === 3 ? -(i % 50) * 60_000 : 0;
    const requestId = `id-${i % 40}`;
    entries.push(log.entry({ type: 'put', key: `/k${i % 9}`, value: value(String(i)) }, { requestId, atMs: atMs + skew + 2 * yearMs, member }));
  }
  const hashes = [1, 7, 600].map((size) => {
    const store = new MvccStore(new MemoryEngine(), limits);
    for (let i = 0; i < entries.length; i += size) store.applyBatch(entries.slice(i, i + size));
    return store.hash({ includeAppliedIndex: true });
  });
  assert.equal(new Set(hashes).size, 1);
});

test('reordered stamps of one member and entries without a proposer id (older versions) do not move the window', () => {
  const store = new MvccStore(new MemoryEngine(), limits);
  const log = new Log();
  const put: Command = { type: 'put', key: '/k', value: value('v') };
  store.applyBatch([log.entry(put, { requestId: 'o', atMs: 50_000, member: 1 })]);
  // Member 1's proposals arrive out of order by up to 5 s, 400 times over 40 s of its clock.
  for (let i = 1; i <= 400; i++) store.applyBatch([log.entry(tick, { atMs: 50_000 + i * 100 - (i % 2) * 5_000, member: 1 })]);
  // An older version's entries (no id) stamped a year ahead and a year behind, alternating.
  for (let i = 0; i < 200; i++) store.applyBatch([log.entry(tick, { atMs: 50_000 + (i % 2 === 0 ? yearMs : 0), member: null })]);
  // The clock moved about 40 s: the record lives until member 1's clock passes 50 s + the window.
  let tens = 0;
  while (store.hasRequest('o')) {
    tens++;
    store.applyBatch([log.entry(tick, { atMs: 90_000 + tens * stepMaxMs, member: 1 })]);
  }
  assert.equal(tens, 57);
});
