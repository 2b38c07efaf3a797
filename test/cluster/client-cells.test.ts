// The cells client (src/client/cells-client.ts) on real processes: a control plane and two data
// cells, no router. The client reads the cell map from the control plane and talks to the cells
// directly: keys of namespaces on both cells land in their own cell (read on each cell directly:
// the owner has the key, the other cell refuses it with wrong_cell), a txn spanning both is refused
// before sending (cross_cell), a session opened for /locks/pay/ (cell-2) holds lock pay there, and
// after a namespace moves from cell-1 to cell-2 the client's next request to it succeeds after
// exactly one wrong_cell retry (counted by the client), the following one with none.
// Second test: a waiter on a lock whose namespace moves goes on waiting on the new owner (its
// wait, ended by the fence, re-sent there with its Request-ID) and is granted when the holder
// releases (the release, sent to the old cell, follows wrong_cell to the new one).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { http, sleep, type TestCell, moveAndWait, startTwoCells } from './harness.js';
import { BatonCellsClient, CrossCellError } from '../../src/client/index.js';

let control: TestCell;
let cell1: TestCell;
let cell2: TestCell;

const json = (body: unknown): RequestInit => ({ method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

before(async () => {
  [control, cell1, cell2] = await startTwoCells();
  const controlUrl = control.cell.clientUrls()[0] as string;
  const namespaces = [['/app2/', 'cell-2'], ['/locks/pay/', 'cell-2'], ['/mv/', 'cell-1'], ['/locks/mvlock/', 'cell-1']] as const;
  for (const [prefix, cell] of namespaces) {
    const created = await http(`${controlUrl}/v1/control/namespaces`, json({ prefix, cell }));
    assert.equal(created.status, 200, JSON.stringify(created.body));
  }
  // Each cell has the table once the map's pending list is empty: wait for it.
  for (let poll = 0; poll < 100; poll++) {
    const owned = await http(`${cell2.cell.clientUrls()[0] as string}/v1/kv/app2/probe`);
    if (owned.status !== 421) break;
    await sleep(100);
  }
}, { timeout: 120_000 });

after(async () => {
  await Promise.all([control, cell1, cell2].map((cell) => cell?.close())); // also removes their data directories
});

/** Moves `prefix` to cell-2 and waits until the move is released and cleaned. */
const moveToCell2 = (prefix: string): Promise<void> => moveAndWait(control.cell.clientUrls()[0] as string, prefix, 'cell-2');

/** The key's value on one cell read directly (null: absent), or `wrong_cell` when the cell refuses it. */
async function onCell(cell: TestCell, key: string): Promise<string | null> {
  const answer = await http(`${cell.cell.clientUrls()[0] as string}/v1/kv${key}`);
  if (answer.status === 421) return answer.body.error.code as string;
  if (answer.status === 404) return null;
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.body.kvs[0].value as string;
}

test('a client without a router routes keys to their cells, holds a lock on cell-2 and follows a move with one retry', { timeout: 60_000 }, async () => {
  const client = await BatonCellsClient.connect({ control: control.cell.clientUrls() });
  try {
    assert.equal(client.mapLoads, 1);
    await client.put('/app1/a', 'one');
    await client.put('/app2/b', 'two');
    await client.put('/mv/k', 'before');
    assert.equal((await client.getValue('/app1/a'))?.value, 'one');
    assert.equal((await client.getValue('/app2/b'))?.value, 'two');
    // Each key is in its own cell, and only there.
    assert.equal(await onCell(cell1, '/app1/a'), 'one');
    assert.equal(await onCell(cell2, '/app1/a'), 'wrong_cell');
    assert.equal(await onCell(cell2, '/app2/b'), 'two');
    assert.equal(await onCell(cell1, '/app2/b'), 'wrong_cell');
    assert.equal(await onCell(cell1, '/mv/k'), 'before');
    assert.equal(client.wrongCellRetries, 0, 'a fresh map: no wrong_cell');

    // A txn over both cells is refused before anything is sent.
    const txn = { compare: [], success: [{ put: { key: '/app1/t', value: '1' } }, { put: { key: '/app2/t', value: '1' } }], failure: [] };
    await assert.rejects(client.txn(txn as never), CrossCellError);
    assert.equal(await onCell(cell1, '/app1/t'), null);

    // A lock on cell-2, held by a session whose lease lives there.
    const session = await client.session({ namespace: '/locks/pay/', ttlSeconds: 6 });
    assert.equal(client.cellOfSession(session), 'cell-2');
    const lock = await client.locks(session).acquire('pay', { waitMs: 0, owner: 'cells-test' });
    const state = await http(`${cell2.cell.clientUrls()[0] as string}/v1/locks/pay`);
    assert.equal(state.status, 200, JSON.stringify(state.body));
    assert.equal(state.body.holder.key, lock.key);
    assert.ok(lock.token > 0);
    assert.equal((await client.lockState('pay')).holder?.key, lock.key);
    assert.equal((await lock.release()).released, true);

    // The namespace moves; the client's cache still says cell-1.
    await moveToCell2('/mv/');
    assert.equal(await onCell(cell2, '/mv/k'), 'before');
    assert.equal((await client.getValue('/mv/k'))?.value, 'before');
    assert.equal(client.wrongCellRetries, 1, 'exactly one wrong_cell retry');
    await client.put('/mv/k', 'after');
    assert.equal(client.wrongCellRetries, 1, 'the cache learned the new owner');
    assert.equal(await onCell(cell2, '/mv/k'), 'after');
    assert.equal(await onCell(cell1, '/mv/k'), 'wrong_cell');
    assert.equal(client.mapLoads, 2, 'one map read at start, one for the session');
  } finally {
    await client.close();
  }
});

test('a lock waiter goes on waiting across a move of the lock\'s namespace and is granted on the new cell', { timeout: 60_000 }, async () => {
  const client = await BatonCellsClient.connect({ control: control.cell.clientUrls() });
  try {
    const holderSession = await client.session({ namespace: '/locks/mvlock/', ttlSeconds: 6 });
    const waiterSession = await client.session({ namespace: '/locks/mvlock/', ttlSeconds: 6 });
    assert.equal(client.cellOfSession(waiterSession), 'cell-1');
    const lost: string[] = [];
    for (const session of [holderSession, waiterSession]) session.on('lost', (error) => lost.push(error.message));
    const holder = await client.locks(holderSession).acquire('mvlock', { waitMs: 0, owner: 'holder' });
    const waiting = client.locks(waiterSession).acquire('mvlock', { waitMs: 40_000, owner: 'waiter' });
    waiting.catch(() => undefined); // asserted below
    const source = cell1.cell.clientUrls()[0] as string;
    let queued = 0;
    for (let poll = 0; poll < 100 && queued < 1; poll++) {
      await sleep(50);
      queued = (await http(`${source}/v1/locks/mvlock`)).body.queue?.length ?? 0;
    }
    assert.equal(queued, 1, 'the waiter is queued on cell-1');
    const retriesBefore = client.wrongCellRetries;
    await moveToCell2('/locks/mvlock/');
    assert.equal((await holder.release()).released, true, 'the release followed the lock to cell-2');
    const startMs = Date.now();
    const granted = await waiting;
    console.log(`granted ${Date.now() - startMs} ms after the release; wrong_cell retries ${client.wrongCellRetries - retriesBefore}`);
    assert.ok(Date.now() - startMs < 10_000, 'granted soon after the release, not at the end of its wait');
    assert.ok(granted.token > holder.token, `token ${granted.token} above ${holder.token}`);
    const state = await http(`${cell2.cell.clientUrls()[0] as string}/v1/locks/mvlock`);
    assert.equal(state.body.holder?.key, granted.key, 'held on cell-2');
    assert.ok(client.wrongCellRetries > retriesBefore);
    assert.deepEqual(lost, []);
    await granted.release();
  } finally {
    await client.close();
  }
});
