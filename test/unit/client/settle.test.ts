// Unknown outcomes made definite in the background (src/client/settle.ts), over a scripted
// /v1/stream server: an acquire, campaign or release that ends with "unknown" (only `timeout`
// answers until the client's deadline) is rejected to the caller, and then repeated with its own
// Request-ID (acquire/campaign with waitMs 0) until the server answers definitely. A grant that
// answer carries is given back at once; a lock_held answer (entry withdrawn) ends it; a session
// that ends stops it; a cell that never answers definitely gets the session closed instead.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BatonClient, SessionLostError, TimeoutError, type OwnerSession } from '../../../src/client/index.js';
import { contend } from '../../../src/client/contend.js';
import { settlingDone } from '../../../src/client/settle.js';
import { FakeStreamServer, error, result, type Received } from './fake-stream-server.js';

const granted = { key: '/locks/jobs/000000000042', fencingToken: 42, revision: 43, owner: '', lease: 81, waitedMs: 0 };

/** The server's answers: 'unknown' = `timeout` errors; otherwise a function of the frame. */
type Mode = 'unknown' | ((received: Received) => void);

async function scriptedServer(): Promise<{ server: FakeStreamServer; setMode: (mode: Mode) => void }> {
  let mode: Mode = 'unknown';
  const server = await FakeStreamServer.start((received) => {
    if (received.frame['type'] === 'watch') return; // a held lock's key watch: left unanswered
    if (mode === 'unknown') error(received, { code: 'timeout', message: 'commit not confirmed in time' });
    else mode(received);
  });
  return { server, setMode: (next) => (mode = next) };
}

function shortDeadlineClient(server: FakeStreamServer): BatonClient {
  // Backoff draws 0.5 of 20 ms: settling repeats every 10 ms, the caller gives up after ~300 ms.
  return new BatonClient({
    endpoints: [server.url],
    discover: false,
    random: () => 0.5,
    retry: { delayMsBase: 20, delayMsMax: 20, deadlineMs: 300, attemptsMax: 1_000 },
  });
}

function fakeSession(leaseId = 81) {
  const controller = new AbortController();
  let closes = 0;
  const session: OwnerSession & { close(): Promise<void> } = {
    leaseId,
    get signal() {
      return controller.signal;
    },
    get safeUntil() {
      return controller.signal.aborted ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
    },
    isSafe: () => !controller.signal.aborted,
    close: async () => {
      closes++;
      controller.abort(new Error('session closed'));
    },
  };
  const lose = (): void => controller.abort(new SessionLostError(leaseId, 'test: no renewal confirmed'));
  return { session, lose, closes: () => closes };
}

test('an acquire with an unknown outcome: rejected, then repeated (same Request-ID, no wait) until granted, and the grant released', async () => {
  const { server, setMode } = await scriptedServer();
  const client = shortDeadlineClient(server);
  try {
    const { session } = fakeSession();
    await assert.rejects(client.locks(session).acquire('jobs', { waitMs: 100 }), TimeoutError);
    const callerFrames = server.frames('lockAcquire').length;
    // The entry existed and became the holder meanwhile: the next repeat is answered with the grant.
    let unavailableOnce = true;
    setMode((received) => {
      if (received.frame['type'] === 'lockRelease') return result(received, { released: true, revision: 44 });
      if (unavailableOnce) {
        unavailableOnce = false;
        return error(received, { code: 'unavailable', message: 'no leader' });
      }
      result(received, granted);
    });
    assert.deepEqual(await settlingDone(client), ['gaveBack']);
    const acquires = server.frames('lockAcquire');
    assert.ok(acquires.length > callerFrames, 'repeated after the caller heard "unknown"');
    assert.equal(new Set(acquires.map((f) => f['requestId'])).size, 1, 'one Request-ID throughout');
    assert.ok(acquires.slice(callerFrames).every((f) => f['waitMs'] === 0), 'repeats do not wait');
    assert.deepEqual(server.frames('lockRelease').map((f) => [f['name'], f['key']]), [['jobs', granted.key]]);
  } finally {
    await client.close();
    await server.close();
  }
});

test('an unknown acquire whose entry is still queued: the repeat withdraws it (lock_held) and settling ends', async () => {
  const { server, setMode } = await scriptedServer();
  const client = shortDeadlineClient(server);
  try {
    const { session } = fakeSession();
    await assert.rejects(client.locks(session).acquire('jobs', { waitMs: 100 }), TimeoutError);
    setMode((received) => error(received, { code: 'lock_held', message: 'held by another' }));
    assert.deepEqual(await settlingDone(client), ['definite']);
    const count = server.received.length;
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(server.received.length, count, 'nothing more is sent');
    assert.equal(server.frames('lockRelease').length, 0);
  } finally {
    await client.close();
    await server.close();
  }
});

test('settling stops when the session ends first (its lease takes the entry with it)', async () => {
  const { server } = await scriptedServer();
  const client = shortDeadlineClient(server);
  try {
    const { session, lose } = fakeSession();
    await assert.rejects(client.locks(session).acquire('jobs', { waitMs: 100 }), TimeoutError);
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.ok(server.frames('lockAcquire').some((f) => f['waitMs'] === 0), 'settling is under way');
    lose();
    assert.deepEqual(await settlingDone(client), ['sessionEnded']);
    const count = server.received.length;
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(server.received.length, count, 'nothing more is sent');
  } finally {
    await client.close();
    await server.close();
  }
});

test('a cell that never answers definitely: the session is closed instead (bounded)', async () => {
  const { server } = await scriptedServer();
  const client = shortDeadlineClient(server);
  try {
    const { session, closes } = fakeSession();
    const contending = contend(client, {
      frame: { type: 'lockAcquire', name: 'jobs', lease: session.leaseId },
      waitMs: 50,
      session,
      signal: session.signal,
      giveBack: () => ({ type: 'lockRelease', name: 'jobs', key: 'unused' }),
      settleMsMax: 300,
    });
    await assert.rejects(contending, TimeoutError);
    const startMs = Date.now();
    assert.deepEqual(await settlingDone(client), ['endedSession']);
    assert.ok(Date.now() - startMs < 2_000);
    assert.equal(closes(), 1);
    assert.ok(session.signal.aborted, 'owner work on this session stops');
  } finally {
    await client.close();
    await server.close();
  }
});

test('a campaign with an unknown outcome: a leadership found by the repeat is resigned', async () => {
  const { server, setMode } = await scriptedServer();
  const client = shortDeadlineClient(server);
  try {
    const { session } = fakeSession();
    await assert.rejects(client.election(session, 'sched').campaign('me', { waitMs: 100 }), TimeoutError);
    const won = { key: '/elections/sched/000000000050', term: 50, revision: 50 };
    setMode((received) => result(received, received.frame['type'] === 'resign' ? { revision: 51 } : won));
    assert.deepEqual(await settlingDone(client), ['gaveBack']);
    const campaigns = server.frames('campaign');
    assert.equal(new Set(campaigns.map((f) => f['requestId'])).size, 1);
    assert.equal(campaigns.at(-1)?.['waitMs'], 0);
    assert.deepEqual(server.frames('resign').map((f) => f['key']), [won.key]);
  } finally {
    await client.close();
    await server.close();
  }
});

test('a release with an unknown outcome: repeated (same Request-ID) until definite', async () => {
  const { server, setMode } = await scriptedServer();
  setMode((received) => result(received, granted));
  const client = shortDeadlineClient(server);
  try {
    const { session } = fakeSession();
    const lock = await client.locks(session).acquire('jobs', { waitMs: 100, followKey: false });
    setMode('unknown');
    await assert.rejects(lock.release(), TimeoutError);
    const callerReleases = server.frames('lockRelease').length;
    setMode((received) => error(received, { code: 'lock_not_held', message: 'not the holder' }));
    assert.deepEqual(await settlingDone(client), ['definite']);
    const releases = server.frames('lockRelease');
    assert.ok(releases.length > callerReleases);
    assert.equal(new Set(releases.map((f) => f['requestId'])).size, 1, 'one Request-ID throughout');
  } finally {
    await client.close();
    await server.close();
  }
});
