// Real node processes over real TCP with real fsync. Kill -9 the leader under a write load: every
// acknowledged write survives on every node and no revision is given twice. SIGSTOP the leader:
// once resumed it never serves a stale linearizable read. Restart everything: state, revision and
// cluster identity survive.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findLeader, http, putSurely, sleep, startTestCell } from './harness.js';

test('kill -9 of the leader under writes loses no acknowledged write and reuses no revision', async () => {
  const cell = await startTestCell();
  try {
    const acked = new Map<string, { value: string; revision: number }>();
    let stop = false;
    const writer = async (id: number): Promise<void> => {
      for (let n = 0; !stop; n++) {
        const name = cell.names[(id + n) % cell.names.length] as string;
        if (!cell.cell.isRunning(name)) continue;
        const key = `/w/${id}-${n}`;
        const value = `v${id}.${n}`;
        try {
          const res = await http(`${cell.cell.clientUrl(name)}/v1/kv${key}`, { method: 'PUT', body: value, timeoutMs: 4000 });
          if (res.status === 200 || res.status === 201) acked.set(key, { value, revision: res.body.revision });
        } catch {
          // refused or timed out: not acknowledged
        }
      }
    };
    const writers = Array.from({ length: 8 }, (_, i) => writer(i));
    await sleep(1000);
    const leader = await findLeader(cell);
    await cell.cell.kill9(leader);
    await sleep(2500);
    stop = true;
    await Promise.all(writers);
    assert.ok(acked.size >= 5, `writes were acknowledged (${acked.size})`);
    cell.cell.start(leader);
    await cell.cell.waitReady(20_000);
    const revisions = [...acked.values()].map((a) => a.revision);
    assert.equal(new Set(revisions).size, revisions.length, 'no revision acknowledged twice');
    const maxRevision = Math.max(...revisions);
    for (const name of cell.names) {
      const res = await http(`${cell.cell.clientUrl(name)}/v1/kv/w/?prefix=true&consistency=serializable&minRevision=${maxRevision}`);
      assert.equal(res.status, 200);
      const found = new Map<string, string>(res.body.kvs.map((kv: { key: string; value: string }) => [kv.key, kv.value]));
      for (const [key, { value }] of acked) assert.equal(found.get(key), value, `${key} on ${name}`);
    }
    const after = await http(`${cell.cell.clientUrl('n1')}/v1/kv/after`, { method: 'PUT', body: 'x' });
    assert.ok(after.body.revision > maxRevision, 'revisions keep increasing after the failover');
  } finally {
    await cell.close();
  }
});

test('a paused leader never serves a stale linearizable read after it resumes', async () => {
  const cell = await startTestCell();
  try {
    const first = await http(`${cell.cell.clientUrl('n1')}/v1/kv/k`, { method: 'PUT', body: 'old' });
    assert.equal(first.status, 201);
    const leader = await findLeader(cell);
    cell.cell.signal(leader, 'SIGSTOP');
    const others = cell.names.filter((n) => n !== leader);
    const newLeader = await findLeader(cell, others);
    const second = await http(`${cell.cell.clientUrl(newLeader)}/v1/kv/k`, { method: 'PUT', body: 'new' });
    assert.equal(second.status, 200);
    // Queue requests at the frozen leader, then let it run: it must not answer from its old view.
    const read = http(`${cell.cell.clientUrl(leader)}/v1/kv/k`, { timeoutMs: 8000 });
    const write = http(`${cell.cell.clientUrl(leader)}/v1/kv/k2`, { method: 'PUT', body: 'w', timeoutMs: 8000 });
    await sleep(200);
    cell.cell.signal(leader, 'SIGCONT');
    const readAnswer = await read;
    if (readAnswer.status === 200) assert.equal(readAnswer.body.kvs[0].value, 'new');
    else assert.ok([503, 504].includes(readAnswer.status), `read answered ${readAnswer.status}`);
    const writeAnswer = await write;
    if (writeAnswer.status === 201) {
      // Acknowledged: then it must be committed and visible through the new leader.
      const check = await http(`${cell.cell.clientUrl(newLeader)}/v1/kv/k2`);
      assert.equal(check.body.kvs[0].value, 'w');
    }
  } finally {
    await cell.close();
  }
});

test('restarting every node keeps data, revision and cluster identity', async () => {
  const cell = await startTestCell();
  try {
    let lastRevision = 0;
    for (let i = 0; i < 20; i++) lastRevision = (await putSurely(`${cell.cell.clientUrl('n2')}/v1/kv/r/${i}`, `v${i}`)).revision;
    // n1's status is its own applied state: it may not have applied the last put yet.
    const before = await http(`${cell.cell.clientUrl('n1')}/v1/cluster/status`);
    await cell.cell.stopAll();
    cell.cell.startAll();
    await cell.cell.waitReady(20_000);
    const after = await http(`${cell.cell.clientUrl('n1')}/v1/cluster/status`);
    assert.equal(after.body.clusterId, before.body.clusterId);
    assert.ok(after.body.revision >= lastRevision);
    const res = await http(`${cell.cell.clientUrl('n3')}/v1/kv/r/?prefix=true`);
    assert.equal(res.body.count, 20);
    const next = await http(`${cell.cell.clientUrl('n3')}/v1/kv/r/new`, { method: 'PUT', body: 'x' });
    assert.equal(next.body.revision, lastRevision + 1, 'no revision lost or reused across the restart');
  } finally {
    await cell.close();
  }
});
