// Batched expiry arrives with the last member's upgrade, with real processes: 21b9183 (store
// format 3, peer protocol 4, expiry one leaseRevoke entry per lease) is built into a temporary
// directory and all three members start on it. n1 and n2 are restarted on this build and n1 is
// made the leader: with n3 still old, the store stays at format 3 (n3 could not apply op 21), the
// leader says why, and 200 expiring leases take at least 200 log entries. Then n3 is restarted on
// this build: every member reports format 5 (the newest) within seconds, 1,000 expiring leases (each with a
// key) take a handful of entries, their keys are gone on every member, and the members' content
// hashes agree. Needs git history with 21b9183 (skipped otherwise) or BATON_FORMAT3_BUILD=DIR.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { http, findLeader, sleep, type TestCell } from './harness.js';
import { assertContentHashesAgree, everyMemberAtFormat, makeLeader, memberStatus as status, startMixedCell } from './mixed-builds.js';
import { oldBuild } from './old-build.js';

const build = oldBuild('21b9183', 'BATON_FORMAT3_BUILD');
after(() => {
  if (typeof build !== 'string') build.cleanup();
});

/** Grants `count` leases of 10 s through `name`, each with a key `/exp/<id>` when `keys` (10 txns of 100 puts). */
async function grantExpiring(cell: TestCell, name: string, count: number, tag: string, keys: boolean): Promise<number[]> {
  const url = cell.cell.clientUrl(name);
  const res = await http(`${url}/v1/leases/batch`, {
    method: 'POST', headers: { 'request-id': tag }, body: JSON.stringify({ ttl: 10, count }), timeoutMs: 30_000,
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const ids = (res.body.leases as { id: number }[]).map((l) => l.id);
  assert.equal(new Set(ids).size, count);
  if (keys) {
    for (let i = 0; i < ids.length; i += 100) {
      const success = ids.slice(i, i + 100).map((id) => ({ put: { key: `/exp/${id}`, value: 'x', lease: id } }));
      const txn = await http(`${url}/v1/txn`, { method: 'POST', body: JSON.stringify({ compare: [], success, failure: [] }), timeoutMs: 30_000 });
      assert.equal(txn.status, 200, JSON.stringify(txn.body));
    }
  }
  return ids;
}

/** Waits until none of `ids` is left on the leader; the leader's commit index moved by how much. */
async function entriesToExpire(cell: TestCell, ids: readonly number[]): Promise<number> {
  const leader = await findLeader(cell);
  const before = (await status(cell, leader)).commitIndex as number;
  const started = Date.now();
  for (;;) {
    const res = await http(`${cell.cell.clientUrl(leader)}/v1/leases?limit=10000`, { timeoutMs: 10_000 });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const live = new Set((res.body.leases as { id: number }[]).map((l) => l.id));
    if (ids.every((id) => !live.has(id))) break;
    assert.ok(Date.now() - started < 90_000, `${ids.filter((id) => live.has(id)).length} of ${ids.length} leases still live after 90 s`);
    await sleep(250);
  }
  return ((await status(cell, leader)).commitIndex as number) - before;
}

test('a format-3 cell moves to format 5 (the newest) once its last old member runs this build, and expires leases in batches then', { skip: typeof build === 'string' ? build : false, timeout: 300_000 }, async (t) => {
  assert.ok(typeof build !== 'string');
  const { cell, restartOnThisBuild } = await startMixedCell(build.cli);
  try {
    await findLeader(cell);
    assert.equal((await status(cell, 'n1')).storeFormat, 3, 'the old build makes format-3 stores');
    await restartOnThisBuild('n1');
    await restartOnThisBuild('n2');
    // A new member leads, so the expiring leader is the one that must hold back.
    await makeLeader(cell, 'n1');
    await sleep(3_000); // three looks of the upgrader
    for (const name of ['n1', 'n2']) assert.equal((await status(cell, name)).storeFormat, 3, `${name} stays at format 3 while n3 is old`);
    assert.match(cell.cell.tail('n1', 400), /not moving to 5 yet: member \d+ speaks peer protocol 4 \(format 4 needs 5\)/);
    const mixedIds = await grantExpiring(cell, 'n2', 200, 'mixed', false);
    const mixed = await entriesToExpire(cell, mixedIds);
    assert.ok(mixed >= 200, `one entry per expired lease while n3 is old: ${mixed} entries for 200`);
    t.diagnostic(`format 3: ${mixed} entries to expire 200 leases`);

    await restartOnThisBuild('n3');
    t.diagnostic(`every member at format 5 ${await everyMemberAtFormat(cell, 5)} ms after n3 was ready on this build`);
    const batchedIds = await grantExpiring(cell, 'n3', 1000, 'new', true);
    const batched = await entriesToExpire(cell, batchedIds);
    // A few revocation entries, plus checkpoints of the unrenewed leases and heartbeat-free noise.
    assert.ok(batched <= 40, `1,000 expiries in a handful of entries at format 4: ${batched} entries`);
    t.diagnostic(`format 4: ${batched} entries to expire 1,000 leases with a key each`);

    // Every member deleted the keys, and holds the same state.
    const leader = await findLeader(cell);
    const revision = (await status(cell, leader)).revision as number;
    for (const name of cell.names) {
      for (let i = 0; ; i++) {
        const res = await http(`${cell.cell.clientUrl(name)}/v1/kv/exp/?prefix=true&countOnly=true&consistency=serializable`);
        if (res.status === 200 && res.body.count === 0 && (await status(cell, name)).revision >= revision) break;
        assert.ok(i < 100, `keys left on ${name}: ${JSON.stringify(res.body)}`);
        await sleep(100);
      }
    }
    await assertContentHashesAgree(cell, revision);
  } finally {
    await cell.close();
  }
});
