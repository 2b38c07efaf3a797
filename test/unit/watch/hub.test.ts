// The watch hub's contract case by case, on one MVCC store over a MemoryEngine: fan-out by key,
// prefix and filter with shared batches; catch-up in whole revisions then live without a gap;
// slow consumers ended with their last revision while others go on; quotas; compaction; "from
// now" and future starts; progress; and fairness between the watchers of one connection.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CompactedError, QuotaExceededError } from '../../../src/base/errors.js';
import { MemoryEngine, MvccStore, utf8, type Command } from '../../../src/mvcc/index.js';
import { WatchHub, defaultWatchLimits, type WatchLimits, type WatchOutput, type WatchSpec } from '../../../src/watch/index.js';
import { commandEntry } from './model.js';
import { drain } from './hub-outputs.js';

class Fixture {
  readonly store = new MvccStore(new MemoryEngine());
  readonly hub: WatchHub<string>;
  private index = 0;
  constructor(limits: Partial<WatchLimits> = {}) {
    this.hub = new WatchHub<string>(this.store, { ...defaultWatchLimits, ...limits });
  }
  apply(...commands: Command[]): void {
    this.store.applyBatch(commands.map((command) => commandEntry(++this.index, command)));
    this.hub.onApplied();
  }
  put(key: string, value = 'v'): void {
    this.apply({ type: 'put', key, value: utf8(value) });
  }
}

const spec = (key: string, more: Partial<WatchSpec> = {}): WatchSpec => ({
  key, prefix: false, startRevision: 0, prevKv: false, filter: 'all', encoding: 'utf8', ...more,
});

function eventsOf(outputs: WatchOutput<string>[], tag: string): string[] {
  return outputs.flatMap((o) =>
    o.type === 'batch' && o.tag === tag ? o.batch.events.map((e) => `${e.revision}:${e.type}:${e.kv.key}`) : [],
  );
}

test('fan-out by exact key, prefix and filter; identical watchers share one batch object', () => {
  const f = new Fixture();
  const c = f.hub.openConnection(() => {}, () => true);
  f.hub.create(c, 'exact', spec('/a/1'));
  f.hub.create(c, 'twin', spec('/a/1'));
  f.hub.create(c, 'prefix', spec('/a/', { prefix: true }));
  f.hub.create(c, 'root', spec('/', { prefix: true }));
  f.hub.create(c, 'deletes', spec('/a/', { prefix: true, filter: 'delete' }));
  f.hub.create(c, 'other', spec('/b'));
  f.put('/a/1');
  f.put('/a/2');
  f.apply({ type: 'delete', key: '/a/', prefix: true });
  const out = drain(c);
  assert.deepEqual(eventsOf(out, 'exact'), ['1:put:/a/1', '3:delete:/a/1']);
  assert.deepEqual(eventsOf(out, 'prefix'), ['1:put:/a/1', '2:put:/a/2', '3:delete:/a/1', '3:delete:/a/2']);
  assert.deepEqual(eventsOf(out, 'root'), eventsOf(out, 'prefix'));
  assert.deepEqual(eventsOf(out, 'deletes'), ['3:delete:/a/1', '3:delete:/a/2']);
  assert.deepEqual(eventsOf(out, 'other'), []);
  const batchesOf = (tag: string) => out.flatMap((o) => (o.type === 'batch' && o.tag === tag ? [o.batch] : []));
  batchesOf('exact').forEach((batch, i) => assert.equal(batch, batchesOf('twin')[i], 'one shared batch object'));
});

test('catch-up reads whole revisions in bounded chunks, then joins live with no gap or duplicate', () => {
  const f = new Fixture({ readEventsMax: 2, catchUpReadsPerStepMax: 1 });
  for (let i = 0; i < 5; i++) f.put(`/k/${i}`);
  // One revision of 5 events: larger than a read, never split.
  f.apply({ type: 'delete', key: '/k/', prefix: true });
  const c = f.hub.openConnection(() => {}, () => true);
  const watcher = f.hub.create(c, 'w', spec('/k/', { prefix: true, startRevision: 2 }));
  const first = c.next();
  assert.ok(first?.type === 'batch');
  // A full read of [2, 3] may end mid-revision 3, so the chunk stops at 2.
  assert.deepEqual(first.batch.events.map((e) => e.revision), [2]);
  f.put('/k/live'); // applied while the watcher is still catching up
  const out = drain(c);
  const revisions = [first, ...out].flatMap((o) => (o.type === 'batch' ? o.batch.events.map((e) => e.revision) : []));
  assert.deepEqual(revisions, [2, 3, 4, 5, 6, 6, 6, 6, 6, 7]);
  assert.equal(watcher.state, 'synced');
  for (const o of out) if (o.type === 'batch') assert.ok(o.batch.events.every((e) => e.revision <= o.batch.revision));
});

test('a slow consumer ends with slow_consumer and its last revision; a fast one on the same key goes on', () => {
  const f = new Fixture({ bufferedEventsMax: 3 });
  const slow = f.hub.openConnection(() => {}, () => true);
  const fast = f.hub.openConnection(() => {}, () => true);
  f.hub.create(slow, 'slow', spec('/x'));
  f.hub.create(fast, 'fast', spec('/x'));
  f.put('/x');
  assert.equal(slow.next()?.type, 'batch'); // delivered revision 1
  drain(fast);
  for (let i = 0; i < 10; i++) {
    f.put('/x');
    assert.equal(drain(fast).length, 1, 'the fast watcher gets every batch at once');
  }
  const out = drain(slow);
  assert.equal(out.length, 1);
  const end = out[0];
  assert.ok(end?.type === 'end');
  assert.equal(end.reason, 'slow_consumer');
  assert.equal(end.lastRevision, 1);
  assert.equal(end.error?.code, 'slow_consumer');
  assert.equal(f.hub.size, 1, 'the ended watcher no longer counts');
});

test('a byte bound ends a watcher pinning too much value data', () => {
  const f = new Fixture({ bufferedBytesMax: 4096 });
  const c = f.hub.openConnection(() => {}, () => true);
  f.hub.create(c, 'w', spec('/big'));
  for (let i = 0; i < 4; i++) f.put('/big', 'x'.repeat(1500));
  const out = drain(c);
  assert.equal(out.at(-1)?.type, 'end');
});

test('quotas per connection and per node answer quota_exceeded', () => {
  const f = new Fixture({ watchersPerConnectionMax: 2, watchersPerNodeMax: 3 });
  const a = f.hub.openConnection(() => {}, () => true);
  const b = f.hub.openConnection(() => {}, () => true);
  f.hub.create(a, '1', spec('/a'));
  const second = f.hub.create(a, '2', spec('/a'));
  assert.throws(() => f.hub.create(a, '3', spec('/a')), QuotaExceededError);
  f.hub.create(b, '3', spec('/a'));
  assert.throws(() => f.hub.create(b, '4', spec('/a')), QuotaExceededError);
  f.hub.cancel(second);
  f.hub.create(b, '4', spec('/a'));
  a.close();
  assert.equal(f.hub.size, 2);
});

test('a start below the compaction point ends with compacted and the compact revision', () => {
  const f = new Fixture();
  for (let i = 0; i < 5; i++) f.put('/c');
  f.apply({ type: 'compact', revision: 4 });
  const c = f.hub.openConnection(() => {}, () => true);
  f.hub.create(c, 'old', spec('/c', { startRevision: 3 }));
  f.hub.create(c, 'edge', spec('/c', { startRevision: 4 }));
  const out = drain(c);
  const end = out.find((o) => o.type === 'end');
  assert.ok(end?.type === 'end' && end.tag === 'old');
  assert.ok(end.error instanceof CompactedError);
  assert.equal(end.error.details['compactRevision'], 4);
  assert.equal(end.lastRevision, 2);
  assert.deepEqual(eventsOf(out, 'edge'), ['4:put:/c', '5:put:/c']);
});

test('from now starts at current + 1; a future start waits for its revision', () => {
  const f = new Fixture();
  f.put('/n');
  const c = f.hub.openConnection(() => {}, () => true);
  const now = f.hub.create(c, 'now', spec('/n'));
  assert.equal(now.startRevision, 2);
  const future = f.hub.create(c, 'future', spec('/n', { startRevision: 4 }));
  assert.equal(future.state, 'waiting');
  f.put('/n');
  f.apply({ type: 'put', key: '/n', value: utf8('3') }, { type: 'put', key: '/n', value: utf8('4') });
  f.put('/n');
  const out = drain(c);
  assert.deepEqual(eventsOf(out, 'now'), ['2:put:/n', '3:put:/n', '4:put:/n', '5:put:/n']);
  assert.deepEqual(eventsOf(out, 'future'), ['4:put:/n', '5:put:/n']);
});

test('progress says how far a quiet watcher is, and never piles up', () => {
  const f = new Fixture();
  const c = f.hub.openConnection(() => {}, () => true);
  const w = f.hub.create(c, 'quiet', spec('/quiet'));
  f.put('/noise');
  f.put('/noise');
  f.hub.progress(w);
  f.put('/noise');
  f.hub.progress(w);
  const out = drain(c);
  assert.equal(out.length, 1, 'the newer progress replaced the queued one');
  assert.ok(out[0]?.type === 'batch');
  assert.equal(out[0].batch.revision, 3);
  assert.deepEqual(out[0].batch.events, []);
});

test('watchers of one connection take turns: a long catch-up does not starve a live watcher', () => {
  const f = new Fixture({ readEventsMax: 1, catchUpReadsPerStepMax: 1 });
  for (let i = 0; i < 50; i++) f.put('/h');
  const c = f.hub.openConnection(() => {}, () => true);
  f.hub.create(c, 'history', spec('/h', { startRevision: 1 }));
  f.hub.create(c, 'live', spec('/l'));
  f.put('/l');
  const firstThree = [c.next(), c.next(), c.next()].map((o) => o?.tag);
  assert.ok(firstThree.includes('live'), `live served within the first turns: ${firstThree.join(',')}`);
});

test('stop ends every watcher with stopped, catching-up and waiting ones included', () => {
  const f = new Fixture();
  f.put('/s');
  const c = f.hub.openConnection(() => {}, () => true);
  f.hub.create(c, 'synced', spec('/s'));
  f.hub.create(c, 'behind', spec('/s', { startRevision: 1 }));
  f.hub.create(c, 'ahead', spec('/s', { startRevision: 9 }));
  f.hub.stop();
  const out = drain(c);
  assert.deepEqual(out.map((o) => (o.type === 'end' ? `${o.tag}:${o.reason}` : 'batch')).sort(),
    ['ahead:stopped', 'behind:stopped', 'synced:stopped']);
  assert.equal(f.hub.size, 0);
});

test('a connection whose principal may not watch: refused at creation, and ended with nothing more once the permission goes', () => {
  const f = new Fixture();
  let allowed = (s: WatchSpec): boolean => s.key.startsWith('/app/');
  const c = f.hub.openConnection(() => {}, (s) => allowed(s));
  assert.throws(() => f.hub.create(c, 'other', spec('/other/', { prefix: true })), (e: Error & { code?: string }) => e.code === 'permission_denied');
  f.hub.create(c, 'app', spec('/app/', { prefix: true }));
  f.put('/app/1');
  assert.deepEqual(eventsOf(drain(c), 'app'), ['1:put:/app/1']);
  allowed = () => false;
  f.put('/app/2');
  f.put('/app/3');
  const out = drain(c);
  assert.deepEqual(eventsOf(out, 'app'), [], 'nothing after the removal is delivered');
  const end = out.find((o) => o.type === 'end');
  assert.ok(end !== undefined && end.type === 'end' && end.reason === 'permission_denied' && end.lastRevision === 1, 'the end names the last delivered revision');
  assert.equal(c.watchers.size, 0);
});
