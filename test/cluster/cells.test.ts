// Cells behind a router, on real processes (docs/design/cells.md): a control-plane cell, two data
// cells and a router (in this process, so one test can make its cache stale on purpose). Namespaces
// created on different cells; puts, gets, txns and locks through the router land on the owning
// cell (read back from each cell directly); a cell asked for a namespace it does not own answers
// 421 wrong_cell naming the owner; a stale router corrects itself in one round trip; a txn or read
// spanning cells is 400 cross_cell; the router keeps serving with the control plane gone.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { http, sleep, startRouter, startTwoCells, type TestCell } from './harness.js';
import type { Router } from '../../src/router/router.js';
import { BatonClient } from '../../src/client/index.js';
import { baton } from './cli-run.js';

let control: TestCell;
let cell1: TestCell;
let cell2: TestCell;
let router: Router;
let routerUrl: string;

const json = (method: string, body: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method, body: JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers },
});

async function metric(name: string, cell: string): Promise<number> {
  const text = (await http(`${routerUrl}/metrics`)).body as string;
  const line = text.split('\n').find((l) => l.startsWith(`${name}{cell="${cell}"}`));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await check()) return;
    await sleep(100);
  }
  assert.fail(`timed out waiting for ${what}`);
}

before(async () => {
  [control, cell1, cell2] = await startTwoCells({ cell1: { size: 3 }, cell2: { size: 3 } });
  ({ router, url: routerUrl } = await startRouter(control));
}, { timeout: 120_000 });

after(async () => {
  await router?.stop();
  await Promise.all([control, cell1, cell2].map((cell) => cell?.close()));
});

test('namespaces on different cells: the router sends each request to its owner', { timeout: 60_000 }, async () => {
  for (const [prefix, cell] of [['/payments/', 'cell-2'], ['/locks/pay/', 'cell-2']]) {
    // Through the router: it forwards /v1/control to the control plane.
    const created = await http(`${routerUrl}/v1/control/namespaces`, json('POST', { prefix, cell }));
    assert.equal(created.status, 200, JSON.stringify(created.body));
    assert.equal(created.body.cell, cell);
    assert.deepEqual([...created.body.pushed].sort(), ['cell-1', 'cell-2']);
  }
  const epoch = (await http(`${routerUrl}/v1/control/namespaces/payments/`)).body.epoch as number;
  await waitFor('the router to learn /locks/pay/', async () => (await http(`${routerUrl}/v1/cluster/status`)).body.namespaces.some((n: { prefix: string }) => n.prefix === '/locks/pay/'));

  const put = await http(`${routerUrl}/v1/kv/payments/a`, { method: 'PUT', body: 'p' });
  assert.equal(put.status, 201, JSON.stringify(put.body));
  assert.equal(put.headers.get('baton-cell'), 'cell-2');
  assert.equal(put.headers.get('baton-routing-epoch'), String(epoch));
  const other = await http(`${routerUrl}/v1/kv/orders/1`, { method: 'PUT', body: 'o' });
  assert.equal(other.status, 201);
  assert.equal(other.headers.get('baton-cell'), 'cell-1', 'the root namespace is cell-1\'s');

  // Each key is on its owner and nowhere else: the owner serves it, the other refuses with 421.
  const onOwner = await http(`${cell2.cell.clientUrls()[1]}/v1/kv/payments/a`);
  assert.equal(onOwner.status, 200);
  assert.equal(onOwner.body.kvs[0].value, 'p');
  const wrong = await http(`${cell1.cell.clientUrls()[0]}/v1/kv/payments/a`);
  assert.equal(wrong.status, 421);
  assert.deepEqual(
    { ...wrong.body.error, message: undefined },
    { code: 'wrong_cell', message: undefined, namespace: '/payments/', cell: 'cell-2', epoch, endpoints: cell2.cell.clientUrls() },
  );
  const wrongWrite = await http(`${cell1.cell.clientUrls()[2]}/v1/kv/payments/z`, { method: 'PUT', body: 'x' });
  assert.equal(wrongWrite.status, 421, 'a write to a follower of the wrong cell is refused too');
  assert.equal((await http(`${cell1.cell.clientUrls()[0]}/v1/kv/orders/1`)).body.kvs[0].value, 'o');
  assert.equal((await http(`${cell2.cell.clientUrls()[0]}/v1/kv/orders/1`)).status, 421);
  const watch = await http(`${cell1.cell.clientUrls()[0]}/v1/watch?key=${encodeURIComponent('/payments/')}&prefix=true`);
  assert.equal(watch.status, 421, 'a watch of another cell\'s namespace is refused too');
  assert.equal(watch.body.error.cell, 'cell-2');

  // A txn inside one namespace works through the router; one spanning cells is refused, whole.
  const txn = await http(`${routerUrl}/v1/txn`, json('POST', {
    compare: [{ key: '/payments/a', target: 'value', op: '==', value: 'p' }],
    success: [{ put: { key: '/payments/b', value: 'tb' } }, { get: { key: '/payments/', prefix: true } }], failure: [],
  }));
  assert.equal(txn.status, 200, JSON.stringify(txn.body));
  assert.equal(txn.body.succeeded, true);
  assert.equal(txn.headers.get('baton-cell'), 'cell-2');
  assert.equal((await http(`${cell2.cell.clientUrls()[0]}/v1/kv/payments/b`)).body.kvs[0].value, 'tb');
  const spanning = await http(`${routerUrl}/v1/txn`, json('POST', { compare: [], success: [{ put: { key: '/payments/c', value: '1' } }, { put: { key: '/orders/c', value: '1' } }], failure: [] }));
  assert.equal(spanning.status, 400);
  assert.equal(spanning.body.error.code, 'cross_cell');
  assert.deepEqual(spanning.body.error.namespaces, [{ namespace: '/payments/', cell: 'cell-2' }, { namespace: '/', cell: 'cell-1' }]);
  assert.equal((await http(`${cell2.cell.clientUrls()[0]}/v1/kv/payments/c`)).status, 404, 'nothing of it applied');
  const everything = await http(`${routerUrl}/v1/kv/?prefix=true`);
  assert.equal(everything.status, 400);
  assert.equal(everything.body.error.code, 'cross_cell', 'a prefix read over both cells');
  // The same spanning txn sent straight to a cell is refused by the cell itself.
  const direct = await http(`${cell2.cell.clientUrls()[0]}/v1/txn`, json('POST', { compare: [], success: [{ put: { key: '/payments/c', value: '1' } }, { put: { key: '/orders/c', value: '1' } }], failure: [] }));
  assert.equal(direct.status, 400);
  assert.equal(direct.body.error.code, 'cross_cell');

  // A lock in a namespace of cell-2: its lease is granted there (Baton-Namespace), the queue is there.
  const lease = await http(`${routerUrl}/v1/leases`, json('POST', { ttl: 30 }, { 'baton-namespace': '/locks/pay/' }));
  assert.equal(lease.status, 200, JSON.stringify(lease.body));
  assert.equal(lease.headers.get('baton-cell'), 'cell-2');
  const lock = await http(`${routerUrl}/v1/locks/pay/acquire`, json('POST', { lease: lease.body.id, owner: 'w' }));
  assert.equal(lock.status, 200, JSON.stringify(lock.body));
  assert.equal(lock.headers.get('baton-cell'), 'cell-2');
  const queue = await http(`${cell2.cell.clientUrls()[0]}/v1/kv/locks/pay/?prefix=true`);
  assert.equal(queue.body.kvs[0].key, lock.body.key);
  assert.equal((await http(`${cell1.cell.clientUrls()[0]}/v1/locks/pay/acquire`, json('POST', { lease: lease.body.id }))).status, 421);
});

test('baton ns and baton cells through the router', { timeout: 60_000 }, async () => {
  const created = await baton(['ns', 'create', '/cli/', '--cell', 'cell-2', '--endpoints', routerUrl]);
  assert.equal(created.code, 0, created.stderr);
  assert.match(created.stdout, /namespace \/cli\/ on cell-2 \(map epoch \d+\)/);
  const again = await baton(['ns', 'create', '/cli/', '--cell', 'cell-1', '--endpoints', routerUrl]);
  assert.equal(again.code, 1, 'a definite no: it exists');
  assert.match(again.stderr, /precondition_failed/);
  const list = await baton(['ns', 'list', '--endpoints', routerUrl, '-w', 'json']);
  assert.equal(list.code, 0, list.stderr);
  const map = JSON.parse(list.stdout) as { namespaces: { prefix: string; cell: string }[] };
  assert.deepEqual(map.namespaces.find((n) => n.prefix === '/cli/')?.cell, 'cell-2');
  const show = await baton(['ns', 'show', '/cli/', '--endpoints', routerUrl]);
  assert.equal(show.code, 0, show.stderr);
  assert.ok(show.stdout.startsWith('/cli/, cell-2, epoch '), show.stdout);
  assert.ok(show.stdout.includes(cell2.cell.clientUrls()[0] as string));
  const cells = await baton(['cells', 'list', '--endpoints', routerUrl]);
  assert.deepEqual(cells.stdout.trim().split('\n').map((line) => line.split(',')[0]), ['cell-1', 'cell-2']);
  const usage = await baton(['ns', 'create', '/x/', '--endpoints', routerUrl]);
  assert.equal(usage.code, 2, 'no --cell: a usage error, nothing sent');
});

test('a router with a stale cache corrects itself in one round trip', { timeout: 60_000 }, async () => {
  const map = router.cache.cellMap;
  // The router missed every namespace change: /payments/ would go to the root's cell-1.
  router.cache.setMapForTest({ ...map, epoch: 1, namespaces: map.namespaces.filter((n) => n.prefix === '/') });
  const wrongBefore = await metric('baton_router_wrong_cell_total', 'cell-1');
  const forwardsBefore = (await metric('baton_router_forwards_total', 'cell-1')) + (await metric('baton_router_forwards_total', 'cell-2'));
  const started = performance.now();
  const read = await http(`${routerUrl}/v1/kv/payments/a`);
  const elapsedMs = performance.now() - started;
  assert.equal(read.status, 200, JSON.stringify(read.body));
  assert.equal(read.body.kvs[0].value, 'p');
  assert.equal(read.headers.get('baton-cell'), 'cell-2');
  assert.equal(await metric('baton_router_wrong_cell_total', 'cell-1'), wrongBefore + 1, 'one wrong_cell');
  const forwardsAfter = (await metric('baton_router_forwards_total', 'cell-1')) + (await metric('baton_router_forwards_total', 'cell-2'));
  assert.equal(forwardsAfter - forwardsBefore, 2, 'two forwards: the stale one and the corrected one');
  // The cache holds the correction: the next request goes straight to cell-2.
  const again = await http(`${routerUrl}/v1/kv/payments/b`, { method: 'PUT', body: 'again' });
  assert.equal(again.status, 200);
  assert.equal(await metric('baton_router_wrong_cell_total', 'cell-1'), wrongBefore + 1, 'no second wrong_cell');
  console.log(`stale-cache read corrected in ${elapsedMs.toFixed(1)} ms`);
});

test('reads through the router answer what the owner answers (and what the hop costs, printed)', { timeout: 60_000 }, async () => {
  const status = (await http(`${routerUrl}/v1/cluster/status`)).body as { cells: { id: string; leader: string | null }[] };
  const direct = status.cells.find((c) => c.id === 'cell-2')?.leader ?? (cell2.cell.clientUrls()[0] as string);
  const timings = { direct: [] as number[], routed: [] as number[] };
  // Alternating, same keep-alive fetch client, linearizable reads of the same key: a same-run ratio.
  for (let i = 0; i < 200; i++) {
    for (const [kind, base] of [['direct', direct], ['routed', routerUrl]] as const) {
      const started = performance.now();
      const answer = await http(`${base}/v1/kv/payments/a`);
      timings[kind].push(performance.now() - started);
      assert.equal(answer.body.kvs[0].value, 'p');
    }
  }
  const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
  const p99 = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length * 0.99)] as number;
  console.log(`200 reads each: direct p50 ${median(timings.direct).toFixed(2)} ms p99 ${p99(timings.direct).toFixed(2)} ms; `
    + `through the router p50 ${median(timings.routed).toFixed(2)} ms p99 ${p99(timings.routed).toFixed(2)} ms`);
});

test('the client library follows wrong_cell to the owning cell, at once', { timeout: 60_000 }, async () => {
  // Pointed at cell-1 only: a key of /payments/ is refused there, and the client goes to cell-2.
  const client = new BatonClient({ endpoints: cell1.cell.clientUrls(), discover: false });
  try {
    const started = performance.now();
    const put = await client.put('/payments/from-client', 'c');
    const elapsedMs = performance.now() - started;
    assert.ok(put.revision > 0);
    assert.equal((await http(`${cell2.cell.clientUrls()[0]}/v1/kv/payments/from-client`)).body.kvs[0].value, 'c', 'it landed on cell-2');
    assert.ok(elapsedMs < 2_000, `followed without a backoff sleep (${elapsedMs.toFixed(1)} ms)`);
    assert.equal((await client.getValue('/payments/a'))?.value !== undefined, true);
  } finally {
    await client.close();
  }
});

test('a cell that was down when a namespace was created gets the table once it is back', { timeout: 90_000 }, async () => {
  await cell2.cell.stopAll();
  const created = await http(`${routerUrl}/v1/control/namespaces`, json('POST', { prefix: '/later/', cell: 'cell-1' }));
  assert.equal(created.status, 200, JSON.stringify(created.body));
  assert.deepEqual(created.body.pending, ['cell-2'], 'cell-2 could not be told');
  assert.deepEqual(created.body.pushed, ['cell-1']);
  cell2.cell.startAll();
  await cell2.cell.waitReady(30_000);
  // The control cell's leader pushes every second until cell-2 holds the map's epoch; every member
  // of cell-2 answers from its own applied table, so wait until each has applied it (a follower
  // may trail the member that answered first: it then refused with the older epoch).
  await waitFor('the reconciler to push to cell-2', async () => {
    const tables = await Promise.all(cell2.cell.clientUrls().map(async (url) => (await http(`${url}/v1/cluster/ownership`)).body.table));
    return tables.every((table) => table?.epoch === created.body.epoch);
  }, 20_000);
  const refused = await http(`${cell2.cell.clientUrls()[1]}/v1/kv/later/x`);
  assert.equal(refused.status, 421);
  assert.equal(refused.body.error.cell, 'cell-1');
  assert.equal(refused.body.error.epoch, created.body.epoch);
});

test('the router keeps serving from its cache while the control plane is down', { timeout: 60_000 }, async () => {
  control.cell.signal('n1', 'SIGKILL');
  await control.cell.waitExit('n1');
  await sleep(1_500);
  const status = await http(`${routerUrl}/v1/cluster/status`);
  assert.ok(status.body.cacheAgeMs >= 1_000, `the cache is getting old (${status.body.cacheAgeMs} ms)`);
  const put = await http(`${routerUrl}/v1/kv/payments/after`, { method: 'PUT', body: 'still' });
  assert.equal(put.status, 201, JSON.stringify(put.body));
  assert.equal(put.headers.get('baton-cell'), 'cell-2');
  assert.equal((await http(`${routerUrl}/v1/kv/orders/1`)).body.kvs[0].value, 'o');
  assert.equal((await http(`${cell2.cell.clientUrls()[2]}/v1/kv/payments/after`, {})).status, 200);
  const create = await http(`${routerUrl}/v1/control/namespaces`, json('POST', { prefix: '/x/', cell: 'cell-1' }));
  assert.equal(create.status, 503, 'creating a namespace waits for the control plane');
});
