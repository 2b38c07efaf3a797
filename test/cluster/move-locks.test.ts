// Lock waiters across a namespace move (docs/design/cells.md, "Locks across a move"), on real
// processes: a control cell, two data cells and a router (in the test's process). Four client
// library processes' worth of clients, all pointed at the router: one holds lock `pay` (namespace
// /locks/pay/ on cell-1), three wait behind it in a known order. The namespace moves to cell-2
// while they wait; then the holder releases. Checked: the waiters are granted in their queue
// order, on cell-2, each within seconds of the release before it (not at the end of its wait),
// each with a fencing token above the previous holder's; whenever a lock is
// granted the previous holder's token is no longer valid (the fencing check on the new owner);
// no session was lost; the waiters' acquire calls never failed (the fence ended their waits on
// the source with wrong_cell, and the client went on with the same Request-ID through the router).
// A fourth waiter talks to cell-1 directly (no router): its stream cannot follow the lock, so its
// acquire ends with wrong_cell naming its entry, and the client withdraws that entry on cell-2
// (else it would hold the lock for everyone once at the head): the lock is free at the end.
// Second test: a holder's watch of its own key (followKey) follows the lock across a move: the key
// deleted on the destination afterwards aborts the holder's signal with LockNotHeldError.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { http, sleep, type TestCell, moveAndWait, startRouter, startTwoCells } from './harness.js';
import type { Router } from '../../src/router/router.js';
import { BatonClient, LockNotHeldError } from '../../src/client/index.js';
import type { Lock, Session } from '../../src/client/index.js';

let control: TestCell;
let cell1: TestCell;
let cell2: TestCell;
let router: Router;
let routerUrl: string;

const json = (body: unknown): RequestInit => ({ method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

before(async () => {
  [control, cell1, cell2] = await startTwoCells();
  const controlUrl = control.cell.clientUrls()[0] as string;
  for (const prefix of ['/locks/pay/', '/locks/audit/']) {
    assert.equal((await http(`${controlUrl}/v1/control/namespaces`, json({ prefix, cell: 'cell-1' }))).status, 200);
  }
  ({ router, url: routerUrl } = await startRouter(control, { knows: '/locks/audit/' }));
}, { timeout: 120_000 });

after(async () => {
  await router?.stop();
  await Promise.all([control, cell1, cell2].map((cell) => cell?.close())); // also removes their data directories
});

/** Moves `prefix` to cell-2 and waits until the move is released and cleaned. */
const moveToCell2 = (prefix: string): Promise<void> => moveAndWait(control.cell.clientUrls()[0] as string, prefix, 'cell-2', 600);

/** The queue of lock `pay` on `url` (holder first), as entry keys. */
async function queueOn(url: string): Promise<string[]> {
  const state = await http(`${url}/v1/locks/pay`);
  if (state.status !== 200) return [];
  return [state.body.holder, ...state.body.queue].filter((e) => e !== null).map((e: { key: string }) => e.key);
}

test('waiters queued on a lock keep their order and get increasing tokens across a move of its namespace', { timeout: 90_000 }, async () => {
  const source = cell1.cell.clientUrls()[0] as string;
  const destination = cell2.cell.clientUrls()[0] as string;
  const clients = Array.from({ length: 4 }, () => new BatonClient({ endpoints: [routerUrl] }));
  try {
    const sessions = await Promise.all(clients.map((client) => client.session({ ttlSeconds: 6 })));
    const lost: string[] = [];
    sessions.forEach((session, i) => session.on('lost', (error) => lost.push(`${i}: ${error.message}`)));
    const holder = await (clients[0] as BatonClient).locks(sessions[0] as Session).acquire('pay', { owner: 'holder', waitMs: 0 }) as Lock;
    // The waiters queue one after another (each seen in the queue before the next asks).
    const order: string[] = [];
    const granted: Promise<Lock>[] = [];
    for (let i = 1; i <= 3; i++) {
      const owner = `waiter-${i}`;
      granted.push((clients[i] as BatonClient).locks(sessions[i] as Session).acquire('pay', { owner, waitMs: 60_000 }).then((lock) => {
        order.push(owner);
        return lock;
      }));
      for (let poll = 0; poll < 100 && (await queueOn(source)).length < i + 1; poll++) await sleep(50);
      assert.equal((await queueOn(source)).length, i + 1, `${owner} is queued on the source`);
    }
    // The direct client queues last.
    const direct = new BatonClient({ endpoints: cell1.cell.clientUrls() });
    clients.push(direct);
    const directSession = await direct.session({ ttlSeconds: 6 });
    const directWait = direct.locks(directSession).acquire('pay', { owner: 'direct', waitMs: 60_000 }).then(
      () => 'granted', (error: { code?: string; details?: Record<string, unknown> }) => `${error.code} ${String(error.details?.['entry'] !== undefined)}`);
    for (let poll = 0; poll < 100 && (await queueOn(source)).length < 5; poll++) await sleep(50);
    const queued = await queueOn(source);
    assert.equal(queued.length, 5, 'the direct waiter is queued last');
    granted.forEach((p) => p.catch(() => undefined)); // failures are asserted below

    await moveToCell2('/locks/pay/');
    assert.deepEqual((await queueOn(destination)).slice(0, 4), queued.slice(0, 4), 'the queue is on the destination in the same order');
    assert.equal(await directWait, 'wrong_cell true', 'the direct waiter heard wrong_cell naming its entry');
    for (let poll = 0; poll < 100 && (await queueOn(destination)).includes(queued[4] as string); poll++) await sleep(100);
    assert.deepEqual(await queueOn(destination), queued.slice(0, 4), 'the direct waiter\'s entry was withdrawn on the destination');
    await sleep(1_000); // the waiters re-attach on the destination (a wait there would grant nothing yet)
    assert.deepEqual(order, [], 'nobody was granted while the holder held');

    let previous = holder;
    await holder.release();
    let releasedAtMs = Date.now();
    for (let i = 1; i <= 3; i++) {
      const lock = await (granted[i - 1] as Promise<Lock>);
      const waitedMs = Date.now() - releasedAtMs;
      assert.ok(waitedMs < 5_000, `waiter-${i} was granted ${waitedMs} ms after the release (not at the end of its wait)`);
      assert.equal(lock.owner, `waiter-${i}`);
      assert.ok(lock.token > previous.token, `waiter-${i}'s token ${lock.token} is above the previous holder's ${previous.token}`);
      const stale = await (clients[i] as BatonClient).locks(sessions[i] as Session).check('pay', previous.token);
      assert.equal(stale.valid, false, 'the previous holder\'s token no longer passes the fencing check');
      assert.equal(stale.currentToken, lock.token);
      previous = lock;
      await lock.release();
      releasedAtMs = Date.now();
    }
    assert.deepEqual(order, ['waiter-1', 'waiter-2', 'waiter-3'], 'granted in queue order');
    assert.deepEqual(await queueOn(destination), [], 'the lock is free: no entry left behind');
    assert.deepEqual(lost, [], 'no session was lost');
    console.log(`tokens: holder ${holder.token}, then ${(await Promise.all(granted)).map((l) => l.token).join(', ')}`);
  } finally {
    await Promise.all(clients.map((client) => client.close()));
  }
});

test('a holder\'s watch of its own key follows the lock across a move: deleted on the destination, its signal aborts', { timeout: 60_000 }, async () => {
  const client = new BatonClient({ endpoints: [routerUrl] });
  try {
    const session = await client.session({ ttlSeconds: 6 });
    const lock = await client.locks(session).acquire('audit', { waitMs: 0 });
    await moveToCell2('/locks/audit/');
    await sleep(1_000); // the holder's watch, ended by the fence, is re-created on the destination
    assert.equal(lock.signal.aborted, false, 'the move itself takes nothing from the holder');
    const destination = cell2.cell.clientUrls()[0] as string;
    assert.equal((await http(`${destination}/v1/kv${lock.key}`, { method: 'DELETE' })).status, 200, 'an operator deletes the holder\'s key');
    for (let poll = 0; poll < 50 && !lock.signal.aborted; poll++) await sleep(100);
    assert.ok(lock.signal.aborted, 'the holder heard of it');
    assert.ok(lock.signal.reason instanceof LockNotHeldError, String(lock.signal.reason));
  } finally {
    await client.close();
  }
});
