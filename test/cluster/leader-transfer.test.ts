// POST /v1/cluster/leader {"to": id} (etcd's MoveLeader, natively): through a follower (it
// forwards to the leader), the named voter leads afterwards and writes go on; a member that is
// not a voter, or a bad body, gets a clear error and leadership stays.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { findLeader, http, startTestCell, type TestCell } from './harness.js';

let cell: TestCell;

before(async () => {
  cell = await startTestCell();
});

after(async () => {
  await cell?.close();
});

async function memberIds(): Promise<Map<string, number>> {
  const answer = await http(`${cell.cell.clientUrl('n1')}/v1/cluster/members`);
  return new Map((answer.body as { members: { id: number; name: string }[] }).members.map((m) => [m.name, m.id]));
}

test('leadership moves to the named voter, asked through a follower; writes go on', async () => {
  const leader = await findLeader(cell, cell.names, 10_000);
  const [via, target] = cell.names.filter((n) => n !== leader) as [string, string];
  const ids = await memberIds();
  const moved = await http(`${cell.cell.clientUrl(via)}/v1/cluster/leader`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ to: ids.get(target) }),
  });
  assert.equal(moved.status, 200, JSON.stringify(moved.body));
  assert.equal(await findLeader(cell, cell.names, 10_000), target);
  const put = await http(`${cell.cell.clientUrl(leader)}/v1/kv/after-transfer`, { method: 'PUT', body: 'ok' });
  assert.ok(put.status === 200 || put.status === 201, JSON.stringify(put.body));
});

test('a member id that is no voter, or a bad body, is refused and leadership stays', async () => {
  const leader = await findLeader(cell, cell.names, 10_000);
  const unknown = await http(`${cell.cell.clientUrl(leader)}/v1/cluster/leader`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ to: 99 }),
  });
  assert.ok(unknown.status >= 400 && unknown.status < 500, `${unknown.status} ${JSON.stringify(unknown.body)}`);
  const bad = await http(`${cell.cell.clientUrl(leader)}/v1/cluster/leader`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ to: 'n2' }),
  });
  assert.equal(bad.status, 400);
  assert.equal(await findLeader(cell, cell.names, 10_000), leader);
});
