// A follower cut off while the cell removes it never applies its own removal. When it can reach
// its peers again, they refuse it as removed (not merely unknown), and it stops, as one that
// applied the removal does, instead of dialling and campaigning for ever.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findLeader, http, sleep, startTestCell, type TestCell } from './harness.js';

/** Cuts a follower off and removes it through the leader; returns its name and the others'. */
async function removeWhileCutOff(cell: TestCell): Promise<{ victim: string; rest: string[] }> {
  const leader = await findLeader(cell);
  const victim = cell.names.find((n) => n !== leader) as string;
  const status = (await http(`${cell.cell.clientUrl(leader)}/v1/cluster/status`)).body as {
    members: { id: number; name: string }[];
  };
  const victimId = status.members.find((m) => m.name === victim)?.id;
  assert.ok(victimId !== undefined, `${victim} is listed`);
  cell.isolate(victim);
  let removed = await http(`${cell.cell.clientUrl(leader)}/v1/cluster/members/${victimId}`, { method: 'DELETE' });
  for (let attempt = 0; removed.status !== 200 && attempt < 40; attempt++) {
    assert.ok([412, 503].includes(removed.status), JSON.stringify(removed.body));
    await sleep(250);
    removed = await http(`${cell.cell.clientUrl(leader)}/v1/cluster/members/${victimId}`, { method: 'DELETE' });
  }
  assert.equal(removed.status, 200, JSON.stringify(removed.body));
  return { victim, rest: cell.names.filter((n) => n !== victim) };
}

/** Lets the cut-off member reach its peers again: it must hear it was removed and stop. */
async function healAndSeeItStop(cell: TestCell, victim: string): Promise<void> {
  assert.ok(cell.cell.isRunning(victim), 'cut off, it cannot know yet');
  cell.healAll();
  const code = await cell.cell.waitExit(victim, 30_000);
  assert.equal(code, 0, 'a removed member stops cleanly');
  assert.match(cell.cell.tail(victim), /says this member was removed from the cell/);
}

test('a follower removed while cut off stops once its peers tell it so', { timeout: 90_000 }, async () => {
  const cell = await startTestCell({ proxies: true });
  try {
    const { victim, rest } = await removeWhileCutOff(cell);
    await sleep(1500); // the others apply the removal and stop talking to it
    await healAndSeeItStop(cell, victim);
    // The two left serve writes.
    const write = await http(`${cell.cell.clientUrl(rest[0] as string)}/v1/kv/after`, { method: 'PUT', body: 'x' });
    assert.ok([200, 201].includes(write.status), JSON.stringify(write.body));
  } finally {
    await cell.close();
  }
});

test('a follower removed while cut off stops even if every peer restarted since the removal', { timeout: 120_000 }, async () => {
  const cell = await startTestCell({ proxies: true });
  try {
    const { victim, rest } = await removeWhileCutOff(cell);
    // Both survivors restart: what they remember of the removal is the replicated state only.
    for (const name of rest) {
      cell.cell.signal(name, 'SIGTERM');
      await cell.cell.waitExit(name);
      cell.cell.start(name);
    }
    await cell.cell.waitReady(45_000, rest);
    await healAndSeeItStop(cell, victim);
  } finally {
    await cell.close();
  }
});

test('a leader removing itself hands leadership over first: the cell is never without a leader', { timeout: 90_000 }, async () => {
  const cell = await startTestCell();
  try {
    const leader = await findLeader(cell);
    const status = (await http(`${cell.cell.clientUrl(leader)}/v1/cluster/status`)).body as {
      members: { id: number; name: string }[];
    };
    const leaderId = status.members.find((m) => m.name === leader)?.id;
    const removed = await http(`${cell.cell.clientUrl(leader)}/v1/cluster/members/${leaderId}`, { method: 'DELETE' });
    assert.equal(removed.status, 200, JSON.stringify(removed.body));
    // Without the hand-off the others would first wait out an election timeout (1 s) with no leader.
    const rest = cell.names.filter((n) => n !== leader);
    const deadline = Date.now() + 300;
    let newLeader = 0;
    while (newLeader === 0 || newLeader === leaderId) {
      assert.ok(Date.now() < deadline, 'a remaining member knows a new leader at once');
      const seen = await http(`${cell.cell.clientUrl(rest[0] as string)}/v1/cluster/status`);
      newLeader = (seen.body as { leader: number }).leader;
      if (newLeader === 0 || newLeader === leaderId) await sleep(20);
    }
    const write = await http(`${cell.cell.clientUrl(rest[1] as string)}/v1/kv/after`, { method: 'PUT', body: 'x' });
    assert.ok([200, 201].includes(write.status), JSON.stringify(write.body));
    assert.equal(await cell.cell.waitExit(leader, 30_000), 0, 'the removed leader stops');
  } finally {
    await cell.close();
  }
});
