// A cell made by an older build moves its store to format 4 by itself once every member runs this
// build, with real processes: 769102f (store format 2, peer protocol 3, no leaseGrantBatch) is
// built into a temporary directory and all three members start on it. n1 and n2 are restarted on
// this build and n1 is made the leader: with n3 still old, the store stays at format 2 (n3 could
// not apply op 19), the leader says why, and a batch of grants still goes one log entry per lease
// and is alive on every member. Then n3 is restarted on this build: every member reports format 4
// within seconds, a batch of 1,000 grants is a handful of entries, every lease granted before and
// after is on every member, and the members' content hashes agree. Needs git history with 769102f
// (skipped otherwise) or BATON_FORMAT2_BUILD=DIR, a tree already built there.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { http, findLeader, sleep, startTestCell, type TestCell } from './harness.js';
import { oldBuild, repoRoot } from './old-build.js';

const build = oldBuild('769102f', 'BATON_FORMAT2_BUILD');
after(() => {
  if (typeof build !== 'string') build.cleanup();
});

const status = async (cell: TestCell, name: string): Promise<Record<string, any>> => {
  const res = await http(`${cell.cell.clientUrl(name)}/v1/cluster/status`, { timeoutMs: 5_000 });
  assert.equal(res.status, 200);
  return res.body;
};

/** Grants `count` leases through `name` in one request; how many log entries the cell took for it. */
async function grantBatch(cell: TestCell, name: string, count: number, requestId: string): Promise<{ ids: number[]; entries: number }> {
  const url = cell.cell.clientUrl(name);
  const before = (await status(cell, name)).commitIndex as number;
  const res = await http(`${url}/v1/leases/batch`, {
    method: 'POST', headers: { 'request-id': requestId }, body: JSON.stringify({ ttl: 300, count }), timeoutMs: 30_000,
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const ids = (res.body.leases as { id: number }[]).map((l) => l.id);
  assert.equal(new Set(ids).size, count);
  // The leader's commit index is ahead of a follower's at most by a heartbeat: ask the leader.
  const leader = await findLeader(cell);
  await sleep(200);
  const afterIndex = (await status(cell, leader)).commitIndex as number;
  return { ids, entries: afterIndex - before };
}

async function everyMemberHas(cell: TestCell, ids: readonly number[]): Promise<void> {
  const sample = [ids[0], ids[Math.floor(ids.length / 2)], ids.at(-1)] as number[];
  for (const name of cell.names) {
    for (const id of sample) {
      let res = await http(`${cell.cell.clientUrl(name)}/v1/leases/${id}`);
      for (let i = 0; i < 50 && res.status !== 200; i++) {
        await sleep(100);
        res = await http(`${cell.cell.clientUrl(name)}/v1/leases/${id}`);
      }
      assert.equal(res.status, 200, `lease ${id} on ${name}: ${JSON.stringify(res.body)}`);
    }
  }
}

async function restartOnThisBuild(cell: TestCell, onOld: Set<string>, name: string): Promise<void> {
  cell.cell.signal(name, 'SIGTERM');
  await cell.cell.waitExit(name);
  onOld.delete(name);
  cell.cell.start(name);
  await cell.cell.waitReady(60_000);
}

test('a format-2 cell moves to format 4 once its last old member runs this build, and batches grants then', { skip: typeof build === 'string' ? build : false, timeout: 300_000 }, async (t) => {
  assert.ok(typeof build !== 'string');
  const oldCli = build.cli;
  const onOld = new Set(['n1', 'n2', 'n3']);
  const cell = await startTestCell({ cliPathFor: (name) => (onOld.has(name) ? oldCli : join(repoRoot, 'dist/src/cli/main.js')) });
  try {
    await findLeader(cell);
    const granted: number[] = [];
    granted.push(...(await grantBatch(cell, 'n1', 100, 'old-1')).ids);

    await restartOnThisBuild(cell, onOld, 'n1');
    await restartOnThisBuild(cell, onOld, 'n2');
    // Make a new member lead, so the proposer is the one that must hold back.
    const n1Id = (await status(cell, 'n1')).member as number;
    for (let attempt = 0; (await findLeader(cell)) !== 'n1'; attempt++) {
      assert.ok(attempt < 20, 'n1 never became the leader');
      await http(`${cell.cell.clientUrl('n1')}/v1/cluster/leader`, { method: 'POST', body: JSON.stringify({ to: n1Id }), timeoutMs: 10_000 });
      await sleep(500);
    }
    await sleep(3_000); // three looks of the upgrader
    for (const name of ['n1', 'n2']) assert.equal((await status(cell, name)).storeFormat, 2, `${name} stays at format 2 while n3 is old`);
    assert.match(cell.cell.tail('n1', 400), /not moving to 4 yet: member \d+ speaks peer protocol 3 \(format 3 needs 4\)/);
    const mixed = await grantBatch(cell, 'n2', 200, 'mixed-1');
    assert.ok(mixed.entries >= 200, `one entry per grant while n3 is old: ${mixed.entries} entries for 200`);
    granted.push(...mixed.ids);
    await everyMemberHas(cell, mixed.ids);

    await restartOnThisBuild(cell, onOld, 'n3');
    const started = Date.now();
    for (;;) {
      const formats = await Promise.all(cell.names.map(async (name) => (await status(cell, name)).storeFormat as number));
      if (formats.every((f) => f === 4)) break;
      assert.ok(Date.now() - started < 30_000, `formats 30 s after the last restart: ${formats.join(',')}`);
      await sleep(200);
    }
    t.diagnostic(`every member at format 4 ${Date.now() - started} ms after n3 was ready on this build`);
    const leader = await findLeader(cell);
    assert.match(cell.cell.tail(leader, 400), /proposing upgradeStore/);
    const batched = await grantBatch(cell, 'n3', 1000, 'new-1');
    assert.ok(batched.entries >= 1 && batched.entries <= 10, `one entry for the batch at format 4: ${batched.entries} entries for 1,000`);
    granted.push(...batched.ids);
    await everyMemberHas(cell, granted);

    // The same state on every member, whichever format each record was written in.
    const revision = (await status(cell, leader)).revision as number;
    const hashes = await Promise.all(cell.names.map(async (name) => {
      for (let i = 0; ; i++) {
        const res = await http(`${cell.cell.clientUrl(name)}/v1/maintenance/hashkv?revision=${revision}`, { timeoutMs: 10_000 });
        if (res.status === 200) return res.body.hash as number;
        assert.ok(i < 50, `hashkv on ${name}: ${JSON.stringify(res.body)}`);
        await sleep(100);
      }
    }));
    assert.equal(new Set(hashes).size, 1, `content hashes: ${hashes.join(', ')}`);
  } finally {
    await cell.close();
  }
});
