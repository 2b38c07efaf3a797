// The cells client (src/client/cells-client.ts) against a fake transport and fake stream servers:
// the map is loaded once and each key goes to its owning cell; a request spanning cells is refused
// before anything is sent; a wrong_cell answer updates the cache and is retried once, at once (the
// fake clock records every backoff sleep: none), with the same Request-ID; an unknown cell re-reads
// the map; a second wrong_cell is passed on; stream requests follow wrong_cell the same way.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  BatonCellsClient,
  CrossCellError,
  WrongCellError,
  type HttpAnswer,
  type HttpRequest,
} from '../../../src/client/index.js';
import { FakeStreamServer, error, result } from './fake-stream-server.js';

function answer(status: number, body: unknown): HttpAnswer {
  return { status, text: JSON.stringify(body), header: () => null };
}

interface Cell { readonly id: string; readonly endpoints: string[] }
interface Namespace { prefix: string; cell: string; epoch: number }

function mapBody(epoch: number, cells: readonly Cell[], namespaces: readonly Namespace[]): unknown {
  return { epoch, cells, namespaces: namespaces.map((n) => ({ ...n, state: 'active' })) };
}

const wrongCell = (namespace: string, cell: string, epoch: number, endpoints: string[]): HttpAnswer =>
  answer(421, { error: { code: 'wrong_cell', message: 'moved', namespace, cell, epoch, endpoints } });
const putOk = { created: true, version: 1, revision: 3 };

/** A cells client whose control plane serves `map()` and whose cells answer with `cell(request)`. */
function fakeCells(map: () => unknown, cell: (request: HttpRequest) => HttpAnswer, retry: { delayMsBase?: number; delayMsMax?: number } = {}) {
  const requests: HttpRequest[] = [];
  const sleeps: number[] = [];
  const client = new BatonCellsClient({
    control: ['http://control'],
    discover: false,
    random: () => 0.5,
    retry: { delayMsBase: 10_000, delayMsMax: 10_000, ...retry },
    clock: { monotonicMs: () => 0, sleep: async (ms) => void sleeps.push(ms) },
    transport: async (request) => {
      requests.push(request);
      if (request.url.startsWith('http://control')) return answer(200, map());
      return cell(request);
    },
  });
  const cellRequests = (): HttpRequest[] => requests.filter((r) => !r.url.startsWith('http://control'));
  const mapReads = (): number => requests.filter((r) => r.url.startsWith('http://control')).length;
  return { client, requests, cellRequests, mapReads, sleeps };
}

const cell1 = { id: 'cell-1', endpoints: ['http://c1a'] };
const cell2 = { id: 'cell-2', endpoints: ['http://c2a'] };
const twoCells = (): unknown => mapBody(4, [cell1, cell2], [{ prefix: '/', cell: 'cell-1', epoch: 1 }, { prefix: '/b/', cell: 'cell-2', epoch: 4 }]);

test('each key goes to the cell owning its namespace; the map is read once', async () => {
  const { client, cellRequests, mapReads } = fakeCells(twoCells, () => answer(201, putOk));
  await client.put('/a/x', 'v');
  await client.put('/b/x', 'v');
  await client.put('/b/deeper/y', 'v');
  assert.deepEqual(cellRequests().map((r) => r.url), ['http://c1a/v1/kv/a/x', 'http://c2a/v1/kv/b/x', 'http://c2a/v1/kv/b/deeper/y']);
  assert.equal(mapReads(), 1);
  await client.close();
});

test('a txn or a prefix read spanning cells is refused with cross_cell before anything is sent', async () => {
  const { client, cellRequests } = fakeCells(twoCells, () => answer(200, {}));
  const txn = { compare: [], success: [{ put: { key: '/a/x', value: '1' } }, { put: { key: '/b/x', value: '1' } }], failure: [] };
  await assert.rejects(client.txn(txn as never), (error: unknown) => {
    assert.ok(error instanceof CrossCellError);
    assert.deepEqual(error.details['namespaces'], [{ namespace: '/', cell: 'cell-1' }, { namespace: '/b/', cell: 'cell-2' }]);
    return true;
  });
  await assert.rejects(client.get('/', { prefix: true }), CrossCellError);
  assert.equal(cellRequests().length, 0);
  // Within one cell: sent.
  await client.get('/b/', { prefix: true });
  assert.deepEqual(cellRequests().map((r) => r.url), ['http://c2a/v1/kv/b/?prefix=true']);
  await client.close();
});

test('wrong_cell: the cache takes the answer and the call is retried once at the owner, at once, same Request-ID', async () => {
  const { client, cellRequests, mapReads, sleeps } = fakeCells(twoCells, (request) =>
    request.url.startsWith('http://c2a') ? wrongCell('/b/', 'cell-1', 6, cell1.endpoints) : answer(201, putOk));
  assert.deepEqual(await client.put('/b/x', 'v'), putOk);
  const [first, retry] = cellRequests();
  assert.equal(first?.url, 'http://c2a/v1/kv/b/x');
  assert.equal(retry?.url, 'http://c1a/v1/kv/b/x');
  assert.equal(retry?.headers['request-id'], first?.headers['request-id']);
  assert.deepEqual(sleeps, [], 'no backoff sleep before the retry');
  assert.equal(client.wrongCellRetries, 1);
  assert.equal(mapReads(), 1, 'a known cell: no map read');
  // The cache learned the owner: the next call goes there directly.
  await client.put('/b/y', 'v');
  assert.equal(cellRequests()[2]?.url, 'http://c1a/v1/kv/b/y');
  assert.equal(client.wrongCellRetries, 1);
  await client.close();
});

test('wrong_cell naming a cell the client does not know: the whole map is read again', async () => {
  const cell3 = { id: 'cell-3', endpoints: ['http://c3a'] };
  let epoch = 4;
  const map = (): unknown => epoch === 4 ? twoCells()
    : mapBody(epoch, [cell1, cell2, cell3], [{ prefix: '/', cell: 'cell-1', epoch: 1 }, { prefix: '/b/', cell: 'cell-3', epoch }]);
  const { client, cellRequests, mapReads, sleeps } = fakeCells(map, (request) => {
    if (request.url.startsWith('http://c2a')) {
      epoch = 7;
      return wrongCell('/b/', 'cell-3', 7, cell3.endpoints);
    }
    return answer(201, putOk);
  });
  await client.put('/b/x', 'v');
  assert.deepEqual(cellRequests().map((r) => r.url), ['http://c2a/v1/kv/b/x', 'http://c3a/v1/kv/b/x']);
  assert.equal(mapReads(), 2);
  assert.equal(client.mapLoads, 2);
  assert.equal(client.map.epoch, 7);
  assert.deepEqual(sleeps, []);
  await client.close();
});

test('a second wrong_cell is passed on: one retry only', async () => {
  const { client, cellRequests } = fakeCells(twoCells, (request) =>
    request.url.startsWith('http://c2a') ? wrongCell('/b/', 'cell-1', 6, cell1.endpoints) : wrongCell('/b/', 'cell-2', 7, cell2.endpoints));
  await assert.rejects(client.getValue('/b/x'), WrongCellError);
  assert.equal(cellRequests().length, 2);
  assert.equal(client.wrongCellRetries, 1);
  await client.close();
});

test('a stream request answered wrong_cell is sent once more to the owner cell\'s stream, at once', async () => {
  const state = { holder: null, waiters: [], revision: 5 };
  const second = await FakeStreamServer.start((received) => result(received, state));
  const first = await FakeStreamServer.start((received) =>
    error(received, { code: 'wrong_cell', message: 'moved', namespace: '/locks/pay/', cell: 'cell-2', epoch: 6, endpoints: [second.url] }));
  const map = (): unknown => mapBody(5, [{ id: 'cell-1', endpoints: [first.url] }, { id: 'cell-2', endpoints: [second.url] }],
    [{ prefix: '/', cell: 'cell-1', epoch: 1 }]);
  // The retry policy's backoff is 10 s: an answer within 2 s proves the retry did not sleep.
  const { client } = fakeCells(map, () => answer(404, {}));
  try {
    const startMs = performance.now();
    assert.deepEqual(await client.lockState('pay'), state);
    assert.ok(performance.now() - startMs < 2_000, `answered after ${performance.now() - startMs} ms`);
    assert.equal(first.frames('lockState').length, 1);
    assert.equal(second.frames('lockState').length, 1);
    assert.equal(client.wrongCellRetries, 1);
    // Cached: the next one goes to cell-2 directly.
    await client.lockState('pay');
    assert.equal(first.frames('lockState').length, 1);
    assert.equal(second.frames('lockState').length, 2);
  } finally {
    await client.close();
    await first.close();
    await second.close();
  }
});

test('a session lives in its namespace\'s cell; a lock of another cell is refused before sending', async () => {
  const { client, cellRequests } = fakeCells(twoCells, (request) =>
    request.url.endsWith('/v1/leases') ? answer(200, { id: 42, ttl: 10 }) : answer(404, {}));
  const session = await client.session({ namespace: '/b/' });
  try {
    assert.equal(client.cellOfSession(session), 'cell-2');
    assert.equal(cellRequests()[0]?.url, 'http://c2a/v1/leases');
    await assert.rejects(client.locks(session).acquire('pay', { waitMs: 0 }), (error: unknown) => {
      assert.equal((error as { code?: string }).code, 'invalid_argument');
      assert.match(String((error as Error).message), /lives in cell cell-1.*namespace \/locks\/pay\//);
      return true;
    });
  } finally {
    await client.close();
  }
});

test('on the stream, a second wrong_cell (the owner still landing the namespace) is asked again after the backoff', async () => {
  const state = { holder: null, waiters: [], revision: 5 };
  let refusals = 0;
  const second = await FakeStreamServer.start((received) => {
    if (refusals++ === 0) error(received, { code: 'wrong_cell', message: 'landing', namespace: '/locks/pay/', cell: 'cell-2', epoch: 6, endpoints: [] });
    else result(received, state);
  });
  const first = await FakeStreamServer.start((received) =>
    error(received, { code: 'wrong_cell', message: 'moved', namespace: '/locks/pay/', cell: 'cell-2', epoch: 6, endpoints: [second.url] }));
  const map = (): unknown => mapBody(5, [{ id: 'cell-1', endpoints: [first.url] }, { id: 'cell-2', endpoints: [second.url] }],
    [{ prefix: '/', cell: 'cell-1', epoch: 1 }]);
  const { client } = fakeCells(map, () => answer(404, {}), { delayMsBase: 20, delayMsMax: 20 });
  try {
    assert.deepEqual(await client.lockState('pay'), state);
    assert.equal(first.frames('lockState').length, 1);
    assert.equal(second.frames('lockState').length, 2);
  } finally {
    await client.close();
    await first.close();
    await second.close();
  }
});
