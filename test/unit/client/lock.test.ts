// Lock behaviour over a fake HTTP transport (no network): what acquire sends, that a retry after
// a lost answer reuses the Request-ID and waits only for what is left, that a session lost while
// waiting abandons the request (the server then drops the queue entry) and throws the session's
// error, that a granted lock's signal follows the session, and that release stops owner work
// (signal) before it deletes the key, once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  BatonClient,
  ClosedError,
  LockHeldError,
  SessionLostError,
  type HttpAnswer,
  type HttpRequest,
  type OwnerSession,
} from '../../../src/client/index.js';

interface Sent {
  readonly url: string;
  readonly body: Record<string, unknown>;
  readonly requestId: string | undefined;
  readonly signal: AbortSignal | undefined;
}

function answer(status: number, body: unknown): HttpAnswer {
  return { status, header: () => null, text: JSON.stringify(body) };
}

function fakeClient(reply: (request: HttpRequest, count: number) => Promise<HttpAnswer>) {
  const sent: Sent[] = [];
  const client = new BatonClient({
    endpoints: ['http://fake:1'],
    discover: false,
    random: () => 0,
    retry: { delayMsBase: 1, delayMsMax: 1 },
    transport: async (request) => {
      const body = JSON.parse(String(request.body ?? 'null')) as Record<string, unknown>;
      sent.push({ url: request.url, body, requestId: request.headers['request-id'], signal: request.signal });
      return reply(request, sent.length);
    },
  });
  return { client, sent };
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
  const { client, sent } = fakeClient(async (request) =>
    answer(200, request.url.endsWith('/acquire') ? granted : { released: true, revision: 44 }),
  );
  const { session } = fakeSession();
  const lock = await client.locks(session).acquire('jobs', { waitMs: 2_000, owner: 'w1' });
  assert.equal(sent[0]?.url, 'http://fake:1/v1/locks/jobs/acquire');
  assert.deepEqual(sent[0]?.body, { lease: 81, owner: 'w1', waitMs: 2_000 });
  assert.ok(sent[0]?.requestId?.startsWith('c-'));
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
  assert.deepEqual(sent.map((s) => s.url.split('/').at(-1)), ['acquire', 'release']);
  assert.deepEqual(sent[1]?.body, { key: granted.key });
  await client.close();
});

test('a retry after a lost answer reuses the Request-ID and waits only for what is left', async () => {
  const { client, sent } = fakeClient(async (_request, count) => {
    if (count === 1) {
      await new Promise((resolve) => setTimeout(resolve, 300));
      throw Object.assign(new Error('answer lost'), { name: 'TimeoutError' });
    }
    return answer(200, granted);
  });
  const { session } = fakeSession();
  const lock = await client.locks(session).acquire('jobs', { waitMs: 1_000 });
  assert.equal(lock.token, 42);
  assert.equal(sent.length, 2);
  assert.equal(sent[0]?.requestId, sent[1]?.requestId, 'same queue entry on the server');
  const secondWait = sent[1]?.body['waitMs'] as number;
  assert.ok(secondWait <= 700 && secondWait >= 400, `second attempt waits ${secondWait} ms`);
  await client.close();
});

test('the session lost while waiting: the request is abandoned and the session error thrown', async () => {
  const { client, sent } = fakeClient(
    (request) =>
      new Promise((_resolve, reject) => {
        // The server holds the request while the lock is taken; it ends only when aborted.
        request.signal?.addEventListener('abort', () => reject(Object.assign(new Error('aborted'), { name: 'AbortError' })));
      }),
  );
  const { session, lose } = fakeSession();
  const acquiring = client.locks(session).acquire('jobs', { waitMs: 60_000 });
  setTimeout(lose, 100);
  await assert.rejects(acquiring, SessionLostError);
  assert.equal(sent.length, 1, 'not retried');
  assert.equal(sent[0]?.signal?.aborted, true, 'the HTTP request was aborted (the server drops the entry)');
  await client.close();
});

test('a granted lock follows its session: lost session → signal aborted with its error', async () => {
  const { client } = fakeClient(async () => answer(200, granted));
  const { session, lose } = fakeSession();
  const lock = await client.locks(session).acquire('jobs');
  assert.equal(lock.signal.aborted, false);
  lose();
  assert.ok(lock.signal.aborted);
  assert.ok(lock.signal.reason instanceof SessionLostError);
  assert.equal(lock.isSafe(), false);
  assert.throws(() => lock.throwIfLost(), SessionLostError);
  await client.close();
});

test('definite answers are not retried; bad names and waits fail before anything is sent', async () => {
  const holder = { key: '/locks/jobs/000000000007', owner: 'w0', fencingToken: 7, lease: 80, waitingSinceMs: 1 };
  const { client, sent } = fakeClient(async () =>
    answer(409, { error: { code: 'lock_held', message: 'held', holder } }),
  );
  const { session, lose } = fakeSession();
  const locks = client.locks(session);
  await assert.rejects(locks.acquire('jobs', { waitMs: 0 }), (error: unknown) => {
    assert.ok(error instanceof LockHeldError);
    assert.deepEqual(error.details['holder'], holder);
    return true;
  });
  assert.equal(sent.length, 1);
  await assert.rejects(locks.acquire('a/b'), { code: 'invalid_argument' });
  await assert.rejects(locks.acquire(''), { code: 'invalid_argument' });
  await assert.rejects(locks.acquire('x'.repeat(129)), { code: 'invalid_argument' });
  await assert.rejects(locks.acquire('jobs', { waitMs: 300_001 }), { code: 'invalid_argument' });
  await assert.rejects(locks.acquire('jobs', { owner: 'o'.repeat(257) }), { code: 'too_large' });
  lose();
  await assert.rejects(locks.acquire('jobs'), SessionLostError);
  assert.equal(sent.length, 1, 'nothing more was sent');
  await client.close();
});
