// Membership changes on real processes. A 3-node cell takes writes while a 4th node is added as
// a learner (it catches up by snapshot: the log is compacted every 50 entries), promoted, and
// the leader and another original voter are removed; every acknowledged write must then be
// readable from every remaining member, a removed node must not count toward quorum, and a
// restart of everyone keeps the membership. A member that was down through the change catches
// up by snapshot and knows the new member's URLs. Bad input, a second change while one is in
// flight, removing a voter while another is down and promoting a learner that lags are refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findLeader, http, listMembers, putSurely, sleep, startTestCell, type Member, type TestCell } from './harness.js';

function idOf(list: readonly Member[], name: string): number {
  const member = list.find((m) => m.name === name);
  assert.ok(member !== undefined, `${name} is in ${JSON.stringify(list)}`);
  return member.id;
}

/** Writes keys one after another until stopped; returns the acknowledged ones. */
function writeLoop(cell: TestCell, among: () => string[]): { stop(): Promise<Map<string, string>> } {
  const acked = new Map<string, string>();
  let stopping = false;
  const loop = (async () => {
    for (let n = 0; n < 100_000 && !stopping; n++) {
      const names = among();
      const name = names[n % names.length] as string;
      const key = `/load/k${n % 40}`;
      const value = `v${n}`;
      try {
        await putSurely(`${cell.cell.clientUrl(name)}/v1/kv${key}`, value, 40);
        acked.set(key, value);
      } catch {
        // that node is going away: the next write goes to another
      }
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

/** Waits for /readyz on `names`; a failure names what each said last and its log. */
async function ready(cell: TestCell, names: string[]): Promise<void> {
  try {
    await cell.cell.waitReady(45_000, names);
  } catch (error) {
    const states = await Promise.all(names.map(async (name) =>
      `${name}: ${JSON.stringify((await http(`${cell.cell.clientUrl(name)}/readyz`, { timeoutMs: 2000 }).catch(() => null))?.body)}\n` +
      cell.cell.tail(name, 30)));
    throw new Error(`${(error as Error).message}\n${states.join('\n')}`);
  }
}

async function promoteWhenCaughtUp(cell: TestCell, via: string, id: number): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const answer = await http(`${cell.cell.clientUrl(via)}/v1/cluster/members/${id}/promote`, { method: 'POST' });
    if (answer.status === 200) return;
    assert.equal(answer.status, 412, JSON.stringify(answer.body));
    if (Date.now() > deadline) assert.fail(`learner ${id} never caught up: ${JSON.stringify(answer.body)}`);
    await sleep(200);
  }
}

async function removeMember(cell: TestCell, via: string, id: number): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const answer = await http(`${cell.cell.clientUrl(via)}/v1/cluster/members/${id}`, { method: 'DELETE' });
    if (answer.status === 200) return;
    // Right after a change the new leader may not have applied it yet (change in progress).
    if (attempt > 40 || (answer.status !== 412 && answer.status !== 503)) assert.fail(JSON.stringify(answer.body));
    await sleep(250);
  }
}

test('members are added as learners, promoted and removed under a write load', { timeout: 180_000 }, async (t) => {
  const started = Date.now();
  const mark = (what: string): void => t.diagnostic(`${((Date.now() - started) / 1000).toFixed(1)} s: ${what}`);
  const cell = await startTestCell({ spares: 1, extraArgs: ['--log-catchup-entries', '50'] });
  let load: ReturnType<typeof writeLoop> | null = null;
  try {
    mark('cell ready');
    let live = ['n1', 'n2', 'n3'];
    load = writeLoop(cell, () => live);
    await sleep(1500);
    // Bad input: 400 with a message, from any member.
    for (const body of ['{}', '{"name":"x y","peerUrl":"http://127.0.0.1:1","clientUrl":"http://127.0.0.1:2"}',
      '{"name":"n9","peerUrl":"ftp://h:1","clientUrl":"http://127.0.0.1:2"}',
      '{"name":"n1","peerUrl":"http://127.0.0.1:1","clientUrl":"http://127.0.0.1:2"}',
      '{"name":"n9","peerUrl":"http://127.0.0.1:1","clientUrl":"http://127.0.0.1:2","extra":1}']) {
      const answer = await http(`${cell.cell.clientUrl('n2')}/v1/cluster/members`, { method: 'POST', body });
      assert.equal(answer.status, 400, `${body}: ${JSON.stringify(answer.body)}`);
      assert.equal(answer.body.error.code, 'invalid_argument');
    }
    assert.equal((await http(`${cell.cell.clientUrl('n1')}/v1/cluster/members/99`, { method: 'DELETE' })).status, 404);

    // A second change while one is in flight is refused. The followers are paused so the first
    // (an add) cannot commit while the others arrive: without that it can commit between two
    // requests and a later one is rightly accepted (a CI run saw 201, 201, 412).
    const leaderNow = await findLeader(cell);
    const ghost = (name: string, port: number): Promise<{ status: number; body: any }> =>
      http(`${cell.cell.clientUrl(leaderNow)}/v1/cluster/members`, {
        method: 'POST',
        body: JSON.stringify({ name, peerUrl: `http://127.0.0.1:${port}`, clientUrl: `http://127.0.0.1:${port + 1}` }),
      });
    const followers = live.filter((n) => n !== leaderNow);
    for (const name of followers) cell.cell.signal(name, 'SIGSTOP');
    let pending: Promise<{ status: number; body: any }>;
    let others: Array<{ status: number; body: any }>;
    try {
      pending = ghost('ghost1', 1);
      pending.catch(() => undefined); // awaited below; not unhandled if the others throw first
      await sleep(100);
      // Well inside the election timeout (1 s), so the leader is still the leader.
      others = await Promise.all([ghost('ghost2', 3), ghost('ghost3', 5)]);
    } finally {
      for (const name of followers) cell.cell.signal(name, 'SIGCONT');
    }
    const made = await pending;
    assert.equal(made.status, 201, JSON.stringify(made.body));
    for (const refused of others) {
      assert.equal(refused.status, 412, JSON.stringify(refused.body));
      assert.equal(refused.body.error.reason, 'change_in_progress');
    }
    const ghostId = made.body.member.id as number;
    await removeMember(cell, 'n2', ghostId);

    // With one voter down, removing another would leave no quorum in contact: refused.
    const [down, kept] = live.filter((n) => n !== leaderNow) as [string, string];
    live = live.filter((n) => n !== down);
    await cell.cell.kill9(down);
    for (let i = 0; i < 100; i++) {
      const status = await http(`${cell.cell.clientUrl(leaderNow)}/v1/cluster/status`);
      if (status.body.members.find((m: { name: string }) => m.name === down)?.healthy === false) break;
      await sleep(100);
    }
    const keptId = idOf(await listMembers(cell, leaderNow), kept);
    const unsafe = await http(`${cell.cell.clientUrl(leaderNow)}/v1/cluster/members/${keptId}`, { method: 'DELETE' });
    assert.equal(unsafe.status, 412, JSON.stringify(unsafe.body));
    assert.equal(unsafe.body.error.reason, 'unhealthy_cell');
    mark('checks of bad input, concurrent changes, an unsafe removal');

    // Enough writes that the log is compacted past where the down member stopped (and past the
    // start: n4 must catch up by snapshot).
    for (let i = 0; i < 120; i++) await putSurely(`${cell.cell.clientUrl(kept)}/v1/kv/fill/${i % 10}`, `f${i}`);
    // Add n4 as a learner through a follower (forwarded to the leader), then start it.
    const leader = await findLeader(cell);
    const follower = live.find((n) => n !== leader) as string;
    const add = await http(`${cell.cell.clientUrl(follower)}/v1/cluster/members`, {
      method: 'POST',
      body: JSON.stringify({ name: 'n4', peerUrl: cell.cell.peerUrl('n4'), clientUrl: cell.cell.clientUrl('n4') }),
    });
    assert.equal(add.status, 201, JSON.stringify(add.body));
    assert.equal(add.body.member.role, 'learner');
    assert.match(add.body.initialCluster, /n4=http/);
    const n4 = add.body.member.id as number;
    // One change at a time, and a learner that has not caught up (not even started) is not promoted.
    const early = await http(`${cell.cell.clientUrl(leader)}/v1/cluster/members/${n4}/promote`, { method: 'POST' });
    assert.equal(early.status, 412, JSON.stringify(early.body));
    assert.equal(early.body.error.reason, 'learner_not_in_sync');
    const status = await http(`${cell.cell.clientUrl(leader)}/v1/cluster/status`);
    assert.equal(status.body.members.find((m: Member) => m.id === n4)?.role, 'learner');

    cell.cell.start('n4', { join: true });
    await ready(cell, ['n4']);
    mark('n4 joined and ready');
    // The log was compacted long before: n4 caught up from a snapshot.
    assert.match(cell.cell.tail('n4', 200), /snapshot \d+ from member/);
    await promoteWhenCaughtUp(cell, follower, n4);
    mark('n4 promoted');
    assert.equal((await listMembers(cell, 'n4')).find((m) => m.id === n4)?.role, 'voter');

    // The member that was down through all of it catches up (usually by snapshot: the log is
    // compacted every 50 entries) and knows n4's URLs from the replicated member table.
    for (let i = 0; i < 60; i++) await putSurely(`${cell.cell.clientUrl('n4')}/v1/kv/more/${i % 10}`, `m${i}`);
    cell.cell.start(down);
    await ready(cell, [down]);
    const bySnapshot = /snapshot \d+ from member/.test(cell.cell.tail(down, 200));
    // Ready means applied up to the commit index it knows; a serializable read may still trail the
    // leader by what is on its way, so the member table is polled until it shows n4 (bounded).
    let n4Seen: (Member & { peerUrl: string; clientUrl: string }) | undefined;
    for (const until = Date.now() + 20_000; n4Seen === undefined && Date.now() < until; await sleep(200)) {
      const seen = await http(`${cell.cell.clientUrl(down)}/v1/cluster/members?consistency=serializable`);
      n4Seen = (seen.body.members as (Member & { peerUrl: string; clientUrl: string })[]).find((m) => m.id === n4);
    }
    assert.equal(n4Seen?.peerUrl, cell.cell.peerUrl('n4'));
    assert.equal(n4Seen?.clientUrl, cell.cell.clientUrl('n4'));
    live = ['n1', 'n2', 'n3', 'n4'];
    mark(`${down}, down since before the change, caught up (${bySnapshot ? 'by snapshot' : 'from the log'}) and knows n4`);

    // Remove the leader, then another original voter.
    const first = await findLeader(cell);
    const firstId = idOf(await listMembers(cell, 'n4'), first);
    live = live.filter((n) => n !== first);
    await removeMember(cell, 'n4', firstId);
    const second = live.find((n) => n !== 'n4') as string;
    const secondId = idOf(await listMembers(cell, 'n4'), second);
    live = live.filter((n) => n !== second);
    await removeMember(cell, 'n4', secondId);
    mark('two original voters removed');
    const remaining = await listMembers(cell, 'n4');
    assert.deepEqual(remaining.map((m) => m.name).sort(), [...live].sort());
    await sleep(1000);
    const acked = await load.stop();
    assert.ok(acked.size > 10, `writes got through (${acked.size})`);

    // Every acknowledged write is readable from every remaining member: each key holds its last
    // acknowledged value, or a later write's (the loop writes v<n> with n rising; a write whose
    // answer was lost, e.g. to a node being removed, may still have committed). An earlier value
    // would be a lost acknowledged write.
    const order = (value: string): number => Number(value.slice(1));
    for (const name of live) {
      for (const [key, value] of acked) {
        const read = await http(`${cell.cell.clientUrl(name)}/v1/kv${key}`);
        assert.equal(read.status, 200, `${name} ${key}`);
        const stored = read.body.kvs[0].value as string;
        assert.ok(order(stored) >= order(value), `${name} ${key}: ${stored} is older than the acknowledged ${value}`);
      }
    }

    mark(`${acked.size} keys read back from every member`);
    // The removed nodes no longer count: with them stopped, 2 of the 2 voters still commit;
    // with one of the two voters stopped, nothing commits (a removed node cannot make a quorum).
    await cell.cell.kill9(first);
    await cell.cell.kill9(second);
    await putSurely(`${cell.cell.clientUrl('n4')}/v1/kv/after/removal`, 'ok');

    mark('a write without the removed nodes');
    // Restart everyone: the membership persists.
    for (const name of live) await cell.cell.kill9(name);
    for (const name of live) cell.cell.start(name);
    await ready(cell, live);
    const after = await listMembers(cell, live[0] as string);
    assert.deepEqual(after.map((m) => `${m.name}:${m.role}`).sort(), live.map((n) => `${n}:voter`).sort());
    const read = await http(`${cell.cell.clientUrl(live[1] as string)}/v1/kv/after/removal`);
    assert.equal(read.body.kvs[0].value, 'ok');
    mark('restarted, membership kept');
    const other = live.find((n) => n !== 'n4') as string;
    await cell.cell.kill9(other);
    const stalled = await http(`${cell.cell.clientUrl('n4')}/v1/kv/after/quorum`, { method: 'PUT', body: 'x', timeoutMs: 8000 });
    assert.ok(stalled.status === 503 || stalled.status === 504, `no quorum without ${other}: ${stalled.status}`);
  } finally {
    // A failed assertion must not leave the write loop retrying against a closed cell (the test
    // process would never exit).
    const stopping = load?.stop();
    await cell.close();
    await stopping;
  }
});
