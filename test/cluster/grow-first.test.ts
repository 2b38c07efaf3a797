// One grow-first replacement on real processes: under a small write load, a fresh node joins a
// 3-member cell as a learner, catches up and is promoted; then the leader is removed (it hands
// leadership over first) and its process stops by itself. Every acknowledged write is then
// readable from the new member and the other remaining ones, and the removed node, restarted on
// its own data directory, refuses to serve and stops again: its data never rejoins the cell. The
// new member sits behind the harness's fault proxies too: isolated, it stops serving.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findLeader, http, listMembers, putSurely, sleep, startTestCell, type TestCell } from './harness.js';

/** Puts keys one after another through the live members until stopped; the acknowledged ones. */
function writeLoop(cell: TestCell, among: () => readonly string[]): { stop(): Promise<Map<string, number>> } {
  const acked = new Map<string, number>();
  let stopping = false;
  const loop = (async () => {
    for (let n = 0; n < 100_000 && !stopping; n++) {
      const names = among();
      const key = `/load/k${n % 20}`;
      try {
        await putSurely(`${cell.cell.clientUrl(names[n % names.length] as string)}/v1/kv${key}`, `v${n}`, 40);
        acked.set(key, n);
      } catch {
        // that member is going away: the next write goes to another
      }
      await sleep(20);
    }
  })();
  return {
    async stop() {
      stopping = true;
      await loop;
      return acked;
    },
  };
}

/** Sends a change until it is done; refusals that pass (in progress, not in sync, no leader) wait. */
async function change(cell: TestCell, via: string, method: 'POST' | 'DELETE', path: string, body?: string, watched?: string): Promise<any> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const answer = await http(`${cell.cell.clientUrl(via)}${path}`, {
      method,
      headers: { 'request-id': `grow-first ${method} ${path}` },
      ...(body === undefined ? {} : { body }),
    });
    if (answer.status === 200 || answer.status === 201) return answer.body;
    assert.ok([412, 503, 504].includes(answer.status), `${method} ${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
    if (Date.now() > deadline) {
      // What the node being changed said of itself: whether it runs, and its last lines.
      const node = watched === undefined ? '' : `\n${watched} running: ${String(cell.cell.isRunning(watched))}; its last lines:\n${cell.cell.tail(watched, 30)}`;
      assert.fail(`${method} ${path} not done: ${JSON.stringify(answer.body)}${node}`);
    }
    await sleep(200);
  }
}

test('grow first, then remove the leader: no acknowledged write lost, the old node never rejoins', { timeout: 60_000 }, async (t) => {
  const started = Date.now();
  const mark = (what: string): void => t.diagnostic(`${((Date.now() - started) / 1000).toFixed(1)} s: ${what}`);
  const cell = await startTestCell({ size: 3, proxies: true });
  let live = [...cell.names];
  const load = writeLoop(cell, () => live);
  try {
    await sleep(1_000);
    const spare = await cell.addNode(live);
    const follower = live[0] as string;
    const added = await change(cell, follower, 'POST', '/v1/cluster/members',
      JSON.stringify({ name: spare, peerUrl: cell.cell.peerUrl(spare), clientUrl: cell.cell.clientUrl(spare) }));
    const spareId = added.member.id as number;
    assert.equal(added.member.role, 'learner');
    cell.cell.start(spare, { join: true, via: live });
    await change(cell, follower, 'POST', `/v1/cluster/members/${spareId}/promote`, undefined, spare);
    assert.equal((await listMembers(cell, spare)).find((m) => m.id === spareId)?.role, 'voter');
    mark(`${spare} added, caught up and promoted`);

    // The leader removes itself (the request goes to it): it hands over, then leaves.
    const leader = await findLeader(cell, live);
    const leaderId = (await listMembers(cell, leader)).find((m) => m.name === leader)?.id as number;
    live = [...live.filter((name) => name !== leader), spare];
    await change(cell, leader, 'DELETE', `/v1/cluster/members/${leaderId}`);
    const stoppedWith = await cell.cell.waitExit(leader, 15_000);
    mark(`leader ${leader} removed; its process stopped by itself (${String(stoppedWith)})`);
    const newLeader = await findLeader(cell, live);
    assert.notEqual(newLeader, leader);
    assert.deepEqual((await listMembers(cell, spare)).map((m) => `${m.name}:${m.role}`).sort(), live.map((n) => `${n}:voter`).sort());

    // An operator restarts the removed node on its data directory: it must never be ready, and
    // it stops by itself once the cell tells it it was removed.
    cell.cell.start(leader);
    const deadline = Date.now() + 15_000;
    while (cell.cell.isRunning(leader) && Date.now() < deadline) {
      const ready = await http(`${cell.cell.clientUrl(leader)}/readyz`, { timeoutMs: 1_000 }).catch(() => null);
      assert.notEqual(ready?.status, 200, `${leader}, removed, said it was ready on its old data directory`);
      await sleep(100);
    }
    assert.equal(cell.cell.isRunning(leader), false, `${leader}, removed, kept running on its old data directory`);
    assert.match(cell.cell.tail(leader, 40), /removed from the cell/);
    assert.ok(!(await listMembers(cell, spare)).some((m) => m.name === leader), `${leader} is not a member again`);
    mark(`${leader} restarted on its old data directory: refused and stopped`);

    // The new member sits behind the harness's proxies like the initial ones (the fault runner
    // partitions it): cut off, it serves no linearizable read while the others still commit.
    cell.isolate(spare);
    const others = live.filter((name) => name !== spare);
    await putSurely(`${cell.cell.clientUrl(others[0] as string)}/v1/kv/load/isolated`, 'y');
    let cutOff = false;
    for (let i = 0; i < 20 && !cutOff; i++) {
      const read = await http(`${cell.cell.clientUrl(spare)}/v1/kv/load/isolated`, { timeoutMs: 8_000 }).catch(() => null);
      cutOff = read === null || read.status === 503 || read.status === 504;
      if (!cutOff) await sleep(200);
    }
    assert.ok(cutOff, `${spare}, isolated, still served linearizable reads`);
    cell.healAll();
    mark(`${spare} isolated: no linearizable read there while ${others.join(', ')} committed`);

    await sleep(1_000);
    const acked = await load.stop();
    assert.ok(acked.size >= 10, `writes got through (${acked.size} keys)`);
    // Each key holds its last acknowledged value or a later write's (a write whose answer was
    // lost may still have committed); an earlier value would be a lost acknowledged write. Read
    // linearizably through each remaining member, and from each one's own state (serializable)
    // once it has applied the last write.
    const last = await putSurely(`${cell.cell.clientUrl(spare)}/v1/kv/load/last`, 'x');
    for (const name of live) {
      for (let i = 0; i < 50; i++) {
        const seen = await http(`${cell.cell.clientUrl(name)}/v1/kv/load/last?consistency=serializable`);
        if (seen.status === 200 && Number(seen.headers.get('baton-revision')) >= Number(last.revision)) break;
        await sleep(100);
      }
      for (const consistency of ['linearizable', 'serializable']) {
        for (const [key, n] of acked) {
          const read = await http(`${cell.cell.clientUrl(name)}/v1/kv${key}?consistency=${consistency}`);
          assert.equal(read.status, 200, `${name} ${key} (${consistency}): ${JSON.stringify(read.body)}`);
          const stored = Number(String(read.body.kvs[0].value).slice(1));
          assert.ok(stored >= n, `${name} ${key} (${consistency}): v${stored} is older than the acknowledged v${n}`);
        }
      }
    }
    mark(`${acked.size} keys read back from ${live.join(', ')}`);
  } finally {
    const stopping = load.stop();
    await cell.close();
    await stopping;
  }
});
