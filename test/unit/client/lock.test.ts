// Lock behaviour over a scripted /v1/stream server (no cell): what acquire sends, that a retry
// after a dropped connection reuses the Request-ID and waits only for what is left (and starts a
// new entry when that retry finds the old one withdrawn with the closed connection), that a
// session lost (or a caller gone) while waiting withdraws the queue entry by repeating the
// request with no wait (and gives back a grant that crossed), that a granted lock's signal
// follows the session, and that release stops owner work (signal) before it deletes the key, once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ClosedError, LockHeldError, SessionLostError, type OwnerSession } from '../../../src/client/index.js';
import { FakeStreamServer, error, result, type Received } from './fake-stream-server.js';

function lockServer(answer: (received: Received) => void): Promise<FakeStreamServer> {
  return FakeStreamServer.start((received) => {
    if (received.frame['type'] !== 'watch') answer(received); // followKey's watch: left unanswered
  });
}

function fakeSession(leaseId = 81) {
  const controller = new AbortController();
  let safe = true;
  const session: OwnerSession = {
    leaseId,
    get signal() {
      return controller.signal;
    },
    get safeUntil() {
      return safe ? Number.POSITIVE_INFINITY : Number.NEGATIVE_INFINITY;
    },
    isSafe: () => safe,
  };
  const lose = (): void => {
    safe = false;
    controller.abort(new SessionLostError(leaseId, 'test: no renewal confirmed'));
  };
  return { session, lose };
}

const granted = { key: '/locks/jobs/000000000042', fencingToken: 42, revision: 43, owner: 'w1', lease: 81, waitedMs: 5 };

test('acquire sends lease, owner and wait; the lock carries the token; release aborts then deletes, once', async () => {
  const server = await lockServer((received) =>
    result(received, received.frame['type'] === 'lockAcquire' ? granted : { released: true, revision: 44 }),
  );
  const client = server.client();
  try {
    const { session } = fakeSession();
    const lock = await client.locks(session).acquire('jobs', { waitMs: 2_000, owner: 'w1' });
    const [acquire] = server.frames('lockAcquire');
    assert.deepEqual({ ...acquire, id: 0, requestId: '' }, { id: 0, type: 'lockAcquire', name: 'jobs', lease: 81, owner: 'w1', waitMs: 2_000, requestId: '' });
    assert.ok(String(acquire?.['requestId']).startsWith('c-'));
    assert.equal(lock.token, 42);
    assert.equal(lock.key, granted.key);
    assert.ok(lock.isSafe());
    const order: string[] = [];
    lock.signal.addEventListener('abort', () => order.push('signal'));
    const releasing = lock.release();
    order.push('sent');
    assert.deepEqual(order, ['signal', 'sent'], 'owner work is told to stop before the key is deleted');
    assert.deepEqual(await releasing, { released: true, revision: 44 });
    assert.equal(lock.release(), releasing, 'idempotent');
    assert.ok(lock.signal.reason instanceof ClosedError);
    assert.equal(lock.isSafe(), false);
    assert.deepEqual(server.frames('lockRelease').map((f) => [f['name'], f['key']]), [['jobs', granted.key]]);
    assert.equal(server.connections, 1, 'one connection for the lock and its key watch');
  } finally {
    await client.close();
    await server.close();
  }
});

test('a retry after a dropped connection reuses the Request-ID and waits only for what is left', async () => {
  const server = await lockServer((received) => {
    if (received.connection === 0) setTimeout(() => received.socket.terminate(), 300);
    else result(received, granted);
  });
  const client = server.client();
  try {
    const { session } = fakeSession();
    const lock = await client.locks(session).acquire('jobs', { waitMs: 1_000 });
    assert.equal(lock.token, 42);
    const sent = server.frames('lockAcquire');
    assert.equal(sent.length, 2);
    assert.equal(sent[0]?.['requestId'], sent[1]?.['requestId'], 'same queue entry on the server');
    const secondWait = sent[1]?.['waitMs'] as number;
    assert.ok(secondWait <= 700 && secondWait >= 300, `second attempt waits ${secondWait} ms`);
  } finally {
    await client.close();
    await server.close();
  }
});

test('a retry that finds its entry withdrawn (its connection closed) waits again, under a new Request-ID, for what is left', async () => {
  const server = await lockServer((received) => {
    if (received.connection === 0) setTimeout(() => received.socket.terminate(), 200);
    else if (server.frames('lockAcquire').length === 2) error(received, { code: 'lock_held', message: 'not queued' });
    else result(received, granted);
  });
  const client = server.client();
  try {
    const { session } = fakeSession();
    const lock = await client.locks(session).acquire('jobs', { waitMs: 5_000 });
    assert.equal(lock.token, 42);
    const [first, retry, fresh] = server.frames('lockAcquire');
    assert.equal(retry?.['requestId'], first?.['requestId']);
    assert.notEqual(fresh?.['requestId'], first?.['requestId'], 'a new entry, not the withdrawn one');
    assert.ok((fresh?.['waitMs'] as number) < 5_000 && (fresh?.['waitMs'] as number) > 4_000);
  } finally {
    await client.close();
    await server.close();
  }
});

test('the session lost while waiting: the entry is withdrawn (same Request-ID, no wait) and the session error thrown', async () => {
  const server = await lockServer((received) => {
    // The server holds a waiting request; the no-wait repeat finds the entry queued and deletes it.
    if (received.frame['waitMs'] === 0) error(received, { code: 'lock_held', message: 'held' });
  });
  const client = server.client();
  try {
    const { session, lose } = fakeSession();
    const acquiring = client.locks(session).acquire('jobs', { waitMs: 60_000 });
    setTimeout(lose, 100);
    await assert.rejects(acquiring, SessionLostError);
    await waitFor(() => server.frames('lockAcquire').length === 2);
    const [first, withdraw] = server.frames('lockAcquire');
    assert.equal(withdraw?.['waitMs'], 0);
    assert.equal(withdraw?.['requestId'], first?.['requestId']);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(server.frames('lockAcquire').length, 2, 'not retried');
    assert.equal(server.frames('lockRelease').length, 0, 'nothing was granted');
  } finally {
    await client.close();
    await server.close();
  }
});

test('a caller that gives up while a grant crosses: the grant answered to the withdrawal is released', async () => {
  const server = await lockServer((received) => {
    if (received.frame['type'] === 'lockRelease') result(received, { released: true, revision: 45 });
    else if (received.frame['waitMs'] === 0) result(received, granted); // granted meanwhile
  });
  const client = server.client();
  try {
    const { session } = fakeSession();
    const controller = new AbortController();
    const acquiring = client.locks(session).acquire('jobs', { waitMs: 60_000, signal: controller.signal });
    setTimeout(() => controller.abort(new Error('caller gave up')), 100);
    await assert.rejects(acquiring, /caller gave up/);
    await waitFor(() => server.frames('lockRelease').length === 1);
    assert.equal(server.frames('lockRelease')[0]?.['key'], granted.key);
  } finally {
    await client.close();
    await server.close();
  }
});

test('a granted lock follows its session: lost session → signal aborted with its error', async () => {
  const server = await lockServer((received) => result(received, granted));
  const client = server.client();
  try {
    const { session, lose } = fakeSession();
    const lock = await client.locks(session).acquire('jobs');
    assert.equal(lock.signal.aborted, false);
    lose();
    assert.ok(lock.signal.aborted);
    assert.ok(lock.signal.reason instanceof SessionLostError);
    assert.equal(lock.isSafe(), false);
    assert.throws(() => lock.throwIfLost(), SessionLostError);
  } finally {
    await client.close();
    await server.close();
  }
});

test('definite answers are not retried; bad names and waits fail before anything is sent', async () => {
  const holder = { key: '/locks/jobs/000000000007', owner: 'w0', fencingToken: 7, lease: 80, waitingSinceMs: 1 };
  const server = await lockServer((received) => error(received, { code: 'lock_held', message: 'held', holder }));
  const client = server.client();
  try {
    const { session, lose } = fakeSession();
    const locks = client.locks(session);
    await assert.rejects(locks.acquire('jobs', { waitMs: 0 }), (failure: unknown) => {
      assert.ok(failure instanceof LockHeldError);
      assert.deepEqual(failure.details['holder'], holder);
      return true;
    });
    assert.equal(server.received.length, 1);
    await assert.rejects(locks.acquire('a/b'), { code: 'invalid_argument' });
    await assert.rejects(locks.acquire(''), { code: 'invalid_argument' });
    await assert.rejects(locks.acquire('x'.repeat(129)), { code: 'invalid_argument' });
    await assert.rejects(locks.acquire('jobs', { waitMs: 300_001 }), { code: 'invalid_argument' });
    await assert.rejects(locks.acquire('jobs', { owner: 'o'.repeat(257) }), { code: 'too_large' });
    lose();
    await assert.rejects(locks.acquire('jobs'), SessionLostError);
    assert.equal(server.received.length, 1, 'nothing more was sent');
  } finally {
    await client.close();
    await server.close();
  }
});

async function waitFor(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
