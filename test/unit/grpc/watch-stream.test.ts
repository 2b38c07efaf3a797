// The etcd Watch stream over the real watch hub and MVCC store, with a stand-in for grpc-js's
// duplex call that can refuse writes (backpressure): a watcher that overflows while the client
// does not read is re-created behind the scenes and the client still gets every revision once,
// in order; compaction cancels with etcd's compact_revision; ranges that are not a prefix and
// NOPUT filter on the node; a progress request is answered once every watcher has caught up.
import { AccessGuard } from '../../../src/auth/index.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { MemoryEngine, MvccStore, utf8, type Command } from '../../../src/mvcc/index.js';
import { TenantWatchQuotas, defaultWatchLimits } from '../../../src/watch/index.js';
import { tenantOfKey, unlimited, type TenantLimits, type TenantRecord } from '../../../src/base/tenants.js';
import { WatchService } from '../../../src/api/stream/watch-service.js';
import { HeaderSource } from '../../../src/api/grpc/header.js';
import { prefixEnd } from '../../../src/api/grpc/keys.js';
import { serveWatchStream, type WatchCall, type WatchRequestMsg } from '../../../src/api/grpc/watch-stream.js';
import type { CellApi } from '../../../src/api/types.js';
import { commandEntry } from '../watch/model.js';

interface Sent {
  watch_id: string;
  created?: boolean;
  canceled?: boolean;
  compact_revision?: string;
  cancel_reason?: string;
  header: { revision: string };
  events?: { type: number; kv: { key: Buffer; mod_revision: string } }[];
}

class FakeCall extends EventEmitter {
  readonly sent: Sent[] = [];
  blocked = false;
  ended = false;
  error: unknown = null;
  write(message: unknown): boolean {
    this.sent.push(message as Sent);
    return !this.blocked;
  }
  end(): void {
    this.ended = true;
  }
  unblock(): void {
    this.blocked = false;
    this.emit('drain');
  }
  request(message: WatchRequestMsg): void {
    this.emit('data', message);
  }
}

class Fixture {
  readonly store = new MvccStore(new MemoryEngine());
  readonly service: WatchService;
  readonly headers: HeaderSource;
  private index = 0;
  constructor(bufferedEventsMax = defaultWatchLimits.bufferedEventsMax, tenants: TenantRecord[] = []) {
    const quotas = tenants.length === 0 ? null : new TenantWatchQuotas({
      tenantOf: (key) => tenantOfKey(tenants, key),
      tenants: () => tenants,
      nowMs: () => performance.now(),
      schedule: (run, ms) => {
        const timer = setTimeout(run, ms);
        return { cancel: () => clearTimeout(timer) };
      },
      refuse: (error) => error,
    });
    this.service = new WatchService(this.store, new AccessGuard(this.store), { limits: { ...defaultWatchLimits, bufferedEventsMax } }, null, quotas);
    const store = this.store;
    const cell = {
      revision: () => store.revision,
      status: () => ({ clusterId: '00000000000000ab', member: 1, term: 1 }),
    } as unknown as CellApi;
    this.headers = new HeaderSource(cell);
  }
  apply(command: Command): void {
    this.store.applyBatch([commandEntry(++this.index, command)]);
    this.service.onApplied();
  }
  put(key: string, value = 'v'): void {
    this.apply({ type: 'put', key: `/${key}`, value: utf8(value) });
  }
  open(): FakeCall {
    const call = new FakeCall();
    serveWatchStream(call as unknown as WatchCall, this.service, this.headers, (error) => assert.fail(String(error)));
    return call;
  }
}

const create = (key: string, fields: Partial<NonNullable<WatchRequestMsg['create_request']>> = {}): WatchRequestMsg => ({
  create_request: {
    key: Buffer.from(key),
    range_end: prefixEnd(Buffer.from(key)),
    start_revision: '0',
    progress_notify: false,
    filters: [],
    prev_kv: false,
    watch_id: '0',
    ...fields,
  },
});

const turns = async (n = 20): Promise<void> => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
};

const revisionsOf = (sent: Sent[], id = '0'): number[] =>
  sent.filter((m) => m.watch_id === id).flatMap((m) => (m.events ?? []).map((e) => Number(e.kv.mod_revision)));

test('a client that stops reading loses nothing: the overflowing watcher resumes where it stopped', async () => {
  const f = new Fixture(4);
  const call = f.open();
  call.request(create('k/'));
  assert.equal(call.sent[0]?.created, true);
  call.blocked = true;
  for (let i = 0; i < 60; i++) f.put(`k/${i % 7}`);
  await turns();
  call.unblock();
  await turns(200);
  assert.deepEqual(revisionsOf(call.sent), Array.from({ length: 60 }, (_, i) => i + 1));
  assert.equal(call.sent.some((m) => m.canceled === true), false);
});

const tenant = (limits: Partial<TenantLimits>): TenantRecord => ({ name: 't', prefixes: ['/t/'], limits: { ...unlimited, ...limits } });

test('a watcher its tenant\'s buffered bytes ended is re-created unseen even while the tenant is still over them (it starts from history): every revision once', async () => {
  const f = new Fixture(defaultWatchLimits.bufferedEventsMax, [tenant({ maxWatchBytes: 1_500 })]);
  // Another watcher of the tenant holds one big batch: never a victim (not behind), but its bytes
  // keep the tenant over its limit.
  const other = f.service.hub.openConnection(() => {}, () => true);
  f.service.hub.create(other, { id: 'big', key: 'big' }, { key: '/t/big', prefix: false, startRevision: 0, prevKv: false, filter: 'all', encoding: 'utf8' });
  const call = f.open();
  call.request(create('t/k'));
  assert.equal(call.sent[0]?.created, true);
  call.blocked = true;
  f.put('t/big', 'x'.repeat(2_000));
  for (let i = 0; i < 30; i++) f.put(`t/k${i % 5}`, 'v'.repeat(50));
  await turns();
  assert.ok(f.service.hub.ended.slow_consumer >= 1, 'the stalled gRPC watcher was ended for its tenant\'s bytes');
  call.unblock();
  await turns(200);
  assert.equal(call.sent.some((m) => m.canceled === true), false, JSON.stringify(call.sent.filter((m) => m.canceled)));
  assert.deepEqual(revisionsOf(call.sent), Array.from({ length: 30 }, (_, i) => i + 2));
});

test('a slow watcher whose re-creation a quota refuses (its slot taken meanwhile) is canceled with the reason; the stream goes on', async () => {
  const f = new Fixture(4, [tenant({ maxWatches: 1 })]);
  const call = f.open();
  call.request(create('t/'));
  call.request(create('u/'));
  call.blocked = true;
  for (let i = 0; i < 20; i++) f.put(`t/${i % 3}`);
  assert.equal(f.service.hub.ended.slow_consumer, 1, 'it overflowed its own buffer');
  // Its slot went back when it ended; another watch of the tenant takes it before the stream's
  // next turn re-creates it.
  const other = f.service.hub.openConnection(() => {}, () => true);
  f.service.hub.create(other, { id: 'thief', key: 'thief' }, { key: '/t/', prefix: true, startRevision: 0, prevKv: false, filter: 'all', encoding: 'utf8' });
  await turns();
  call.unblock();
  await turns(200);
  const canceled = call.sent.find((m) => m.canceled === true && m.watch_id === '0');
  assert.ok(canceled !== undefined, JSON.stringify(call.sent.slice(-3)));
  assert.match(canceled.cancel_reason ?? '', /too many requests \(tenant t is over its watches quota/);
  f.put('u/x');
  await turns(50);
  assert.deepEqual(revisionsOf(call.sent, '1'), [21], 'the stream\'s other watch goes on');
});

test('compaction cancels with etcd compact_revision; a non-prefix range and NOPUT filter on the node', async () => {
  const f = new Fixture();
  for (let i = 0; i < 5; i++) f.put(`a/${i}`);
  f.apply({ type: 'compact', revision: 4 });
  const call = f.open();
  call.request(create('a/', { start_revision: '2' }));
  await turns();
  const canceled = call.sent.find((m) => m.canceled === true);
  assert.equal(canceled?.compact_revision, '4');
  assert.equal(canceled?.cancel_reason, 'etcdserver: mvcc: required revision has been compacted');

  // [b/2, b/5) only, deletes only (NOPUT = 0), with a client-chosen watch id.
  call.request(create('b/2', { range_end: Buffer.from('b/5'), filters: [0], watch_id: '7' }));
  for (const key of ['b/1', 'b/2', 'b/5', 'b/3']) f.put(key);
  for (const key of ['/b/1', '/b/2', '/b/5', '/b/3']) f.apply({ type: 'delete', key });
  await turns();
  const events = call.sent.filter((m) => m.watch_id === '7').flatMap((m) => m.events ?? []);
  assert.deepEqual(events.map((e) => `${e.type}:${e.kv.key.toString()}`), ['1:b/2', '1:b/3']);

  // A progress request: watch id -1 at the hub's revision once every watcher has caught up.
  call.request({ progress_request: {} });
  await turns();
  const progress = call.sent.at(-1);
  assert.equal(progress?.watch_id, '-1');
  assert.equal(progress?.header.revision, f.store.revision);

  // Cancel: answered, and nothing more for that watch.
  call.request({ cancel_request: { watch_id: '7' } });
  assert.equal(call.sent.at(-1)?.canceled, true);
  f.put('b/4');
  f.apply({ type: 'delete', key: '/b/4' });
  await turns();
  assert.equal(call.sent.filter((m) => m.watch_id === '7').flatMap((m) => m.events ?? []).length, 2);
});
