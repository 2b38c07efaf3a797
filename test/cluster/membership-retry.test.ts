// Member changes with a Request-ID are answered once: a retry (same id, through any member, also
// after the leader that made the change is gone) gets the first outcome instead of "already a
// member" or "not in the cell", because the change history travels in the replicated member
// table. A Request-ID used for another kind of change is refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findLeader, http, sleep, startTestCell } from './harness.js';

test('a retried member add or remove answers the first outcome, on any member, after a leader change', { timeout: 120_000 }, async () => {
  const cell = await startTestCell();
  try {
    const leader = await findLeader(cell);
    const [follower, other] = cell.names.filter((n) => n !== leader) as [string, string];
    const spare = { name: 'spare', peerUrl: 'http://127.0.0.1:1', clientUrl: 'http://127.0.0.1:2' };
    const add = (via: string, requestId?: string) => http(`${cell.cell.clientUrl(via)}/v1/cluster/members`, {
      method: 'POST',
      body: JSON.stringify(spare),
      headers: requestId === undefined ? {} : { 'request-id': requestId },
    });
    const first = await add(follower, 'add-spare-1');
    assert.equal(first.status, 201, JSON.stringify(first.body));
    const id = first.body.member.id as number;
    for (const via of [follower, leader]) {
      const again = await add(via, 'add-spare-1');
      assert.equal(again.status, 201, JSON.stringify(again.body));
      assert.deepEqual(again.body.member, first.body.member);
    }
    // Without the Request-ID it is a second add of the same member: refused, as before.
    assert.equal((await add(follower)).status, 400);

    const remove = (via: string, requestId: string) =>
      http(`${cell.cell.clientUrl(via)}/v1/cluster/members/${id}`, { method: 'DELETE', headers: { 'request-id': requestId } });
    const removed = await remove(other, 'remove-spare-1');
    assert.equal(removed.status, 200, JSON.stringify(removed.body));
    assert.equal(removed.body.member.id, id);
    // Another kind of change under a used Request-ID is a client error, not a replay.
    assert.equal((await remove(other, 'add-spare-1')).status, 400);

    // The leader that made both changes goes away; the survivors still recognize the retries.
    cell.cell.signal(leader, 'SIGKILL');
    await cell.cell.waitExit(leader);
    let retried = await remove(follower, 'remove-spare-1');
    for (let attempt = 0; retried.status === 503 && attempt < 40; attempt++) {
      await sleep(250); // until a new leader is elected
      retried = await remove(follower, 'remove-spare-1');
    }
    assert.equal(retried.status, 200, JSON.stringify(retried.body));
    assert.deepEqual(retried.body.member, removed.body.member);
    const listed = await http(`${cell.cell.clientUrl(other)}/v1/cluster/members`);
    assert.ok(!(listed.body.members as { id: number }[]).some((m) => m.id === id), 'removed once, and still removed');
  } finally {
    await cell.close();
  }
});
