// The canary's monitor (src/canary/cell-monitor.ts) over scripted member answers: a leader whose
// member stops answering, or members that lose it, is reported at the next poll; a new agreed
// leader is reported; an applied index stuck below the commit index is reported once after stuckMs.
// Members that refuse the canary's principal (401/403) are not a lost leader: said once, judged not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CellMonitor, StatusRefused, type MonitorEvent } from '../../../src/canary/cell-monitor.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

test('leader lost, a new leader, and a stuck apply are reported', async () => {
  const members = new Map([['a', 1], ['b', 2], ['c', 3]]);
  let leader = 1;
  let down = new Set<string>();
  let applied = 100;
  let commit = 100;
  const events: MonitorEvent[] = [];
  const monitor = new CellMonitor(['a', 'b', 'c'], (event) => events.push(event), {
    everyMs: 20,
    stuckMs: 150,
    fetchStatus: (endpoint) => (down.has(endpoint)
      ? Promise.reject(new Error('connection refused'))
      : Promise.resolve({ member: members.get(endpoint) as number, leader, commitIndex: commit, appliedIndex: endpoint === 'c' ? applied : commit })),
  });
  monitor.start();
  try {
    await sleep(60);
    assert.deepEqual(events.map((e) => e.event), ['leader_elected']);
    // The leader's process dies: the others still name it for a while, but it does not answer.
    down = new Set(['a']);
    const lostAt = performance.now();
    while (!events.some((e) => e.event === 'leader_lost') && performance.now() - lostAt < 1000) await sleep(5);
    assert.ok(performance.now() - lostAt < 100, 'reported at the next poll');
    assert.equal(monitor.leaderKnown, false);
    leader = 2;
    await sleep(60);
    const elected = events.filter((e) => e.event === 'leader_elected').at(-1);
    assert.ok(elected !== undefined && elected.event === 'leader_elected' && elected.leader === 2 && elected.afterMs !== null);
    // c's apply stops while commits go on.
    commit = 120;
    applied = 110;
    await sleep(300);
    const stuck = events.filter((e) => e.event === 'apply_stuck');
    assert.equal(stuck.length, 1, 'reported once');
    assert.deepEqual(stuck[0], { event: 'apply_stuck', endpoint: 'c', commitIndex: 120, appliedIndex: 110, forMs: (stuck[0] as { forMs: number }).forMs });
    assert.ok((stuck[0] as { forMs: number }).forMs >= 150);
  } finally {
    await monitor.stop();
  }
});

test('members refusing the status (authorization on, an anonymous canary) are said once, never a leader loss', async () => {
  let refusing = false;
  const events: MonitorEvent[] = [];
  const monitor = new CellMonitor(['a', 'b', 'c'], (event) => events.push(event), {
    everyMs: 20,
    stuckMs: 150,
    fetchStatus: (endpoint) => (refusing
      ? Promise.reject(new StatusRefused(403))
      : Promise.resolve({ member: endpoint.charCodeAt(0) - 96, leader: 1, commitIndex: 5, appliedIndex: 5 })),
  });
  monitor.start();
  try {
    await sleep(60);
    assert.deepEqual(events.map((e) => e.event), ['leader_elected']);
    refusing = true;
    await sleep(200);
    assert.deepEqual(events.map((e) => e.event), ['leader_elected', 'monitor_refused']);
    assert.deepEqual(events[1], { event: 'monitor_refused', endpoint: 'a', status: 403 });
    assert.equal(monitor.leaderKnown, false, 'it cannot see the leader');
    // Allowed again (the policy changed): the same leader is seen again, and nothing was lost.
    refusing = false;
    await sleep(60);
    assert.equal(monitor.leaderKnown, true);
    assert.ok(!events.some((e) => e.event === 'leader_lost'), JSON.stringify(events));
  } finally {
    await monitor.stop();
  }
});

test('a poll in flight at stop() judges nothing: the transport closed after it is not a lost leader', async () => {
  let cut: (() => void) | null = null;
  let hang = false;
  const events: MonitorEvent[] = [];
  const monitor = new CellMonitor(['a', 'b', 'c'], (event) => events.push(event), {
    everyMs: 20,
    stuckMs: 150,
    fetchStatus: (endpoint) => (hang && endpoint !== 'b'
      // A request the closing agent will cut, as node:https does ("socket hang up").
      ? new Promise((_resolve, reject) => { const previous = cut; cut = () => { previous?.(); reject(new Error('socket hang up')); }; })
      : Promise.resolve({ member: endpoint.charCodeAt(0) - 96, leader: 1, commitIndex: 5, appliedIndex: 5 })),
  });
  monitor.start();
  await sleep(60);
  assert.deepEqual(events.map((e) => e.event), ['leader_elected']);
  hang = true;
  await sleep(40);
  assert.ok(cut !== null, 'a poll is in flight');
  const stopped = monitor.stop();
  (cut as () => void)();
  await stopped;
  await sleep(40);
  assert.deepEqual(events.map((e) => e.event), ['leader_elected'], JSON.stringify(events));
});
