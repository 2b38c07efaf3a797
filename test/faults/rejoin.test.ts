// A node added later, replaced after a member it was added beside has left (fault history 21017,
// and most likely session 19's 19309): n4 and then n5 join a 3-member cell behind the fault
// proxies (grow-first), n4 is removed, then n5 is replaced as the membership fault does (removed,
// wiped, added back as a new learner, started with --initial-cluster-state existing, promoted).
// The re-added n5 must start and be promoted: its start lists only the current members, and a
// --peer-dial naming the removed n4 made it exit at once (the leader saw it at match 0 for the
// whole step).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestCell } from '../cluster/harness.js';
import { growFirst } from './grow-first-fault.js';
import { listMembers, replaceMember } from './membership-fault.js';

test('a node added later is replaced after a member it was added beside left: it rejoins and is promoted', { timeout: 240_000 }, async (t) => {
  const cell = await startTestCell({ size: 3, proxies: true });
  try {
    const hooks = { say: (what: string) => t.diagnostic(what), membersChanged: () => undefined };
    const first = await growFirst(cell, { removeLeader: false, pickOld: () => 'n1', loseSpareAfterMs: null }, hooks);
    assert.deepEqual([first.added, first.removed], ['n4', 'n1']);
    const second = await growFirst(cell, { removeLeader: false, pickOld: () => 'n4', loseSpareAfterMs: null }, hooks);
    assert.deepEqual([second.added, second.removed], ['n5', 'n4']);
    await replaceMember(cell, 'n5', 0, hooks.say);
    assert.ok(cell.cell.isRunning('n5'), 'the re-added node runs');
    const members = await listMembers(cell, cell.names);
    const n5 = members.find((m) => m.name === 'n5');
    assert.equal(n5?.role, 'voter', JSON.stringify(members));
    assert.deepEqual(members.map((m) => m.name).sort(), ['n2', 'n3', 'n5']);
  } finally {
    await cell.close();
  }
});
