// A cell made by an older build moves its store to the newest format (5) by itself once every member runs this
// build, with real processes: 769102f (store format 2, peer protocol 3, no leaseGrantBatch) is
// built into a temporary directory and all three members start on it. n1 and n2 are restarted on
// this build and n1 is made the leader: with n3 still old, the store stays at format 2 (n3 could
// not apply op 19), the leader says why, and a batch of grants still goes one log entry per lease
// and is alive on every member. Then n3 is restarted on this build: every member reports format 5 (the newest)
// within seconds, a batch of 1,000 grants is a handful of entries, every lease granted before and
// after is on every member, and the members' content hashes agree. Needs git history with 769102f
// (skipped otherwise) or BATON_FORMAT2_BUILD=DIR, a tree already built there.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { http, findLeader, sleep, type TestCell } from './harness.js';
import { assertContentHashesAgree, everyMemberAtFormat, makeLeader, memberStatus as status, startMixedCell } from './mixed-builds.js';
import { oldBuild } from './old-build.js';

const build = oldBuild('769102f', 'BATON_FORMAT2_BUILD');
after(() => {
  if (typeof build !== 'string') build.cleanup();
});

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

test('a format-2 cell moves to format 5 (the newest) once its last old member runs this build, and batches grants then', { skip: typeof build === 'string' ? build : false, timeout: 300_000 }, async (t) => {
  assert.ok(typeof build !== 'string');
  const { cell, restartOnThisBuild } = await startMixedCell(build.cli);
  try {
    await findLeader(cell);
    const granted: number[] = [];
    granted.push(...(await grantBatch(cell, 'n1', 100, 'old-1')).ids);

    await restartOnThisBuild('n1');
    await restartOnThisBuild('n2');
    // Make a new member lead, so the proposer is the one that must hold back.
    await makeLeader(cell, 'n1');
    await sleep(3_000); // three looks of the upgrader
    for (const name of ['n1', 'n2']) assert.equal((await status(cell, name)).storeFormat, 2, `${name} stays at format 2 while n3 is old`);
    assert.match(cell.cell.tail('n1', 400), /not moving to 5 yet: member \d+ speaks peer protocol 3 \(format 3 needs 4\)/);
    const mixed = await grantBatch(cell, 'n2', 200, 'mixed-1');
    assert.ok(mixed.entries >= 200, `one entry per grant while n3 is old: ${mixed.entries} entries for 200`);
    granted.push(...mixed.ids);
    await everyMemberHas(cell, mixed.ids);

    await restartOnThisBuild('n3');
    t.diagnostic(`every member at format 5 ${await everyMemberAtFormat(cell, 5)} ms after n3 was ready on this build`);
    const leader = await findLeader(cell);
    assert.match(cell.cell.tail(leader, 400), /proposing upgradeStore/);
    const batched = await grantBatch(cell, 'n3', 1000, 'new-1');
    assert.ok(batched.entries >= 1 && batched.entries <= 10, `one entry for the batch at format 4: ${batched.entries} entries for 1,000`);
    granted.push(...batched.ids);
    await everyMemberHas(cell, granted);

    // The same state on every member, whichever format each record was written in.
    const revision = (await status(cell, leader)).revision as number;
    await assertContentHashesAgree(cell, revision);
  } finally {
    await cell.close();
  }
});
