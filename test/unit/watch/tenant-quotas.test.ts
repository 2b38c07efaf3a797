// Tenants' watch quotas on one node (src/watch/tenant-quotas.ts, issue #28) on a real MVCC store,
// the real hub and an injected clock: maxWatches refuses past the count and the slot comes back;
// a tenant's buffered bytes are exactly the sum of its watchers' queues; past maxWatchBytes the
// tenant's slowest watcher ends as a slow consumer with the revision to resume after (and resumes
// with no gap), never another tenant's; a creation while the tenant is over its bytes is refused;
// eventsPerSecond delays delivery in order without losing an event, and a delayed watcher whose
// backlog passes its buffer ends resumable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { QuotaExceededError, type SlowConsumerError } from '../../../src/base/errors.js';
import { tenantOfKey, unlimited, type TenantLimits, type TenantRecord } from '../../../src/base/tenants.js';
import { MemoryEngine, MvccStore, utf8, type Command } from '../../../src/mvcc/index.js';
import {
  TenantWatchQuotas,
  WatchHub,
  defaultWatchLimits,
  type WatchLimits,
  type WatchOutput,
  type WatchSpec,
} from '../../../src/watch/index.js';
import { commandEntry } from './model.js';
import { drain, revisionsOf } from './hub-outputs.js';
import { refusal } from '../base/quota-refusal.js';

/** A clock whose timers fire only when the test moves it. */
class Clock {
  ms = 1_000;
  private timers: Array<{ at: number; run: () => void; live: boolean }> = [];
  readonly setTimeout = (run: () => void, ms: number): { cancel(): void } => {
    const timer = { at: this.ms + ms, run, live: true };
    this.timers.push(timer);
    return { cancel: () => void (timer.live = false) };
  };
  advance(ms: number): void {
    this.ms += ms;
    for (;;) {
      const due = this.timers.filter((t) => t.live && t.at <= this.ms).sort((x, y) => x.at - y.at)[0];
      if (due === undefined) return;
      due.live = false;
      due.run();
    }
  }
  get pending(): number {
    return this.timers.filter((t) => t.live).length;
  }
}

const tenant = (name: string, limits: Partial<TenantLimits>): TenantRecord => ({ name, prefixes: [`/${name}/`], limits: { ...unlimited, ...limits } });

class Fixture {
  readonly store = new MvccStore(new MemoryEngine());
  readonly clock = new Clock();
  readonly table: { now: TenantRecord[] };
  readonly refused: QuotaExceededError[] = [];
  readonly quotas: TenantWatchQuotas;
  readonly hub: WatchHub<string>;
  private index = 0;
  constructor(tenants: TenantRecord[], limits: Partial<WatchLimits> = {}) {
    this.table = { now: tenants };
    this.quotas = new TenantWatchQuotas({
      tenantOf: (key) => tenantOfKey(this.table.now, key),
      tenants: () => this.table.now,
      nowMs: () => this.clock.ms,
      schedule: this.clock.setTimeout,
      refuse: (error, waitMs) => {
        error.retryAfterSeconds = Math.ceil(waitMs / 1000);
        this.refused.push(error);
        return error;
      },
    });
    this.hub = new WatchHub<string>(this.store, { ...defaultWatchLimits, ...limits }, {}, this.quotas);
  }
  apply(command: Command): void {
    this.store.applyBatch([commandEntry(++this.index, command)]);
    this.hub.onApplied();
  }
  put(key: string, value = 'v'): void {
    this.apply({ type: 'put', key, value: utf8(value) });
  }
  /** Replaces the table (a tenantsSet applied): a new array, as the store hands out. */
  setTable(tenants: TenantRecord[]): void {
    this.table.now = tenants;
  }
}

const spec = (key: string, more: Partial<WatchSpec> = {}): WatchSpec => ({
  key, prefix: true, startRevision: 0, prevKv: false, filter: 'all', encoding: 'utf8', ...more,
});

const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);

test('maxWatches per tenant on a node: the next watch is refused with its details, another tenant is not, an ended watch gives its slot back', () => {
  const f = new Fixture([tenant('a', { maxWatches: 2 }), tenant('b', {})]);
  const c = f.hub.openConnection(() => {}, () => true);
  const first = f.hub.create(c, 'a1', spec('/a/x'));
  f.hub.create(c, 'a2', spec('/a/y'));
  const error = refusal(() => f.hub.create(c, 'a3', spec('/a/z')));
  assert.deepEqual(error.details, { tenant: 'a', quota: 'watches', limit: 2, used: 2 });
  assert.ok((error.retryAfterSeconds ?? 0) >= 1, 'a Retry-After');
  for (let i = 0; i < 10; i++) f.hub.create(c, `b${i}`, spec('/b/'));
  f.hub.create(c, 'none', spec('/elsewhere/'));
  f.hub.cancel(first);
  f.hub.create(c, 'a3', spec('/a/z'));
  assert.equal(f.quotas.account('a')?.watchers, 2);
  assert.equal(f.quotas.account('b')?.watchers, 10);
  c.close();
  assert.equal(f.quotas.account('a')?.watchers, 0, 'a closed connection gives every slot back');
});

test('a tenant\'s buffered watch bytes are the sum of its watchers\' queues through queueing, delivery and ends', () => {
  const f = new Fixture([tenant('a', {}), tenant('b', {})]);
  const fast = f.hub.openConnection(() => {}, () => true);
  const stalled = f.hub.openConnection(() => {}, () => true);
  const watchers = [f.hub.create(fast, 'f', spec('/a/')), f.hub.create(stalled, 's1', spec('/a/')), f.hub.create(stalled, 's2', spec('/a/k'))];
  const other = f.hub.create(stalled, 'b', spec('/b/'));
  const sum = (): number => watchers.filter((w) => w.state !== 'ended').reduce((total, w) => total + w.queuedBytes, 0);
  for (let i = 0; i < 20; i++) {
    f.put(i % 2 === 0 ? '/a/k' : '/a/j', 'x'.repeat(i * 10));
    f.put('/b/k', 'y'.repeat(500));
    if (i % 3 === 0) drain(fast);
    assert.equal(f.quotas.account('a')?.bytes, sum());
  }
  assert.ok(sum() > 0);
  assert.equal(f.quotas.account('b')?.bytes, other.queuedBytes, 'b\'s bytes count to b only');
  f.hub.cancel(watchers[1]!);
  assert.equal(f.quotas.account('a')?.bytes, sum(), 'a canceled watcher\'s queue leaves the account');
  drain(stalled);
  drain(fast);
  assert.equal(f.quotas.account('a')?.bytes, 0);
  assert.equal(f.quotas.account('b')?.bytes, 0);
});

test('over maxWatchBytes the tenant\'s slowest watcher ends as a slow consumer, resumable with no gap; its fast watcher and another tenant\'s stalled watcher go on', () => {
  const limit = 4_000;
  const f = new Fixture([tenant('a', { maxWatchBytes: limit }), tenant('b', {})]);
  const aStalled = f.hub.openConnection(() => {}, () => true);
  const aFast = f.hub.openConnection(() => {}, () => true);
  const bStalled = f.hub.openConnection(() => {}, () => true);
  const slow = f.hub.create(aStalled, 'slow', spec('/a/'));
  // A second, less-behind watcher of the same stalled tenant: the slowest is ended first.
  const lagging = f.hub.create(aStalled, 'lagging', spec('/a/k1'));
  f.hub.create(aFast, 'fast', spec('/a/'));
  const b = f.hub.create(bStalled, 'b', spec('/b/'));
  const fastSeen: WatchOutput<string>[] = [];
  let aEvents = 0;
  let laggingAtFirstEnd: string | null = null;
  for (let i = 0; i < 40; i++) {
    f.put(`/a/k${i % 3}`, 'v'.repeat(100));
    aEvents++;
    // b holds far more than a's limit (b has none): never a's victim.
    f.put('/b/k', 'w'.repeat(1_000));
    fastSeen.push(...drain(aFast));
    if (laggingAtFirstEnd === null && (slow.state === 'ended' || lagging.state === 'ended')) {
      assert.equal(slow.state, 'ended', 'the watcher holding the most bytes goes first');
      laggingAtFirstEnd = lagging.state;
    }
    const account = f.quotas.account('a');
    if (slow.state !== 'ended') assert.ok((account?.bytes ?? 0) <= limit + 400, `a stays within its limit and one batch (${account?.bytes})`);
  }
  assert.equal(slow.state, 'ended', 'the stalled watcher was ended');
  assert.equal(b.state, 'synced', 'the other tenant\'s stalled watcher goes on');
  assert.ok(b.queuedBytes > limit, 'and holds more than a\'s limit');
  assert.deepEqual(revisionsOf(fastSeen, 'fast'), range(1, 80).filter((r) => r % 2 === 1), 'the fast watcher saw every event of a');
  const outputs = drain(aStalled);
  const end = outputs.find((o) => o.type === 'end' && o.tag === 'slow');
  assert.ok(end !== undefined && end.type === 'end');
  assert.equal(end.reason, 'slow_consumer');
  assert.equal(end.lastRevision, 0, 'it delivered nothing: resume after revision 0');
  const details = (end.error as SlowConsumerError).details;
  assert.deepEqual([details['tenant'], details['quota'], details['limit'], details['lastRevision']], ['a', 'watch_bytes', limit, 0]);
  assert.ok((details['used'] as number) > limit);
  assert.ok((f.quotas.account('a')?.slowEnded ?? 0) >= 1);
  assert.equal(f.hub.ended.slow_consumer, f.quotas.account('a')?.slowEnded, 'only a\'s watchers were ended');
  // Resumed where it stopped: every event of a, once, in order.
  const resumed = f.hub.create(aStalled, 'resumed', spec('/a/', { startRevision: end.lastRevision + 1 }));
  const seen: number[] = [];
  for (let i = 0; i < 100 && resumed.state !== 'synced'; i++) seen.push(...revisionsOf(drain(aStalled), 'resumed'));
  seen.push(...revisionsOf(drain(aStalled), 'resumed'));
  assert.deepEqual(seen, range(1, 80).filter((r) => r % 2 === 1));
  assert.equal(aEvents, seen.length);
  assert.equal(laggingAtFirstEnd, 'synced', 'the less-behind watcher was still open when the slowest ended');
});

test('a watch creation while its tenant is over its buffered bytes is refused with the details; a resuming one is not; a lowered limit applies at the next events', () => {
  const f = new Fixture([tenant('a', { maxWatchBytes: 100_000 })]);
  const stalled = f.hub.openConnection(() => {}, () => true);
  const watcher = f.hub.create(stalled, 's', spec('/a/'));
  for (let i = 0; i < 6; i++) f.put('/a/k', 'v'.repeat(200));
  const used = f.quotas.account('a')?.bytes ?? 0;
  assert.ok(used > 1_000);
  f.setTable([tenant('a', { maxWatchBytes: 1_000 })]);
  const error = refusal(() => f.hub.create(stalled, 'new', spec('/a/')));
  assert.deepEqual(error.details, { tenant: 'a', quota: 'watch_bytes', limit: 1_000, used });
  assert.ok((error.retryAfterSeconds ?? 0) >= 1);
  assert.equal(f.refused.length, 1, 'the refusal was counted');
  const resumed = f.hub.create(stalled, 'resumed', spec('/a/', { startRevision: 1 }), true);
  assert.equal(resumed.state, 'catchingUp', 'a resuming watch catches up from history (no buffer)');
  assert.equal(watcher.state, 'synced', 'kept until the next events');
  f.put('/a/k', 'v');
  assert.equal(watcher.state, 'ended', 'the lowered limit ends the stalled watcher at the next events');
});

test('eventsPerSecond paces delivery: at most the rate, in order, nothing lost; another tenant is not delayed', () => {
  const rate = 10;
  const f = new Fixture([tenant('a', { eventsPerSecond: rate }), tenant('b', {})]);
  let wakeups = 0;
  const c = f.hub.openConnection(() => wakeups++, () => true);
  const other = f.hub.openConnection(() => {}, () => true);
  const watcher = f.hub.create(c, 'a', spec('/a/'));
  f.hub.create(other, 'b', spec('/b/'));
  const start = f.clock.ms;
  for (let i = 0; i < 50; i++) {
    f.put(`/a/k${i}`);
    f.put(`/b/k${i}`);
  }
  assert.deepEqual(revisionsOf(drain(other), 'b'), range(1, 100).filter((r) => r % 2 === 0), 'b is not paced');
  const seen: Array<{ revision: number; atMs: number }> = [];
  const take = (): void => {
    for (const r of revisionsOf(drain(c), 'a')) seen.push({ revision: r, atMs: f.clock.ms });
  };
  take();
  assert.equal(seen.length, rate, 'a second\'s worth at once (the burst)');
  assert.equal(watcher.paced, true);
  assert.equal(f.clock.pending, 1, 'one timer wakes the tenant');
  for (let step = 0; step < 100 && seen.length < 50; step++) {
    const before = wakeups;
    f.clock.advance(100);
    if (wakeups > before) take();
    const elapsed = f.clock.ms - start;
    assert.ok(seen.length <= rate + Math.floor((elapsed * rate) / 1000) + 1, `${seen.length} events by ${elapsed} ms`);
  }
  assert.deepEqual(seen.map((s) => s.revision), range(1, 100).filter((r) => r % 2 === 1), 'every event, in order, once');
  assert.ok(f.clock.ms - start >= 3_900, `50 events at 10/s after a burst of 10 take about 4 s (${f.clock.ms - start} ms)`);
  assert.ok((f.quotas.account('a')?.pacedWaits ?? 0) > 0);
  assert.equal(f.quotas.account('a')?.bytes, 0);
});

test('eventsPerSecond paces a catching-up watcher too (history holds the events), and a raised limit wakes it at once', () => {
  const f = new Fixture([tenant('a', { eventsPerSecond: 5 })]);
  for (let i = 0; i < 30; i++) f.put(`/a/k${i}`);
  const c = f.hub.openConnection(() => {}, () => true);
  const watcher = f.hub.create(c, 'a', spec('/a/', { startRevision: 1 }));
  const first = revisionsOf(drain(c), 'a');
  // A catch-up batch is never split: it takes its events from the bucket and owes the rest.
  assert.ok(first.length >= 1);
  assert.equal(watcher.paced, true);
  f.put('/a/late');
  assert.equal(drain(c).length, 0, 'still waiting');
  // The table change is applied (here with the next write), long before the timer would fire.
  f.setTable([tenant('a', { eventsPerSecond: null })]);
  f.put('/a/later');
  const rest = revisionsOf(drain(c), 'a');
  assert.deepEqual([...first, ...rest], range(1, 32));
});

test('a paced watcher whose backlog passes its buffer ends as a slow consumer with its resume revision; resumed, it misses nothing', () => {
  const f = new Fixture([tenant('a', { eventsPerSecond: 5 })], { bufferedEventsMax: 20 });
  const c = f.hub.openConnection(() => {}, () => true);
  f.hub.create(c, 'a', spec('/a/'));
  const seen: number[] = [];
  let end: WatchOutput<string> | undefined;
  for (let i = 0; i < 40 && end === undefined; i++) {
    f.put(`/a/k${i}`);
    const outputs = drain(c);
    seen.push(...revisionsOf(outputs, 'a'));
    end = outputs.find((o) => o.type === 'end');
  }
  assert.deepEqual(seen, range(1, 5), 'the burst was delivered, then the rest waited');
  assert.ok(end !== undefined && end.type === 'end');
  assert.equal(end.reason, 'slow_consumer');
  assert.equal(end.lastRevision, 5);
  for (let i = f.store.revision; i < 40; i++) f.put(`/a/more${i}`);
  f.setTable([tenant('a', { eventsPerSecond: null })]);
  f.hub.create(c, 'again', spec('/a/', { startRevision: end.lastRevision + 1 }));
  for (let i = 0; i < 20; i++) seen.push(...revisionsOf(drain(c), 'again'));
  assert.deepEqual(seen, range(1, f.store.revision));
});

test('an event rate of 0 refuses the watch (nothing would ever be delivered)', () => {
  const f = new Fixture([tenant('a', { eventsPerSecond: 0 })]);
  const c = f.hub.openConnection(() => {}, () => true);
  const error = refusal(() => f.hub.create(c, 'a', spec('/a/')));
  assert.deepEqual([error.details['tenant'], error.details['quota'], error.details['limit']], ['a', 'events_per_second', 0]);
  assert.equal(f.quotas.account('a')?.watchers, 0, 'a refused watch takes no slot');
});
