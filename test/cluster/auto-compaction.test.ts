// Automatic compaction on a real 3-process cell (--auto-compaction-mode revision, a retention of
// 20 revisions, checked every 200 ms): after a run of writes the compaction point settles 20
// revisions behind the last one on every member; reads below it get `compacted` (HTTP 410, and
// etcd's own error through the gRPC facade) while the retained revisions still read, and only
// the leader proposed the compactions.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Etcd3 } from 'etcd3';
import { findLeader, http, putSurely, sleep, startTestCell, type TestCell } from './harness.js';

const retention = 20;
let cell: TestCell;

before(async () => {
  // Revision mode checks every 5 minutes by default (etcd's interval); the nodes inherit this.
  process.env['BATON_AUTO_COMPACTION_CHECK_MS'] = '200';
  cell = await startTestCell({
    grpc: true,
    extraArgs: ['--auto-compaction-mode', 'revision', '--auto-compaction-retention', String(retention)],
  });
});

after(async () => {
  await cell?.close();
});

const url = (name: string): string => cell.cell.clientUrl(name);

async function statusOf(name: string): Promise<{ revision: number; compactRevision: number }> {
  return (await http(`${url(name)}/v1/cluster/status`)).body;
}

test('reads below the retained window are compacted; the last `retention` revisions still read', { timeout: 60_000 }, async () => {
  const leader = await findLeader(cell);
  const revisions: number[] = [];
  for (let i = 1; i <= 60; i++) {
    const name = cell.names[i % cell.names.length] as string;
    revisions.push((await putSurely(`${url(name)}/v1/kv/ac/k`, `v${i}`)).revision as number);
  }
  const last = revisions.at(-1) as number;
  const expected = last - retention;
  // Every member applies the leader's compact entry.
  const deadline = Date.now() + 20_000;
  for (const name of cell.names) {
    for (;;) {
      const status = await statusOf(name);
      assert.ok(status.compactRevision <= expected, `${name} compacted to ${status.compactRevision}, past ${expected}`);
      if (status.compactRevision === expected) break;
      if (Date.now() > deadline) assert.fail(`${name}: compact revision ${status.compactRevision}, waiting for ${expected}`);
      await sleep(100);
    }
  }
  const valueAt = (revision: number): string => `v${revisions.indexOf(revision) + 1}`;
  for (const name of cell.names) {
    const below = await http(`${url(name)}/v1/kv/ac/k?revision=${expected - 1}`);
    assert.equal(below.status, 410, `${name}: ${JSON.stringify(below.body)}`);
    assert.equal(below.body.error.code, 'compacted');
    assert.equal(below.body.error.compactRevision, expected);
    for (const revision of [expected, last - 5, last]) {
      const read = await http(`${url(name)}/v1/kv/ac/k?revision=${revision}`);
      assert.equal(read.status, 200, `${name} at ${revision}: ${JSON.stringify(read.body)}`);
      assert.equal(read.body.kvs[0].value, valueAt(revision));
    }
  }
  // The etcd gRPC facade answers as etcd does (etcd key "ac/k" is native "/ac/k").
  const client = new Etcd3({ hosts: cell.names.map((name) => cell.cell.grpcEndpoint(name)) });
  try {
    await assert.rejects(client.get('ac/k').revision(expected - 1).string(), /etcdserver: mvcc: required revision has been compacted/);
    assert.equal(await client.get('ac/k').revision(last - 1).string(), valueAt(last - 1));
  } finally {
    client.close();
  }
  // Only the leader proposed: followers never log a compaction of their own (unless leadership
  // moved during the test, which a busy machine can cause: then each proposer led at some point).
  if ((await findLeader(cell)) !== leader) return;
  for (const name of cell.names) {
    const proposed = (cell.cell.logs.get(name) ?? []).join('').includes('auto compaction: compacting to revision');
    if (name !== leader) assert.equal(proposed, false, `${name} (a follower) proposed a compaction`);
  }
  assert.ok((cell.cell.logs.get(leader) ?? []).join('').includes(`auto compaction: compacting to revision ${expected}`));
});
