// /livez and /readyz with etcd's meanings on a real 3-process cell (src/api/health.ts), on the
// native HTTP port and on the gRPC facade's JSON gateway port: the verbose lines, ?exclude and a
// check's own sub path; a CORRUPT alarm makes a member not ready; a follower cut off from the
// others (a minority of one) is alive but not ready for linearizable_read, and ready again once
// the links are back; a learner is not ready for non_learner until it is left out.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findLeader, http, sleep, startTestCell, type TestCell } from './harness.js';

const allReady = '[+]data_corruption ok\n[+]serializable_read ok\n[+]linearizable_read ok\n[+]non_learner ok\nok\n';

async function text(url: string): Promise<{ status: number; body: string; type: string }> {
  // Longer than the linearizable read's bound (the harness's --request-timeout-ms 3000).
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  return { status: res.status, body: await res.text(), type: res.headers.get('content-type') ?? '' };
}

async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) assert.fail(`not within ${timeoutMs} ms: ${what}`);
    await sleep(100);
  }
}

test('/livez and /readyz answer as etcd does on both ports, and say not ready for a corrupt, a cut-off or a learner member', async () => {
  const cell: TestCell = await startTestCell({ grpc: true, proxies: true, spares: 1 });
  try {
    const native = (name: string): string => cell.cell.clientUrl(name);
    const gateway = (name: string): string => `http://${cell.cell.grpcEndpoint(name)}`;
    for (const name of cell.names) {
      for (const base of [native(name), gateway(name)]) {
        await until(`${base} ready`, async () => (await text(`${base}/readyz`)).status === 200);
        const readyz = await text(`${base}/readyz?verbose`);
        assert.deepEqual([readyz.status, readyz.body], [200, allReady], base);
        assert.match(readyz.type, /^text\/plain; charset=utf-8/);
        assert.deepEqual(await text(`${base}/readyz`).then((a) => [a.status, a.body]), [200, 'ok\n']);
        assert.deepEqual(await text(`${base}/livez?verbose`).then((a) => [a.status, a.body]), [200, '[+]serializable_read ok\nok\n']);
        assert.deepEqual(await text(`${base}/readyz/linearizable_read`).then((a) => [a.status, a.body]), [200, 'ok\n']);
        const excluded = await text(`${base}/readyz?verbose&exclude=linearizable_read&exclude=non_learner`);
        assert.deepEqual([excluded.status, excluded.body], [200, '[+]data_corruption ok\n[+]serializable_read ok\nok\n']);
      }
      // The native port refuses a parameter it does not know, as on every route; etcd's ignores it.
      assert.equal((await text(`${native(name)}/readyz?verbos`)).status, 400);
      assert.equal((await text(`${gateway(name)}/readyz?verbos`)).status, 200);
    }
    const ids = new Map((await http(`${native('n1')}/v1/cluster/status`)).body.members.map((m: { name: string; id: number }) => [m.name, m.id]));

    // A CORRUPT alarm (raised through etcd's Maintenance.Alarm on the gateway) makes n1 not ready.
    const alarm = (action: string): Promise<unknown> => http(`${gateway('n1')}/v3/maintenance/alarm`, {
      method: 'POST', body: JSON.stringify({ action, memberID: String(ids.get('n1')), alarm: 'CORRUPT' }),
    });
    await alarm('ACTIVATE');
    const corrupt = await text(`${native('n1')}/readyz`);
    assert.deepEqual([corrupt.status, corrupt.body],
      [503, '[-]data_corruption failed: alarm activated: CORRUPT\n[+]serializable_read ok\n[+]linearizable_read ok\n[+]non_learner ok\n\n']);
    assert.equal((await text(`${gateway('n1')}/readyz`)).status, 503);
    assert.equal((await text(`${native('n1')}/readyz?exclude=data_corruption`)).status, 200);
    assert.equal((await text(`${native('n1')}/livez`)).status, 200, 'an alarm is no reason to restart the process');
    await alarm('DEACTIVATE');
    assert.equal((await text(`${native('n1')}/readyz`)).status, 200);

    // A follower cut off from both others: alive, serves serializable reads, not linearizable ones.
    const leader = await findLeader(cell);
    const cut = cell.names.find((name) => name !== leader) as string;
    cell.isolate(cut);
    await until(`${cut} not ready`, async () => (await text(`${native(cut)}/readyz`)).status === 503);
    const minority = await text(`${native(cut)}/readyz?verbose`);
    assert.equal(minority.status, 503);
    assert.match(minority.body, /^\[\+\]data_corruption ok\n\[\+\]serializable_read ok\n\[-\]linearizable_read failed: [^\n]+\n\[\+\]non_learner ok\n\n$/);
    assert.equal((await text(`${gateway(cut)}/readyz`)).status, 503);
    assert.equal((await text(`${native(cut)}/livez`)).status, 200);
    assert.equal((await text(`${native(cut)}/readyz?exclude=linearizable_read`)).status, 200);
    for (const name of cell.names.filter((n) => n !== cut)) {
      await until(`${name} (majority) ready`, async () => (await text(`${native(name)}/readyz`)).status === 200);
    }
    cell.healAll();
    await until(`${cut} ready again`, async () => (await text(`${native(cut)}/readyz`)).status === 200);

    // A learner serves reads but is not ready (etcd: "not supported for learner").
    const add = await http(`${native(leader)}/v1/cluster/members`, {
      method: 'POST',
      body: JSON.stringify({ name: 'n4', peerUrl: cell.cell.peerUrl('n4'), clientUrl: cell.cell.clientUrl('n4') }),
    });
    assert.equal(add.status, 201, JSON.stringify(add.body));
    cell.cell.start('n4', { join: true });
    await until('n4 ready but for being a learner', async () =>
      (await text(`${native('n4')}/readyz?exclude=non_learner`).catch(() => ({ status: 0 }))).status === 200, 30_000);
    const learner = await text(`${native('n4')}/readyz`);
    assert.deepEqual([learner.status, learner.body],
      [503, '[+]data_corruption ok\n[+]serializable_read ok\n[+]linearizable_read ok\n[-]non_learner failed: not supported for learner\n\n']);
    assert.equal((await text(`${native('n4')}/livez`)).status, 200);
  } finally {
    await cell.close();
  }
});
