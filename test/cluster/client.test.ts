// The client library and the `baton` CLI against a real 3-process cell. It proves what users
// rely on: a put whose answer was lost is retried with the same Request-ID and applies once; a
// session whose network is cut reports loss (signal aborted, safeUntil in the past) before the
// cell deletes its keys; with the leader killed mid-stream the client's watch continues without
// gap or duplicate and its session survives (or says honestly that it did not); and the CLI's
// put/get/del/watch round trip gives the documented outputs and exit codes.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { FaultProxy, findLeader, freePorts, sleep, startTestCell, type TestCell } from './harness.js';
import { baton } from './cli-run.js';
import { BatonClient, WorkerSession, fetchTransport, monotonicNowMs, type SessionLostError, type WatchBatch } from '../../src/client/index.js';

let cell: TestCell;

before(async () => {
  // A lower lease minimum keeps the network-cut test short; the rules are the same at 5 s.
  process.env['BATON_LEASE_TTL_MS_MIN'] = '3000';
  cell = await startTestCell();
});

after(async () => {
  await cell?.close();
});

test('a put whose answer was dropped is retried with the same Request-ID and applies once', async () => {
  const seen: string[] = [];
  let dropped = false;
  const client = new BatonClient({
    endpoints: cell.cell.clientUrls(),
    transport: async (request) => {
      const answer = await fetchTransport(request);
      if (request.method !== 'PUT') return answer;
      seen.push(request.headers['request-id'] ?? '');
      if (!dropped) {
        // The write committed, but the caller never hears about it: as after a timeout.
        dropped = true;
        throw Object.assign(new Error('answer lost'), { name: 'TimeoutError' });
      }
      return answer;
    },
  });
  try {
    const before = (await client.status()).revision;
    const result = await client.put('/retry/once', 'v1');
    assert.equal(seen.length, 2);
    assert.equal(seen[0], seen[1]);
    const kv = await client.getValue('/retry/once');
    assert.equal(kv?.version, 1, 'applied once');
    assert.equal(kv?.modRevision, result.revision, 'the retry answered with the original outcome');
    assert.equal(result.created, true);
    assert.equal((await client.status()).revision, before + 1);
  } finally {
    await client.close();
  }
});

test('CLI round trip: put/get/del/watch with -w json, errors and exit codes', async () => {
  const endpoints = ['--endpoints', cell.cell.clientUrls().join(',')];
  const put = await baton(['put', '/cli/a', 'hello', ...endpoints, '-w', 'json']);
  assert.equal(put.code, 0, put.stderr);
  const putResult = JSON.parse(put.stdout) as { revision: number; fencingToken: number };
  assert.ok(putResult.revision > 0);

  const get = await baton(['get', '/cli/a', ...endpoints, '-w', 'json']);
  assert.equal(get.code, 0, get.stderr);
  assert.equal(JSON.parse(get.stdout).kvs[0].value, 'hello');

  const conflict = await baton(['put', '/cli/a', 'again', '--if-version', '0', ...endpoints, '-w', 'json']);
  assert.equal(conflict.code, 1);
  assert.equal(JSON.parse(conflict.stderr).error.code, 'precondition_failed');

  const del = await baton(['del', '/cli/a', ...endpoints, '-w', 'json']);
  assert.equal(del.code, 0, del.stderr);
  assert.equal(JSON.parse(del.stdout).deleted, 1);

  const absent = await baton(['get', '/cli/a', ...endpoints]);
  assert.equal(absent.code, 1);
  assert.match(absent.stderr, /key_not_found/);

  const watch = await baton(['watch', '/cli/', '--prefix', '--rev', String(putResult.revision), '--count', '2', ...endpoints, '-w', 'json']);
  assert.equal(watch.code, 0, watch.stderr);
  const events = watch.stdout.trim().split('\n').flatMap((line) => (JSON.parse(line) as WatchBatch).events);
  assert.deepEqual(events.map((e) => [e.type, e.kv.key]), [['put', '/cli/a'], ['delete', '/cli/a']]);

  const txnFile = join(tmpdir(), `baton-txn-${process.pid}.json`);
  writeFileSync(txnFile, JSON.stringify({
    compare: [{ key: '/cli/t', target: 'version', op: '==', value: 0 }],
    success: [{ put: { key: '/cli/t', value: 'first' } }],
    failure: [{ get: { key: '/cli/t' } }],
  }));
  const txnFirst = await baton(['txn', txnFile, ...endpoints, '-w', 'json']);
  assert.equal(txnFirst.code, 0, txnFirst.stderr);
  assert.equal(JSON.parse(txnFirst.stdout).succeeded, true);
  const txnSecond = await baton(['txn', txnFile, ...endpoints]);
  assert.equal(txnSecond.code, 1, 'the failure branch ran');
  assert.match(txnSecond.stdout, /^FAILURE/);
  rmSync(txnFile, { force: true });

  const grant = await baton(['lease', 'grant', '5', ...endpoints, '-w', 'json']);
  assert.equal(grant.code, 0, grant.stderr);
  const leaseId = JSON.parse(grant.stdout).id as number;
  assert.equal((await baton(['lease', 'keepalive', String(leaseId), '--once', ...endpoints])).code, 0);
  assert.equal((await baton(['lease', 'revoke', String(leaseId), ...endpoints])).code, 0);
  const revokedAgain = await baton(['lease', 'timetolive', String(leaseId), ...endpoints]);
  assert.equal(revokedAgain.code, 1);
  assert.match(revokedAgain.stderr, /lease_not_found/);

  const usage = await baton(['get', ...endpoints]);
  assert.equal(usage.code, 2);
  const help = await baton(['lease', '--help']);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /Exit codes/);
  const [closedPort] = await freePorts(1);
  const unreachable = await baton(['get', '/x', '--endpoints', `http://127.0.0.1:${closedPort}`]);
  assert.equal(unreachable.code, 3);
  assert.match(unreachable.stderr, /unavailable/);
});

test('a session whose network is cut reports loss before the cell deletes its keys', async () => {
  const target = cell.names[0] as string;
  const [port] = await freePorts(1);
  const proxy = await FaultProxy.start(port as number, Number(new URL(cell.cell.clientUrl(target)).port));
  const client = new BatonClient({ endpoints: [`http://127.0.0.1:${port}`], discover: false, retry: { deadlineMs: 5_000 } });
  const observer = new BatonClient({ endpoints: cell.cell.clientUrls() });
  try {
    const session = await client.session({ ttlSeconds: 3 });
    await client.put('/cut/owner', 'me', { lease: session.leaseId });
    await sleep(1_500); // at least one renewal over the stream
    assert.ok(session.renewals >= 2, `renewals ${session.renewals}`);
    const lost = new Promise<SessionLostError>((resolve) => session.once('lost', resolve));
    const cutAtMs = performance.now();
    proxy.block();
    const error = await lost;
    const lostAtMs = performance.now();
    assert.ok(session.signal.aborted);
    assert.equal(session.isSafe(), false);
    assert.ok(lostAtMs - cutAtMs < 3_000, `lost ${Math.round(lostAtMs - cutAtMs)} ms after the cut`);
    assert.equal(error.leaseId, session.leaseId);
    // The owner stopped first: the cell still holds the key at the moment of loss...
    assert.equal((await observer.getValue('/cut/owner'))?.value, 'me');
    // ...and deletes it only once the lease expires.
    const deadline = performance.now() + 15_000;
    while ((await observer.getValue('/cut/owner')) !== null && performance.now() < deadline) await sleep(200);
    assert.equal(await observer.getValue('/cut/owner'), null);
  } finally {
    await client.close();
    await observer.close();
    await proxy.close();
  }
});

test('worker-thread session: renews while the main thread is blocked 2 s (TTL 5 s)', async () => {
  // Direct to the cell: a FaultProxy runs on this (blocked) thread and would stall too.
  const worker = await WorkerSession.start({ endpoints: cell.cell.clientUrls(), ttlSeconds: 5 });
  // For contrast, a Session on the main thread: it cannot renew while the thread is busy.
  const client = new BatonClient({ endpoints: cell.cell.clientUrls() });
  try {
    const mainSession = await client.session({ ttlSeconds: 5 });
    await sleep(300);
    const workerRenewalsBefore = worker.renewals;
    const workerSafeBefore = worker.safeUntil;
    const mainRenewalsBefore = mainSession.renewals;
    const blockUntil = Date.now() + 2_000;
    while (Date.now() < blockUntil) {
      // A synchronous busy callback: no timers, no I/O callbacks on this thread.
    }
    // Read synchronously, before this thread handles any message or timer.
    const workerRenewalsAfter = worker.renewals;
    const workerSafeAfter = worker.safeUntil;
    const safeNow = worker.isSafe();
    const mainRenewalsAfter = mainSession.renewals;
    assert.ok(workerRenewalsAfter > workerRenewalsBefore, `worker renewals ${workerRenewalsBefore} -> ${workerRenewalsAfter}`);
    assert.ok(workerSafeAfter > workerSafeBefore, 'safeUntil moved forward during the block');
    assert.ok(safeNow, 'still certainly the owner');
    assert.equal(mainRenewalsAfter, mainRenewalsBefore, 'the main-thread session could not renew meanwhile');
    assert.ok((await client.leaseTimeToLive(worker.leaseId)).ttl > 0);
    await mainSession.close();
  } finally {
    await worker.close();
    await client.close();
  }
});

test('worker-thread session: safeUntil goes into the past when the network is cut', async () => {
  const [port] = await freePorts(1);
  const target = cell.names[1] as string;
  const proxy = await FaultProxy.start(port as number, Number(new URL(cell.cell.clientUrl(target)).port));
  const worker = await WorkerSession.start({ endpoints: [`http://127.0.0.1:${port}`], discover: false, ttlSeconds: 3 });
  try {
    await sleep(300);
    assert.ok(worker.isSafe());
    const lost = new Promise<SessionLostError>((resolve) => worker.once('lost', resolve));
    proxy.block();
    const deadline = monotonicNowMs() + 8_000;
    while (worker.isSafe() && monotonicNowMs() < deadline) await sleep(50);
    assert.equal(worker.isSafe(), false, 'safeUntil went into the past once renewals could not be confirmed');
    assert.ok(worker.safeUntil < monotonicNowMs());
    const error = await lost;
    assert.equal(error.leaseId, worker.leaseId);
    assert.ok(worker.signal.aborted);
  } finally {
    await worker.close();
    await proxy.close();
  }
});

test('leader killed mid-stream: the watch continues without gap or duplicate; the session survives or says so', async () => {
  const leader = await findLeader(cell);
  const client = new BatonClient({ endpoints: cell.cell.clientUrls() });
  try {
    const first = await client.put('/mid/start', 'x'); // also learns the members, leader first
    assert.equal(client.endpoints.pick(), cell.cell.clientUrl(leader), 'the stream goes to the leader');
    const session = await client.session({ ttlSeconds: 5 });
    const lostEvents: SessionLostError[] = [];
    session.on('lost', (error) => lostEvents.push(error));
    const watch = client.watch('/mid/', { prefix: true, startRevision: first.revision + 1 });
    const received: WatchBatch[] = [];
    const total = 30;
    const reading = (async () => {
      let events = 0;
      for await (const batch of watch) {
        received.push(batch);
        events += batch.events.length;
        if (events >= total) break;
      }
    })();
    const revisions: number[] = [];
    for (let i = 0; i < total; i++) {
      if (i === 10) await cell.cell.kill9(leader);
      revisions.push((await client.put(`/mid/${String(i).padStart(2, '0')}`, `v${i}`, { lease: session.leaseId })).revision);
    }
    let stallTimer: NodeJS.Timeout | undefined;
    const stalled = new Promise<never>((_resolve, reject) => {
      stallTimer = setTimeout(() => reject(new Error(`watch stalled after ${received.length} batches`)), 30_000);
    });
    await Promise.race([reading, stalled]).finally(() => clearTimeout(stallTimer));
    const events = received.flatMap((batch) => batch.events);
    const eventRevisions = events.map((e) => e.kv.modRevision);
    assert.deepEqual(eventRevisions, [...eventRevisions].sort((a, b) => a - b), 'in order');
    assert.equal(new Set(eventRevisions).size, eventRevisions.length, 'no duplicate');
    assert.deepEqual(eventRevisions, revisions, 'no gap: every acknowledged put seen once, in order');
    if (session.lost) {
      assert.ok(session.signal.aborted && lostEvents.length === 1, 'a lost session says so');
    } else {
      const info = await client.leaseTimeToLive(session.leaseId);
      assert.equal(info.id, session.leaseId, 'the lease the session claims exists on the cell');
      assert.ok(session.isSafe());
      assert.equal(lostEvents.length, 0);
    }
    assert.ok(client.stream.connections >= 2, 'the stream reconnected to another node');
    console.log(`session ${session.lost ? 'lost' : 'survived'} (${session.renewals} renewals); stream connections ${client.stream.connections}`);
    const wasLost = session.lost;
    await session.close();
    // A lost session does not revoke (the ID may be someone else's by then); a live one does.
    if (!wasLost) await assert.rejects(client.leaseTimeToLive(session.leaseId), { code: 'lease_not_found' });
  } finally {
    await client.close();
  }
});

test('a partitioned node: the stream moves to another node; session and watch carry on', async () => {
  const isolatedCell = await startTestCell({ proxies: true });
  const leader = await findLeader(isolatedCell);
  const follower = isolatedCell.names.find((name) => name !== leader) as string;
  const urls = isolatedCell.cell.clientUrls();
  const followerUrl = isolatedCell.cell.clientUrl(follower);
  // The follower first: the stream connects there and must leave it once it cannot serve.
  const client = new BatonClient({ endpoints: [followerUrl, ...urls.filter((u) => u !== followerUrl)], discover: false, random: () => 0 });
  const writer = new BatonClient({ endpoints: [isolatedCell.cell.clientUrl(leader)], discover: false });
  try {
    const start = await writer.put('/iso/start', 'x');
    const session = await client.session({ ttlSeconds: 5 });
    const watch = client.watch('/iso/', { prefix: true, startRevision: start.revision + 1 });
    const seen: number[] = [];
    const total = 12;
    const reading = (async () => {
      for await (const batch of watch) {
        seen.push(...batch.events.map((e) => e.kv.modRevision));
        if (seen.length >= total) break;
      }
    })();
    isolatedCell.isolate(follower);
    const revisions: number[] = [];
    for (let i = 0; i < total; i++) {
      revisions.push((await writer.put(`/iso/${i}`, 'v')).revision);
      await sleep(500);
    }
    let stallTimer: NodeJS.Timeout | undefined;
    const stalled = new Promise<never>((_resolve, reject) => {
      stallTimer = setTimeout(() => reject(new Error(`watch stalled at ${seen.length} events`)), 20_000);
    });
    await Promise.race([reading, stalled]).finally(() => clearTimeout(stallTimer));
    assert.deepEqual(seen, revisions, 'every put once, in order');
    assert.equal(session.lost, false, 'the session moved before safeUntil');
    assert.ok(client.stream.connections >= 2);
    await session.close();
  } finally {
    await client.close();
    await writer.close();
    await isolatedCell.close();
  }
});
