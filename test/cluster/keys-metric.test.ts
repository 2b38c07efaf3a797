// etcd_debugging_mvcc_keys_total (docs/operations.md) on a real 3-process cell: every member's
// /metrics says exactly how many live keys its applied state holds (checked against what the test
// wrote and against each member's own serializable count of every key) after puts, deletes, a
// delete-range, a txn and a lease that expires; after a follower's restart (counted again at
// boot); and after an isolated follower catches up by installing a snapshot (the cell kept 10
// entries of log, so nothing else could bring it up to date).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findLeader, http, putSurely, sleep, startTestCell, type TestCell } from './harness.js';

async function keysMetric(url: string): Promise<number | null> {
  const text = await (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(5_000) })).text();
  const match = /^etcd_debugging_mvcc_keys_total (\d+)$/m.exec(text);
  return match === null ? null : Number(match[1]);
}

/** What the member's own state holds: a serializable count of every key (answered locally). */
async function keysServed(url: string): Promise<number | null> {
  const answer = await http(`${url}/v1/kv/?prefix=true&countOnly=true&consistency=serializable`);
  return answer.status === 200 ? Number(answer.body.count) : null;
}

/** Waits until every member's metric and own count both say `expected`; returns what each said last. */
async function expectEverywhere(cell: TestCell, expected: number, when: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  let seen: Record<string, unknown> = {};
  while (Date.now() < deadline) {
    seen = {};
    for (const name of cell.names) {
      const url = cell.cell.clientUrl(name);
      seen[name] = await Promise.all([keysMetric(url), keysServed(url)]).catch((error: Error) => error.message);
    }
    if (Object.values(seen).every((pair) => Array.isArray(pair) && pair[0] === expected && pair[1] === expected)) return;
    await sleep(200);
  }
  assert.fail(`${when}: every member should show ${expected} keys as [metric, served]: ${JSON.stringify(seen)}`);
}

test('every member\'s etcd_debugging_mvcc_keys_total is its true key count: writes, deletes, expiry, restart, snapshot catch-up', { timeout: 180_000 }, async () => {
  const cell = await startTestCell({ proxies: true, extraArgs: ['--log-catchup-entries', '10'] });
  try {
    const leader = await findLeader(cell);
    const url = cell.cell.clientUrl(leader);
    await expectEverywhere(cell, 0, 'a new cell');
    for (let i = 0; i < 30; i++) await putSurely(`${url}/v1/kv/app/k${i}`, `v${i}`);
    for (let i = 0; i < 5; i++) await putSurely(`${url}/v1/kv/app/k${i}`, 'again'); // updates: no new key
    for (let i = 0; i < 8; i++) await putSurely(`${url}/v1/kv/tmp/t${i}`, 'x');
    await expectEverywhere(cell, 38, 'after 38 keys written (5 of them twice)');

    assert.equal((await http(`${url}/v1/kv/app/k29`, { method: 'DELETE' })).status, 200);
    assert.equal((await http(`${url}/v1/kv/app/absent`, { method: 'DELETE' })).status, 200); // nothing to delete
    const range = await http(`${url}/v1/kv/tmp/?prefix=true`, { method: 'DELETE' });
    assert.equal(range.body.deleted, 8);
    const txn = await http(`${url}/v1/txn`, {
      method: 'POST',
      body: JSON.stringify({
        compare: [{ key: '/app/k0', target: 'version', op: '>', value: 0 }],
        success: [{ put: { key: '/txn/a', value: '1' } }, { put: { key: '/txn/b', value: '2' } }, { delete: { key: '/app/k1' } }],
        failure: [],
      }),
    });
    assert.equal(txn.body.succeeded, true, JSON.stringify(txn.body));
    // 38 - 1 - 8 + 2 - 1
    await expectEverywhere(cell, 30, 'after a delete, a delete-range and a txn');

    const lease = await http(`${url}/v1/leases`, { method: 'POST', body: JSON.stringify({ ttl: 5 }) });
    assert.equal(lease.status, 200, JSON.stringify(lease.body));
    for (let i = 0; i < 4; i++) {
      const put = await http(`${url}/v1/kv/session/s${i}`, { method: 'PUT', body: 's', headers: { 'Lease-ID': String(lease.body.id) } });
      assert.ok(put.status === 200 || put.status === 201, JSON.stringify(put.body));
    }
    await expectEverywhere(cell, 34, 'with 4 keys on a lease');
    // Never renewed: the leader expires it and its keys go in one revision.
    await expectEverywhere(cell, 30, 'after the lease expired');

    // A restarted follower counts its store once at boot.
    const follower = cell.names.find((n) => n !== leader) as string;
    await cell.cell.kill9(follower);
    cell.cell.start(follower);
    await cell.cell.waitReady(30_000, [follower]);
    await expectEverywhere(cell, 30, 'after a follower restarted');

    // An isolated follower misses more than the log keeps: it installs a snapshot.
    cell.isolate(follower);
    for (let i = 0; i < 40; i++) await putSurely(`${url}/v1/kv/late/l${i}`, 'x');
    assert.equal((await http(`${url}/v1/kv/app/?prefix=true`, { method: 'DELETE' })).body.deleted, 28);
    cell.healAll();
    await expectEverywhere(cell, 30 + 40 - 28, 'after the follower caught up');
    const log = cell.cell.tail(follower, 400);
    assert.match(log, /snapshot \d+ from member \d+ installed/, 'the follower caught up by a snapshot');
  } finally {
    await cell.close();
  }
});
