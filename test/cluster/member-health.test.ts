// Member health means the same from every member: a member is healthy when the leader heard from
// it within the last election timeout, and followers learn the leader's view on its heartbeats
// (src/raft/contact.ts). A real 3-process cell: every member agrees all are healthy; a follower
// frozen with SIGSTOP is reported unhealthy by every running member within a bound; resumed, all
// report healthy again; killed and restarted into an idle cell (no write), it is healthy again too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findLeader, http, sleep, startTestCell, type TestCell } from './harness.js';

// The harness runs 50 ms ticks and 10-tick election timeouts: the leader stops vouching for a
// silent member 500 ms after its last answer, and the next heartbeat (50 ms) tells the others.
const agreeWithinMs = 3_000;

type HealthView = Map<string, boolean>;

async function healthAsSeenBy(cell: TestCell, name: string): Promise<HealthView | null> {
  const status = await http(`${cell.cell.clientUrl(name)}/v1/cluster/status`, { timeoutMs: 1_000 }).catch(() => null);
  if (status?.status !== 200) return null;
  return new Map((status.body.members as { name: string; healthy: boolean }[]).map((m) => [m.name, m.healthy]));
}

/** Polls until every member in `askEach` reports exactly `expected`; returns the time it took. */
async function untilAllAgree(
  cell: TestCell, askEach: readonly string[], expected: Record<string, boolean>, withinMs = agreeWithinMs,
): Promise<number> {
  const started = Date.now();
  let last: (HealthView | null)[] = [];
  while (Date.now() - started < withinMs) {
    last = await Promise.all(askEach.map((name) => healthAsSeenBy(cell, name)));
    const agree = last.every((view) => view !== null && Object.entries(expected).every(([n, h]) => view.get(n) === h));
    if (agree) return Date.now() - started;
    await sleep(25);
  }
  const seen = last.map((view, i) => `${askEach[i]}: ${view === null ? 'no answer' : JSON.stringify(Object.fromEntries(view))}`);
  assert.fail(`within ${withinMs} ms every member should report ${JSON.stringify(expected)}; saw ${seen.join('; ')}`);
}

test('every member reports the same member health: a stopped follower turns unhealthy everywhere, and healthy again when back', async () => {
  const cell = await startTestCell();
  try {
    const all = Object.fromEntries(cell.names.map((name) => [name, true]));
    await untilAllAgree(cell, cell.names, all, 10_000);
    // Asked again once settled, every member gives the same answer, not just once.
    for (let i = 0; i < 5; i++) {
      const views = await Promise.all(cell.names.map((name) => healthAsSeenBy(cell, name)));
      for (const [j, view] of views.entries()) assert.deepEqual(Object.fromEntries(view ?? []), all, `${cell.names[j]} agrees`);
      await sleep(50);
    }

    const leader = await findLeader(cell);
    const follower = cell.names.find((name) => name !== leader) as string;
    const others = cell.names.filter((name) => name !== follower);
    cell.cell.signal(follower, 'SIGSTOP');
    const downMs = await untilAllAgree(cell, others, { ...all, [follower]: false });
    cell.cell.signal(follower, 'SIGCONT');
    const backMs = await untilAllAgree(cell, cell.names, all);

    // Killed and restarted: it comes back caught up into an idle cell, and nothing is written.
    await cell.cell.kill9(follower);
    await untilAllAgree(cell, others, { ...all, [follower]: false });
    cell.cell.start(follower);
    // The process starts and opens its files first: a longer bound.
    const restartedMs = await untilAllAgree(cell, cell.names, all, 20_000);
    console.log(`member health: stopped follower unhealthy everywhere in ${downMs} ms, healthy in ${backMs} ms after SIGCONT, ` +
      `${restartedMs} ms after a restart`);
  } finally {
    await cell.close();
  }
});
