// The two watch transports in one process (real HTTP server and sockets, no Raft): SSE as api.md
// describes it (ordered batches, the announced start, compacted and quota errors, a paused reader
// ended with slow_consumer whose last revision resumes without a gap), and the multiplexed stream
// (many watches and key-value frames on one socket, cancel one without the others, clean stop).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { utf8 } from '../../../src/mvcc/index.js';
import { defaultWatchLimits } from '../../../src/watch/index.js';
import { SseClient, StreamClient, startInProcessNode, type InProcessNode } from './in-process.js';

let node: InProcessNode;
before(async () => {
  node = await startInProcessNode({
    limits: { ...defaultWatchLimits, bufferedEventsMax: 64, bufferedBytesMax: 2 * 1024 * 1024, watchersPerNodeMax: 20 },
    endGraceMs: 5000,
    leaderlessEndMs: 100,
  });
});
after(async () => {
  await node.stop();
});

const put = (key: string, value: string) => node.cell.apply({ type: 'put', key, value: utf8(value) });

test('SSE: ordered batches, prevKv, base64, the announced start of a watch from now', async () => {
  put('/sse/a', 'one');
  const base = node.cell.revision();
  const fromNow = new SseClient(`${node.url}/v1/watch?key=/sse/&prefix=true`);
  const past = new SseClient(`${node.url}/v1/watch?key=/sse/a&startRevision=${base}&prevKv=true`);
  const encoded = new SseClient(`${node.url}/v1/watch?key=/sse/a&startRevision=${base}&encoding=base64&filter=delete`);
  await fromNow.until((m) => m.length === 1);
  assert.deepEqual(fromNow.messages[0], { revision: base, events: [] }, 'a watch from now names its start');
  put('/sse/a', 'two');
  node.cell.apply({ type: 'delete', key: '/sse/a' });
  await fromNow.until((m) => m.length === 3);
  await past.until((m) => m.flatMap((b) => b.events).length === 3);
  await encoded.until((m) => m.length === 1);
  assert.deepEqual(fromNow.messages.slice(1).map((b) => b.events.map((e: any) => `${e.type}:${e.kv.value}`)), [['put:two'], ['delete:']]);
  const events = past.messages.flatMap((b) => b.events);
  assert.deepEqual(events.map((e: any) => e.kv.modRevision), [base, base + 1, base + 2]);
  assert.equal(events[1].prevKv.value, 'one');
  assert.equal(encoded.messages[0].events[0].kv.key, Buffer.from('/sse/a').toString('base64'));
  for (const client of [fromNow, past, encoded]) client.close();
});

test('SSE: a start below compaction ends with compacted; past the node quota is 429', async () => {
  for (let i = 0; i < 3; i++) put('/old', String(i));
  await node.cell.compact(node.cell.revision());
  const compacted = new SseClient(`${node.url}/v1/watch?key=/old&startRevision=1`);
  await compacted.done;
  assert.equal(compacted.messages.at(-1)?.error?.code, 'compacted');
  assert.equal(compacted.messages.at(-1)?.error?.compactRevision, node.cell.store.compactRevision);
  const many = Array.from({ length: 20 }, () => new SseClient(`${node.url}/v1/watch?key=/q`));
  await Promise.all(many.map((c) => c.until(() => c.status !== 0)));
  const refused = await fetch(`${node.url}/v1/watch?key=/q`);
  assert.equal(refused.status, 429);
  assert.equal(((await refused.json()) as any).error.code, 'quota_exceeded');
  assert.ok(refused.headers.get('retry-after') !== null);
  for (const c of many) c.close();
  await waitFor(() => node.service.hub.size === 0);
});

test('SSE: a reader that stops reading ends with slow_consumer, resumes from its last revision with no gap', async () => {
  const slow = new SseClient(`${node.url}/v1/watch?key=/slow`);
  const fast = new SseClient(`${node.url}/v1/watch?key=/slow`);
  await slow.until((m) => m.length === 1);
  await fast.until((m) => m.length === 1);
  slow.response.pause();
  const first = node.cell.revision() + 1;
  const value = 'x'.repeat(64 * 1024);
  // Write until the node ends the paused reader (the kernel's socket buffers absorb a few MB
  // first, then its bounded queue fills), paced so the fast reader in this process keeps up.
  let count = 0;
  for (; count < 2000 && node.service.hub.size === 2; count++) {
    put('/slow', `${count}:${value}`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  assert.equal(node.service.hub.size, 1, `the paused reader was ended after ${count} writes`);
  const last = node.cell.revision();
  await fast.until((m) => m.flatMap((b) => b.events ?? []).length === count || m.at(-1)?.error !== undefined, 20_000);
  assert.equal(fast.messages.at(-1)?.error, undefined, 'the fast reader is not ended');
  slow.response.resume();
  await slow.done;
  const end = slow.messages.at(-1);
  assert.equal(end?.error?.code, 'slow_consumer');
  const seen = slow.messages.flatMap((b) => b.events ?? []).map((e: any) => e.kv.modRevision);
  assert.ok(seen.length < count, 'it did not get everything');
  assert.equal(end.error.lastRevision, slow.messages.at(-2).revision, 'the last revision it was sent');
  const resumed = new SseClient(`${node.url}/v1/watch?key=/slow&startRevision=${end.error.lastRevision + 1}`);
  await resumed.until((m) => m.flatMap((b) => b.events).length === last - end.error.lastRevision, 20_000);
  const all = [...seen, ...resumed.messages.flatMap((b) => b.events).map((e: any) => e.kv.modRevision)];
  assert.deepEqual(all, Array.from({ length: count }, (_, i) => first + i), 'no gap, no duplicate');
  for (const c of [fast, resumed]) c.close();
});

test('stream: many watches and key-value frames on one socket; cancel one, the others go on', async () => {
  const client = await StreamClient.open(node.wsUrl);
  client.send({ id: 'a', type: 'watch', key: '/m/a' });
  client.send({ id: 'all', type: 'watch', key: '/m/', prefix: true, prevKv: true });
  client.send({ id: 7, type: 'watch', key: '/m/b', filter: 'put' });
  client.send({ id: 'a', type: 'watch', key: '/m/x' });
  await client.until((f) => f.filter((x) => x.type === 'created').length === 3 && f.some((x) => x.type === 'error'));
  assert.equal(client.of('a').find((f) => f.type === 'error')?.error.code, 'invalid_argument', 'ids are unique');
  client.send({ id: 'p1', type: 'put', key: '/m/a', value: '1' });
  client.send({ id: 'p2', type: 'put', key: '/m/b', value: '2' });
  await client.until((f) => f.filter((x) => x.type === 'events').length === 4);
  client.send({ id: 'a', type: 'cancel' });
  await client.until((f) => f.some((x) => x.type === 'canceled'));
  client.send({ id: 'p3', type: 'put', key: '/m/a', value: '3' });
  client.send({ id: 'd', type: 'delete', key: '/m/b' });
  client.send({ id: 'g', type: 'get', key: '/m/', prefix: true, consistency: 'serializable' });
  client.send({ id: 'bad', type: 'put', key: 'no-slash', value: 'x' });
  client.send({ id: 'k', type: 'keepalive', ids: [1] });
  await client.until((f) => f.some((x) => x.id === 'g') && f.filter((x) => x.id === 'all' && x.type === 'events').length === 4);
  const keys = (id: unknown) => client.of(id).filter((f) => f.type === 'events').flatMap((f) => f.events.map((e: any) => `${e.type}:${e.kv.key}`));
  assert.deepEqual(keys('a'), ['put:/m/a'], 'canceled watch gets nothing more');
  assert.deepEqual(keys('all'), ['put:/m/a', 'put:/m/b', 'put:/m/a', 'delete:/m/b']);
  assert.deepEqual(keys(7), ['put:/m/b']);
  assert.equal(client.of('all').at(-1).events[0].prevKv.value, '2');
  assert.equal(client.of('p1')[0].result.created, true);
  assert.deepEqual(client.of('g')[0].result.kvs.map((kv: any) => kv.value), ['3']);
  assert.equal(client.of('bad')[0].error.code, 'invalid_argument');
  assert.equal(client.of('k')[0].error.code, 'invalid_argument', 'unknown frame types are refused, by name');
  client.close();
});

test('a node without a leader too long ends its watches and refuses new ones until it has one', async () => {
  const sse = new SseClient(`${node.url}/v1/watch?key=/lonely`);
  const client = await StreamClient.open(node.wsUrl);
  client.send({ id: 'w', type: 'watch', key: '/lonely' });
  await client.until((f) => f.length === 1);
  await sse.until((m) => m.length === 1);
  node.service.onLeaderChange(0);
  node.service.onLeaderChange(0);
  await sse.done;
  assert.equal(sse.messages.at(-1)?.error?.code, 'unavailable');
  await client.until((f) => f.some((x) => x.type === 'error'));
  assert.equal(client.of('w').at(-1).error.code, 'unavailable');
  assert.equal((await fetch(`${node.url}/v1/watch?key=/lonely`)).status, 503);
  node.service.onLeaderChange(2);
  client.send({ id: 'w', type: 'watch', key: '/lonely' });
  await client.until((f) => f.filter((x) => x.type === 'created').length === 2);
  client.close();
});

test('stop: every stream ends with unavailable and its last revision, sockets close', async () => {
  const sse = new SseClient(`${node.url}/v1/watch?key=/end`);
  const client = await StreamClient.open(node.wsUrl);
  client.send({ id: 'w', type: 'watch', key: '/end' });
  await client.until((f) => f.length === 1);
  await sse.until((m) => m.length === 1);
  await node.service.stop();
  await sse.done;
  assert.equal(sse.messages.at(-1)?.error?.code, 'unavailable');
  assert.equal(sse.messages.at(-1)?.error?.lastRevision, node.cell.revision());
  await client.until((f) => f.some((x) => x.type === 'error'));
  assert.equal(client.of('w').at(-1).error.code, 'unavailable');
  await waitFor(() => client.closeCode === 1001);
});

async function waitFor(predicate: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
