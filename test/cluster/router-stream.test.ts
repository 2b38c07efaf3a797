// The WebSocket stream (/v1/stream) through a router (docs/design/cells.md "The router's stream"),
// on real processes: a control-plane cell, two data cells (cell-2 with three members) and a router
// in this process (so a test can make its cache stale on purpose). One client stream reaches
// namespaces on both cells; what it writes is on the owning cell (read back from each cell
// directly); a watch sees what is written straight to the owning cell, in order; duplicate ids
// get their own answers; a frame spanning cells is refused and writes nothing; a stale router
// corrects itself; keepalives reach the cell holding the lease; losing the member a stream is
// relayed to ends its watch and pending request with `unavailable` (never a silent hang).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { http, sleep, startRouter, startTestCell, type TestCell, within } from './harness.js';
import type { Router } from '../../src/router/router.js';
import { BatonClient } from '../../src/client/index.js';

let control: TestCell;
let cell1: TestCell;
let cell2: TestCell;
let router: Router;
let routerUrl: string;

const json = (method: string, body: unknown): RequestInit => ({ method, body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
const b64 = (text: string): string => Buffer.from(text).toString('base64');

/** A bare stream client: every frame received is kept until a test takes it. */
class Stream {
  readonly frames: any[] = [];
  private wake: (() => void) | null = null;
  epoch: string | undefined;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      this.frames.push(JSON.parse(String(data)));
      this.wake?.();
    });
    ws.on('close', () => this.wake?.());
  }

  static async open(headers: Record<string, string> = {}): Promise<Stream> {
    const ws = new WebSocket(`${routerUrl.replace(/^http/, 'ws')}/v1/stream`, { headers, perMessageDeflate: false });
    const stream = new Stream(ws);
    ws.once('upgrade', (res) => {
      stream.epoch = res.headers['baton-routing-epoch'] as string | undefined;
    });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    return stream;
  }

  send(frame: Record<string, unknown>): void {
    this.ws.send(JSON.stringify(frame));
  }

  /** The first frame (received or to come) that matches, taken out of the list. */
  async take(match: (frame: any) => boolean, what: string, timeoutMs = 10_000): Promise<any> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const index = this.frames.findIndex(match);
      if (index >= 0) return this.frames.splice(index, 1)[0];
      const left = until - Date.now();
      if (left <= 0) assert.fail(`timed out waiting for ${what}; frames: ${JSON.stringify(this.frames).slice(0, 500)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  /** The answer (result or error) to a request frame. */
  async answer(id: unknown): Promise<any> {
    return this.take((f) => f.id === id && (f.type === 'result' || f.type === 'error'), `the answer to ${JSON.stringify(id)}`);
  }

  async request(frame: Record<string, unknown>): Promise<any> {
    this.send(frame);
    const answer = await this.answer(frame['id']);
    assert.equal(answer.type, 'result', `${JSON.stringify(frame).slice(0, 200)}: ${JSON.stringify(answer)}`);
    return answer.result;
  }

  close(): void {
    this.ws.close();
  }
}

async function metric(name: string, cell: string): Promise<number> {
  const text = (await http(`${routerUrl}/metrics`)).body as string;
  const line = text.split('\n').find((l) => l.startsWith(`${name}{cell="${cell}"}`));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

async function valueOn(cell: TestCell, key: string, member = 0): Promise<string | number> {
  const answer = await http(`${cell.cell.clientUrls()[member]}/v1/kv${key}`);
  return answer.status === 200 ? answer.body.kvs[0].value : answer.status;
}

before(async () => {
  [control, cell1, cell2] = await Promise.all([
    startTestCell({ size: 1, extraArgs: ['--cell', 'control', '--control-plane'] }),
    startTestCell({ size: 1, extraArgs: ['--cell', 'cell-1'] }),
    startTestCell({ size: 3, extraArgs: ['--cell', 'cell-2'] }),
  ]);
  const controlUrl = control.cell.clientUrls()[0] as string;
  for (const [id, cell] of [['cell-1', cell1], ['cell-2', cell2]] as const) {
    const added = await http(`${controlUrl}/v1/control/cells`, json('POST', { id, endpoints: cell.cell.clientUrls() }));
    assert.equal(added.status, 200, JSON.stringify(added.body));
  }
  const created = await http(`${controlUrl}/v1/control/namespaces`, json('POST', { prefix: '/payments/', cell: 'cell-2' }));
  assert.equal(created.status, 200, JSON.stringify(created.body));
  assert.deepEqual(created.body.pending, [], 'both cells took the map');
  ({ router, url: routerUrl } = await startRouter(control, { knows: '/payments/' }));
}, { timeout: 120_000 });

after(async () => {
  await router?.stop();
  await Promise.all([control, cell1, cell2].map((cell) => cell?.close()));
});

test('one stream: put, get and txn reach namespaces on two cells and land on the owners', { timeout: 30_000 }, async () => {
  const stream = await Stream.open();
  try {
    assert.equal(stream.epoch, String(router.cache.cellMap.epoch), 'the upgrade answer carries Baton-Routing-Epoch');
    const before = { one: await metric('baton_router_stream_frames_total', 'cell-1'), two: await metric('baton_router_stream_frames_total', 'cell-2') };
    stream.send({ id: 1, type: 'put', key: '/payments/s1', value: 'p1' });
    stream.send({ id: 2, type: 'put', key: '/orders/s1', value: 'o1' });
    for (const id of [1, 2]) assert.equal((await stream.answer(id)).type, 'result');
    assert.equal((await stream.request({ id: 3, type: 'get', key: '/payments/s1' })).kvs[0].value, 'p1');
    assert.equal((await stream.request({ id: 4, type: 'get', key: '/orders/s1' })).kvs[0].value, 'o1');
    const txn = await stream.request({
      id: 5, type: 'txn',
      compare: [{ key: '/payments/s1', target: 'value', op: '==', value: 'p1' }],
      success: [{ put: { key: '/payments/s2', value: 't2' } }], failure: [],
    });
    assert.equal(txn.succeeded, true);
    // Keys in base64 are routed by what they decode to: /orders/s2 is cell-1's.
    const encoded = await stream.request({ id: 6, type: 'txn', encoding: 'base64', compare: [], success: [{ put: { key: b64('/orders/s2'), value: b64('b64') } }], failure: [] });
    assert.equal(encoded.succeeded, true);

    // Read back from each cell directly; the other cell refuses the key (421: not its namespace).
    assert.equal(await valueOn(cell2, '/payments/s1', 1), 'p1');
    assert.equal(await valueOn(cell2, '/payments/s2', 2), 't2');
    assert.equal(await valueOn(cell1, '/orders/s1'), 'o1');
    assert.equal(await valueOn(cell1, '/orders/s2'), 'b64');
    assert.equal(await valueOn(cell1, '/payments/s1'), 421);
    assert.equal(await valueOn(cell2, '/orders/s1'), 421);
    assert.equal(await metric('baton_router_stream_frames_total', 'cell-2') - before.two, 3, 'put, get, txn to cell-2');
    assert.equal(await metric('baton_router_stream_frames_total', 'cell-1') - before.one, 3, 'put, get, txn to cell-1');
  } finally {
    stream.close();
  }
});

test('a watch through the router sees puts made on the owning cell, in order, no gap; cancel ends it', { timeout: 30_000 }, async () => {
  const stream = await Stream.open();
  try {
    stream.send({ id: 'w', type: 'watch', key: '/payments/w/', prefix: true });
    const created = await stream.take((f) => f.id === 'w' && f.type !== 'events', 'created');
    assert.equal(created.type, 'created', JSON.stringify(created));
    const revisions: number[] = [];
    for (let i = 0; i < 5; i++) {
      const put = await http(`${cell2.cell.clientUrls()[i % 3]}/v1/kv/payments/w/${i}`, { method: 'PUT', body: `v${i}` });
      assert.ok(put.status === 200 || put.status === 201, JSON.stringify(put.body));
      revisions.push(put.body.revision as number);
    }
    assert.equal(revisions[0], created.startRevision, 'the first put is the first revision the watch covers');
    const seen: { key: string; value: string; modRevision: number }[] = [];
    while (seen.length < 5) {
      const batch = await stream.take((f) => f.id === 'w', 'events');
      assert.equal(batch.type, 'events', JSON.stringify(batch));
      for (const event of batch.events) seen.push({ key: event.kv.key, value: event.kv.value, modRevision: event.kv.modRevision });
    }
    assert.deepEqual(seen, revisions.map((revision, i) => ({ key: `/payments/w/${i}`, value: `v${i}`, modRevision: revision })));

    stream.send({ id: 'w', type: 'cancel' });
    const canceled = await stream.take((f) => f.id === 'w' && f.type !== 'events', 'canceled');
    assert.equal(canceled.type, 'canceled', JSON.stringify(canceled));
    assert.ok(canceled.lastRevision >= (revisions.at(-1) as number));
    await http(`${cell2.cell.clientUrls()[0]}/v1/kv/payments/w/late`, { method: 'PUT', body: 'late' });
    await sleep(300);
    assert.deepEqual(stream.frames.filter((f) => f.id === 'w'), [], 'nothing after canceled');

    // The id is free again; a watch from a past revision replays through the router.
    stream.send({ id: 'w', type: 'watch', key: '/payments/w/', prefix: true, startRevision: revisions[0] });
    assert.equal((await stream.take((f) => f.id === 'w', 'created again')).type, 'created');
    const replay: string[] = [];
    while (replay.length < 6) for (const event of (await stream.take((f) => f.id === 'w', 'replay')).events) replay.push(event.kv.key);
    assert.deepEqual(replay, [0, 1, 2, 3, 4].map((i) => `/payments/w/${i}`).concat('/payments/w/late'));
    stream.send({ id: 'w', type: 'progress', extra: 1 });
    assert.equal((await stream.take((f) => f.id === 'w' && f.type === 'error', 'a refused progress')).error.code, 'invalid_argument');
  } finally {
    stream.close();
  }
});

test('the client library, pointed at the router, watches a namespace of cell-2 over its stream', { timeout: 30_000 }, async () => {
  const client = new BatonClient({ endpoints: [routerUrl], discover: false });
  try {
    const watch = client.watch('/payments/lib/', { prefix: true });
    const iterator = watch[Symbol.asyncIterator]();
    // "From now": the router's status has no revision, so the server's created frame says where.
    const until = Date.now() + 10_000;
    while (!(watch.resumeRevision > 0) && Date.now() < until) await sleep(20);
    assert.ok(watch.resumeRevision > 0, `the watch was created (resume revision ${watch.resumeRevision})`);
    const put = await client.put('/payments/lib/a', 'lib');
    const batch = await within(iterator.next(), 10_000, () => assert.fail('no batch'));
    assert.equal((batch as IteratorResult<{ events: { kv: { key: string; modRevision: number } }[] }>).value.events[0]?.kv.key, '/payments/lib/a');
    assert.equal((batch as IteratorResult<{ events: { kv: { modRevision: number } }[] }>).value.events[0]?.kv.modRevision, put.revision);
    watch.cancel();
  } finally {
    await client.close();
  }
});

test('duplicate request ids in flight each get their own answer', { timeout: 30_000 }, async () => {
  const stream = await Stream.open();
  try {
    // Three gets with one id, on two cells (two on cell-2, on one upstream), sent at once.
    for (const key of ['/payments/s1', '/orders/s1', '/payments/s2']) stream.send({ id: 'dup', type: 'get', key });
    const values: string[] = [];
    for (let i = 0; i < 3; i++) {
      const answer = await stream.answer('dup');
      assert.equal(answer.type, 'result', JSON.stringify(answer));
      values.push(answer.result.kvs[0].value);
    }
    assert.deepEqual(values.sort(), ['o1', 'p1', 't2']);
    for (const key of ['/payments/d', '/orders/d']) stream.send({ id: 7, type: 'put', key, value: key });
    for (let i = 0; i < 2; i++) assert.equal((await stream.answer(7)).type, 'result');
    assert.equal(await valueOn(cell2, '/payments/d'), '/payments/d');
    assert.equal(await valueOn(cell1, '/orders/d'), '/orders/d');
  } finally {
    stream.close();
  }
});

test('a txn spanning two cells is refused cross_cell and nothing is written', { timeout: 30_000 }, async () => {
  const stream = await Stream.open();
  try {
    const framesBefore = (await metric('baton_router_stream_frames_total', 'cell-1')) + (await metric('baton_router_stream_frames_total', 'cell-2'));
    stream.send({ id: 'x', type: 'txn', compare: [], success: [{ put: { key: '/payments/c', value: '1' } }, { put: { key: '/orders/c', value: '1' } }], failure: [] });
    const refused = await stream.answer('x');
    assert.equal(refused.type, 'error');
    assert.equal(refused.error.code, 'cross_cell');
    assert.deepEqual(refused.error.namespaces, [{ namespace: '/payments/', cell: 'cell-2' }, { namespace: '/', cell: 'cell-1' }], 'the details HTTP gives');
    stream.send({ id: 'r', type: 'get', key: '/', prefix: true });
    assert.equal((await stream.answer('r')).error.code, 'cross_cell', 'a prefix read over both cells');
    const framesAfter = (await metric('baton_router_stream_frames_total', 'cell-1')) + (await metric('baton_router_stream_frames_total', 'cell-2'));
    assert.equal(framesAfter, framesBefore, 'nothing was sent to any cell');
    assert.equal(await valueOn(cell2, '/payments/c'), 404);
    assert.equal(await valueOn(cell1, '/orders/c'), 404);
    // Refusals the router makes itself, as a node makes them; the stream goes on.
    stream.send({ id: 'u', type: 'frobnicate' });
    assert.equal((await stream.answer('u')).error.code, 'invalid_argument');
    stream.ws.send('{not json');
    assert.equal((await stream.answer(null)).error.code, 'invalid_argument');
    assert.equal((await stream.request({ id: 'after', type: 'get', key: '/payments/s1' })).kvs[0].value, 'p1');
  } finally {
    stream.close();
  }
});

test('keepalive reaches the cell holding the lease: the root cell, or the upgrade\'s Baton-Namespace', { timeout: 30_000 }, async () => {
  const onRoot = await http(`${cell1.cell.clientUrls()[0]}/v1/leases`, json('POST', { ttl: 30 }));
  assert.equal(onRoot.status, 200, JSON.stringify(onRoot.body));
  // An id of its own: each cell numbers its leases itself, so the same id could exist on both.
  const onTwo = await http(`${cell2.cell.clientUrls()[0]}/v1/leases`, json('POST', { ttl: 30, id: 987_654_321 }));
  assert.equal(onTwo.status, 200, JSON.stringify(onTwo.body));
  const root = await Stream.open();
  const payments = await Stream.open({ 'Baton-Namespace': '/payments/' });
  try {
    const renewed = await root.request({ id: 'k', type: 'keepalive', ids: [onRoot.body.id] });
    assert.equal(renewed.leases[0].id, onRoot.body.id);
    assert.ok(renewed.leases[0].ttl > 0, JSON.stringify(renewed));
    const elsewhere = await root.request({ id: 'k2', type: 'keepalive', ids: [onTwo.body.id] });
    assert.equal(elsewhere.leases[0].error, 'lease_not_found', 'the root cell does not hold cell-2\'s lease');
    const there = await payments.request({ id: 'k', type: 'keepalive', ids: [onTwo.body.id] });
    assert.ok(there.leases[0].ttl > 0, JSON.stringify(there));
  } finally {
    root.close();
    payments.close();
  }
});

test('a stale router corrects itself: the frame succeeds after one wrong_cell re-send', { timeout: 30_000 }, async () => {
  const map = router.cache.cellMap;
  const stale = { ...map, epoch: 1, namespaces: map.namespaces.filter((n) => n.prefix === '/') };
  for (const [key, value] of [['/payments/st1', 'p1'], ['/payments/st2', 't2']]) {
    assert.equal((await http(`${cell2.cell.clientUrls()[0]}/v1/kv${key}`, { method: 'PUT', body: value })).status, 201);
  }
  const stream = await Stream.open();
  try {
    const wrongBefore = await metric('baton_router_stream_wrong_cell_total', 'cell-1');
    const retriesBefore = await metric('baton_router_stream_retries_total', 'cell-2');
    // The router missed /payments/: it sends the frame to the root's cell-1 first.
    router.cache.setMapForTest(stale);
    assert.equal((await stream.request({ id: 's', type: 'get', key: '/payments/st1' })).kvs[0].value, 'p1');
    assert.equal(await metric('baton_router_stream_wrong_cell_total', 'cell-1'), wrongBefore + 1, 'one wrong_cell');
    assert.equal(await metric('baton_router_stream_retries_total', 'cell-2'), retriesBefore + 1, 'one re-send, to cell-2');
    assert.equal((await stream.request({ id: 's', type: 'put', key: '/payments/s3', value: 'v3' })).revision > 0, true);
    assert.equal(await metric('baton_router_stream_wrong_cell_total', 'cell-1'), wrongBefore + 1, 'the correction holds');
    assert.equal(await valueOn(cell2, '/payments/s3'), 'v3');

    // Two frames with one id, both refused by cell-1: each is re-sent and answered for itself
    // (the router tells them apart by the ids it gave them upstream, not by the client's).
    router.cache.setMapForTest(stale);
    for (const key of ['/payments/st1', '/payments/st2']) stream.send({ id: 'same', type: 'get', key });
    const values = [(await stream.answer('same')), (await stream.answer('same'))].map((a) => a.result?.kvs[0].value ?? JSON.stringify(a));
    assert.deepEqual(values.sort(), ['p1', 't2']);
    assert.equal(await metric('baton_router_stream_wrong_cell_total', 'cell-1'), wrongBefore + 3);
    assert.equal(await metric('baton_router_stream_retries_total', 'cell-2'), retriesBefore + 3);

    // A watch is re-sent the same way, and then sees what is written on its owner.
    router.cache.setMapForTest(stale);
    stream.send({ id: 'sw', type: 'watch', key: '/payments/sw', startRevision: 0 });
    assert.equal((await stream.take((f) => f.id === 'sw', 'created')).type, 'created');
    assert.equal(await metric('baton_router_stream_wrong_cell_total', 'cell-1'), wrongBefore + 4);
    await http(`${cell2.cell.clientUrls()[0]}/v1/kv/payments/sw`, { method: 'PUT', body: 'seen' });
    assert.equal((await stream.take((f) => f.id === 'sw', 'events')).events[0].kv.value, 'seen');
  } finally {
    router.cache.setMapForTest(map);
    stream.close();
  }
});

test('losing the member a stream is relayed to ends its watch and its pending request with unavailable', { timeout: 45_000 }, async () => {
  await sleep(200); // the earlier tests' streams are closed
  const stream = await Stream.open();
  try {
    stream.send({ id: 'k', type: 'watch', key: '/payments/k/', prefix: true });
    assert.equal((await stream.take((f) => f.id === 'k', 'created')).type, 'created');
    const put = await http(`${cell2.cell.clientUrls()[0]}/v1/kv/payments/k/1`, { method: 'PUT', body: 'one' });
    assert.equal((await stream.take((f) => f.id === 'k', 'events')).events[0].kv.modRevision, put.body.revision);
    const upstreams = router.streams.upstreamEndpoints().filter((u) => u.cell === 'cell-2');
    assert.equal(upstreams.length, 1, JSON.stringify(upstreams));
    const name = cell2.names[cell2.cell.clientUrls().indexOf(upstreams[0]?.endpoint as string)] as string;
    // Frozen first, so a read waits on it; then killed: the router must answer both itself.
    cell2.cell.signal(name, 'SIGSTOP');
    stream.send({ id: 'g', type: 'get', key: '/payments/k/1' });
    await sleep(300);
    assert.deepEqual(stream.frames, [], 'the frozen member answers nothing');
    cell2.cell.signal(name, 'SIGKILL');
    await cell2.cell.waitExit(name);
    const ended = await stream.take((f) => f.id === 'k', 'the watch\'s end', 10_000);
    assert.equal(ended.type, 'error');
    assert.equal(ended.error.code, 'unavailable');
    assert.equal(ended.error.lastRevision, put.body.revision, 'the client resumes from here + 1');
    const pending = await stream.answer('g');
    assert.equal(pending.error.code, 'unavailable');

    // The next frame for cell-2 opens a new upstream, to a live member; the watch resumes there.
    const survivor = cell2.names.find((n) => n !== name) as string;
    for (let attempt = 0; ; attempt++) {
      stream.send({ id: 'k', type: 'watch', key: '/payments/k/', prefix: true, startRevision: ended.error.lastRevision + 1 });
      const again = await stream.take((f) => f.id === 'k', 'the resumed watch');
      if (again.type === 'created') break;
      assert.ok(attempt < 20 && again.error?.code === 'unavailable', JSON.stringify(again));
      await sleep(250);
    }
    let second;
    for (let attempt = 0; attempt < 40; attempt++) {
      second = await http(`${cell2.cell.clientUrl(survivor)}/v1/kv/payments/k/2`, { method: 'PUT', body: 'two' });
      if (second.status === 200 || second.status === 201) break;
      await sleep(250);
    }
    assert.ok(second !== undefined && (second.status === 200 || second.status === 201), JSON.stringify(second?.body));
    const resumed = await stream.take((f) => f.id === 'k' && f.type === 'events' && f.events.length > 0, 'the resumed events', 15_000);
    assert.deepEqual(resumed.events.map((e: { kv: { key: string } }) => e.kv.key), ['/payments/k/2'], 'no gap, no duplicate');
  } finally {
    stream.close();
  }
});
