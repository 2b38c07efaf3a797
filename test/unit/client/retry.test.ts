// The client's retry rules, proved with a fake transport and a fake clock (no network, no real
// sleeping): every attempt of one mutation carries the same Request-ID, definite answers are
// never retried, delays stay within the full-jitter bounds and honour Retry-After, and an
// unanswered endpoint makes the next attempt go to another one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  BatonClient,
  KeyNotFoundError,
  PreconditionFailedError,
  UnavailableError,
  backoffDelayMs,
  defaultRetryPolicy,
  type HttpAnswer,
  type HttpRequest,
} from '../../../src/client/index.js';

type Script = (request: HttpRequest, attempt: number) => HttpAnswer | Error;

function answer(status: number, body: unknown, headers: Record<string, string> = {}): HttpAnswer {
  return { status, text: JSON.stringify(body), header: (name) => headers[name] ?? null };
}

function fakeClient(script: Script, retry: Partial<typeof defaultRetryPolicy> = {}) {
  const requests: HttpRequest[] = [];
  const sleeps: number[] = [];
  let nowMs = 0;
  const client = new BatonClient({
    endpoints: ['http://a', 'http://b', 'http://c'],
    discover: false,
    random: () => 0.5,
    retry,
    clock: {
      monotonicMs: () => nowMs,
      sleep: async (ms) => {
        sleeps.push(ms);
        nowMs += ms;
      },
    },
    transport: async (request) => {
      requests.push(request);
      const outcome = script(request, requests.length - 1);
      if (outcome instanceof Error) throw outcome;
      return outcome;
    },
  });
  return { client, requests, sleeps };
}

const timeout = (): Error => Object.assign(new Error('timed out'), { name: 'TimeoutError' });
const refused = (): Error => new TypeError('fetch failed', { cause: new Error('ECONNREFUSED') });
const ok = { created: true, version: 1, revision: 7, fencingToken: 7 };

test('a put retried after timeouts, 503 and 504 resends the same Request-ID every time', async () => {
  const { client, requests } = fakeClient((_request, attempt) =>
    [timeout(), answer(503, { error: { code: 'unavailable', message: 'no leader' } }), refused(),
      answer(504, { error: { code: 'timeout', message: 'unknown' } }), answer(201, ok)][attempt] as HttpAnswer | Error,
  );
  const result = await client.put('/a', 'v');
  assert.deepEqual(result, ok);
  assert.equal(requests.length, 5);
  const ids = new Set(requests.map((r) => r.headers['request-id']));
  assert.equal(ids.size, 1);
  assert.match([...ids][0] ?? '', /^c-/);
  // A second logical put draws a new ID.
  const second = fakeClient(() => answer(200, ok));
  await second.client.put('/a', 'v');
  await second.client.put('/a', 'v');
  assert.notEqual(second.requests[0]?.headers['request-id'], second.requests[1]?.headers['request-id']);
});

test('a caller-chosen Request-ID is used as is', async () => {
  const { client, requests } = fakeClient((_r, attempt) => (attempt === 0 ? timeout() : answer(200, ok)));
  await client.delete('/a', { requestId: 'mine-1' });
  assert.deepEqual(requests.map((r) => r.headers['request-id']), ['mine-1', 'mine-1']);
});

test('definite answers are never retried', async () => {
  const cases: [number, string, new (...args: never[]) => Error][] = [
    [412, 'precondition_failed', PreconditionFailedError],
    [404, 'key_not_found', KeyNotFoundError],
  ];
  for (const [status, code, type] of cases) {
    const { client, requests, sleeps } = fakeClient(() => answer(status, { error: { code, message: code, current: null } }));
    await assert.rejects(client.put('/a', 'v', { ifVersion: 0 }), (error: Error & { code?: string }) => {
      assert.ok(error instanceof type);
      assert.equal(error.code, code);
      return true;
    });
    assert.equal(requests.length, 1);
    assert.deepEqual(sleeps, []);
  }
  const invalid = fakeClient(() => answer(400, { error: { code: 'invalid_argument', message: 'bad' } }));
  await assert.rejects(invalid.client.txn({ compare: [], success: [], failure: [] }), { code: 'invalid_argument' });
  assert.equal(invalid.requests.length, 1);
});

test('retries are bounded: attempts and deadline, then the last error', async () => {
  const { client, requests } = fakeClient(() => answer(503, { error: { code: 'unavailable', message: 'down' } }), { attemptsMax: 4 });
  await assert.rejects(client.get('/a'), (error: Error) => error instanceof UnavailableError);
  assert.equal(requests.length, 4);
  const slow = fakeClient(() => timeout(), { attemptsMax: 100, deadlineMs: 2_000, delayMsBase: 400, delayMsMax: 1_000 });
  await assert.rejects(slow.client.put('/a', 'v'), { code: 'timeout' });
  assert.ok(slow.sleeps.reduce((a, b) => a + b, 0) <= 2_000);
});

test('each retry goes to the next endpoint after no answer or 503', async () => {
  const { client, requests } = fakeClient((_r, attempt) => (attempt < 2 ? refused() : answer(200, ok)));
  await client.put('/a', 'v');
  const hosts = requests.map((r) => new URL(r.url).host);
  assert.equal(new Set(hosts).size, 3);
});

test('backoff: full jitter below a doubling, capped ceiling', () => {
  const policy = { ...defaultRetryPolicy, delayMsBase: 100, delayMsMax: 1_000 };
  for (let attempt = 0; attempt < 12; attempt++) {
    const ceiling = Math.min(1_000, 100 * 2 ** attempt);
    assert.equal(backoffDelayMs(policy, attempt, () => 0), 0);
    assert.equal(backoffDelayMs(policy, attempt, () => 0.999999), ceiling - 1);
    const draws = Array.from({ length: 200 }, () => backoffDelayMs(policy, attempt, Math.random));
    assert.ok(draws.every((d) => d >= 0 && d < ceiling));
  }
});

test('Retry-After is a floor for the next delay', async () => {
  const { client, sleeps } = fakeClient((_r, attempt) =>
    attempt === 0 ? answer(429, { error: { code: 'overloaded', message: 'busy' } }, { 'retry-after': '2' }) : answer(200, ok),
  );
  await client.put('/a', 'v');
  assert.equal(sleeps.length, 1);
  assert.ok((sleeps[0] ?? 0) >= 2_000 && (sleeps[0] ?? 0) < 2_000 + defaultRetryPolicy.delayMsBase);
});

test('keys are percent-encoded per segment; headers carry the preconditions', async () => {
  const { client, requests } = fakeClient(() => answer(200, ok));
  await client.put('/a b/ü?x', 'v', { ifVersion: 0, lease: 81 });
  assert.equal(requests[0]?.url.replace(/^http:\/\/[abc]/, ''), '/v1/kv/a%20b/%C3%BC%3Fx');
  assert.equal(requests[0]?.headers['if-version'], '0');
  assert.equal(requests[0]?.headers['lease-id'], '81');
});

const wrongCell = (endpoints: string[]) => answer(421, { error: { code: 'wrong_cell', message: 'moved', namespace: '/pay/', cell: 'cell-2', epoch: 4, endpoints } });

test('wrong_cell after an attempt that may have applied is not a refusal: asked again, then reported as an unknown outcome', async () => {
  // The first attempt timed out (it may have applied on the source before its fence); a cell that
  // holds no record of it (expired, or a destination still landing without it) refuses the retry with wrong_cell.
  const { client, requests } = fakeClient((_request, attempt) => (attempt === 0 ? timeout() : wrongCell(['http://d'])), { attemptsMax: 4 });
  const error = await client.put('/pay/a', 'v').then(() => null, (e: unknown) => e as Error & { code?: string; retryable?: boolean });
  assert.equal(error?.code, 'timeout', `not a definite refusal: ${error?.message}`);
  assert.equal(error?.retryable, true);
  assert.equal(requests.length, 4, 'every attempt was used');
  assert.equal(new Set(requests.map((r) => r.headers['request-id'])).size, 1, 'one Request-ID throughout');
  // The owner answering from its Request-ID record ends it with the first outcome.
  const { client: second } = fakeClient((_request, attempt) => [timeout(), wrongCell(['http://d']), wrongCell(['http://d']), answer(201, ok)][attempt] as HttpAnswer | Error, { attemptsMax: 4 });
  assert.deepEqual(await second.put('/pay/a', 'v'), ok);
});

test('wrong_cell on a first attempt is followed once, then passed on as the refusal it is', async () => {
  const { client, requests } = fakeClient(() => wrongCell(['http://d']), { attemptsMax: 4 });
  const error = await client.put('/pay/a', 'v').then(() => null, (e: unknown) => e as Error & { code?: string });
  assert.equal(error?.code, 'wrong_cell');
  assert.equal(requests.length, 2);
});
