// Session behaviour over a fake client (no network; real timers, sub-second TTLs): renewals move
// safeUntil forward from their send time; unanswered renewals make the session lost at safeUntil
// (signal aborted, `lost` fired once); a `lease_not_found` answer loses it at once; an
// acknowledgement that arrives after safeUntil does not revive it; close() revokes the lease.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Session, SessionLostError, monotonicNowMs, systemClock, type BatonClient } from '../../../src/client/index.js';

type Answer = (ids: number[]) => Promise<unknown>;

function fakeClient(answer: Answer, ttlSeconds: number) {
  const revoked: number[] = [];
  const client = {
    clock: systemClock,
    random: () => 0.5,
    leaseGrant: async () => ({ id: 81, ttl: ttlSeconds }),
    leaseRevoke: async (id: number) => {
      revoked.push(id);
      return { id, deleted: 0, revision: 1 };
    },
    stream: {
      connect: () => undefined,
      request: async (frame: { ids: number[] }) => answer(frame.ids),
    },
  };
  return { client: client as unknown as BatonClient, revoked };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const never = () => new Promise<never>(() => undefined);

test('acknowledged renewals move safeUntil forward; close() revokes', async () => {
  const { client, revoked } = fakeClient(async (ids) => ({ revision: 1, leases: ids.map((id) => ({ id, ttl: 0.9 })) }), 0.9);
  const session = await Session.start(client, { safetyMarginMs: 100 });
  const first = session.safeUntil;
  assert.ok(first > monotonicNowMs() && first <= monotonicNowMs() + 800);
  await sleep(700); // two renewals (every 300 ms)
  assert.ok(session.renewals >= 2, `renewals ${session.renewals}`);
  assert.ok(session.safeUntil > first);
  assert.ok(session.isSafe());
  await session.close();
  assert.deepEqual(revoked, [81]);
  assert.ok(session.signal.aborted);
  assert.equal(session.lost, false);
});

test('unanswered renewals: lost at safeUntil, signal aborted, lost fired once', async () => {
  const { client, revoked } = fakeClient(never, 0.9);
  const session = await Session.start(client, { safetyMarginMs: 200 });
  const safeUntil = session.safeUntil;
  const lostEvents: SessionLostError[] = [];
  session.on('lost', (error) => lostEvents.push(error));
  await new Promise((resolve) => session.signal.addEventListener('abort', resolve));
  const lostAt = monotonicNowMs();
  assert.ok(lostAt >= safeUntil, 'not before safeUntil');
  assert.ok(lostAt < safeUntil + 500, `promptly (${Math.round(lostAt - safeUntil)} ms late)`);
  assert.ok(session.signal.reason instanceof SessionLostError);
  assert.equal(session.isSafe(), false);
  await sleep(50);
  assert.equal(lostEvents.length, 1);
  await session.close();
  assert.deepEqual(revoked, [], 'a lost lease is not revoked (it may belong to nobody now)');
});

test('lease_not_found loses the session at once', async () => {
  const { client } = fakeClient(async (ids) => ({ revision: 1, leases: ids.map((id) => ({ id, error: 'lease_not_found' })) }), 3);
  const session = await Session.start(client);
  const started = monotonicNowMs();
  await new Promise((resolve) => session.signal.addEventListener('abort', resolve));
  assert.ok(monotonicNowMs() - started < 1_500, 'at the first renewal, long before safeUntil');
  assert.match((session.signal.reason as Error).message, /lease_not_found/);
});

test('an acknowledgement that arrives after safeUntil does not revive the session', async () => {
  let release: (() => void) | undefined;
  const { client } = fakeClient(
    (ids) => new Promise((resolve) => (release = () => resolve({ revision: 1, leases: ids.map((id) => ({ id, ttl: 0.9 })) }))),
    0.9,
  );
  const session = await Session.start(client, { safetyMarginMs: 200 });
  await new Promise((resolve) => session.signal.addEventListener('abort', resolve));
  release?.();
  await sleep(50);
  assert.equal(session.lost, true);
  assert.equal(session.isSafe(), false);
  assert.equal(session.safeUntil, Number.NEGATIVE_INFINITY);
});
