// The watch iterator's resume rules, driven through a fake stream (no network): after a dropped
// connection or a server-side end it re-creates the watch from the revision after the last one
// delivered, drops replayed events so nothing is seen twice, throws CompactedError with the
// compaction revision, and bounds its unread queue with a slow_consumer end.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BatonClient, CompactedError, SlowConsumerError, Watch, type WatchBatch } from '../../../src/client/index.js';
import type { WatchStream } from '../../../src/client/watch.js';
import type { ServerFrame, StreamSubscriber } from '../../../src/client/stream-connection.js';

class FakeStream implements WatchStream {
  readonly sent: Record<string, unknown>[] = [];
  readonly subscribers = new Map<string, StreamSubscriber>();
  connected = true;
  subscribe(id: string, subscriber: StreamSubscriber): void {
    this.subscribers.set(id, subscriber);
    if (this.connected) subscriber.onConnected();
  }
  unsubscribe(id: string): void {
    this.subscribers.delete(id);
  }
  send(frame: Record<string, unknown>): boolean {
    if (!this.connected) return false;
    this.sent.push(frame);
    return true;
  }
  /** The last watch frame sent, and its id. */
  lastWatch(): Record<string, unknown> {
    const frames = this.sent.filter((f) => f['type'] === 'watch');
    return frames[frames.length - 1] as Record<string, unknown>;
  }
  deliver(frame: Omit<ServerFrame, 'id'>): void {
    const id = this.lastWatch()['id'] as string;
    this.subscribers.get(id)?.onFrame({ id, ...frame } as ServerFrame);
  }
  drop(): void {
    this.connected = false;
    for (const s of this.subscribers.values()) s.onDisconnected();
  }
  reconnect(): void {
    this.connected = true;
    for (const s of [...this.subscribers.values()]) s.onConnected();
  }
}

const put = (key: string, revision: number) => ({
  type: 'put',
  kv: { key, value: 'v', version: 1, createRevision: revision, modRevision: revision, lease: 0 },
});

async function take(watch: Watch, count: number): Promise<WatchBatch[]> {
  const out: WatchBatch[] = [];
  const iterator = watch[Symbol.asyncIterator]();
  while (out.length < count) {
    const next = await iterator.next();
    if (next.done === true) break;
    out.push(next.value);
  }
  return out;
}

test('resumes after a dropped connection from the revision after the last batch, without duplicates', async () => {
  const stream = new FakeStream();
  const watch = new Watch(stream, '/a/', { prefix: true });
  assert.equal(stream.lastWatch()['startRevision'], undefined); // from now
  stream.deliver({ type: 'created', startRevision: 10, revision: 9 });
  stream.deliver({ type: 'events', revision: 10, events: [put('/a/1', 10)] });
  stream.deliver({ type: 'events', revision: 12, events: [put('/a/2', 12)] });
  stream.drop();
  stream.reconnect();
  assert.equal(stream.lastWatch()['startRevision'], 13);
  // A server that replays (it should not) is filtered: 12 was delivered already.
  stream.deliver({ type: 'events', revision: 13, events: [put('/a/2', 12), put('/a/3', 13)] });
  const batches = await take(watch, 3);
  assert.deepEqual(batches.flatMap((b) => b.events.map((e) => e.kv.modRevision)), [10, 12, 13]);
  watch.cancel();
});

test('a server end (unavailable, slow_consumer) re-creates the watch from lastRevision + 1', async () => {
  const stream = new FakeStream();
  const watch = new Watch(stream, '/b', { startRevision: 5 });
  assert.equal(stream.lastWatch()['startRevision'], 5);
  const firstId = stream.lastWatch()['id'];
  stream.deliver({ type: 'events', revision: 7, events: [put('/b', 7)] });
  stream.deliver({ type: 'error', error: { code: 'unavailable', message: 'node stopping', lastRevision: 9 } });
  const deadline = Date.now() + 2_000;
  while (stream.lastWatch()['id'] === firstId && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  assert.notEqual(stream.lastWatch()['id'], firstId);
  assert.equal(stream.lastWatch()['startRevision'], 10);
  assert.equal(watch.resumes, 1);
  watch.cancel();
});

test('compacted is thrown with the compaction revision', async () => {
  const stream = new FakeStream();
  const watch = new Watch(stream, '/c', { startRevision: 2 });
  stream.deliver({ type: 'error', error: { code: 'compacted', message: 'gone', compactRevision: 40, lastRevision: 1 } });
  await assert.rejects(take(watch, 1), (error: Error) => {
    assert.ok(error instanceof CompactedError);
    assert.equal(error.details['compactRevision'], 40);
    return true;
  });
});

test('an unread queue past its bound ends the watch with slow_consumer after the queued batches', async () => {
  const stream = new FakeStream();
  const watch = new Watch(stream, '/d', { startRevision: 1, bufferedBatchesMax: 2 });
  for (const revision of [1, 2, 3]) stream.deliver({ type: 'events', revision, events: [put('/d', revision)] });
  const seen: number[] = [];
  await assert.rejects(
    (async () => {
      for await (const batch of watch) seen.push(batch.revision);
    })(),
    (error: Error) => error instanceof SlowConsumerError && error.details['lastRevision'] === 2,
  );
  assert.deepEqual(seen, [1, 2]);
  assert.ok(stream.sent.some((f) => f['type'] === 'cancel'));
});

test('client.close() ends the loops of its open watches', async () => {
  const client = new BatonClient({ endpoints: ['http://127.0.0.1:1'], discover: false }); // nothing listens
  const watch = client.watch('/x', { prefix: true });
  const loop = (async () => {
    for await (const batch of watch) assert.fail(`unexpected batch ${batch.revision}`);
    return 'ended';
  })();
  await new Promise((resolve) => setTimeout(resolve, 50));
  await client.close();
  assert.equal(await loop, 'ended');
});

test('a current revision that is not one (a router\'s status has none) starts the watch from now', async () => {
  const stream = new FakeStream();
  const watch = new Watch(stream, '/r', {}, undefined, async () => (undefined as unknown as number));
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(stream.lastWatch()['startRevision'], undefined, 'from now, not from NaN');
  stream.deliver({ type: 'created', startRevision: 7, revision: 6 });
  assert.equal(watch.resumeRevision, 7);
  stream.deliver({ type: 'events', revision: 7, events: [put('/r', 7)] });
  const [batch] = await take(watch, 1);
  assert.equal(batch?.events[0]?.kv.modRevision, 7);
  watch.cancel();
});
