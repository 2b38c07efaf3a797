// A graceful stop (issue 30: "handles SIGTERM as a graceful stop: it transfers leadership away first
// when it leads, finishes in-flight requests, closes streams with a resumable error, and exits within
// a bound"). SIGTERM to the leader of a 3-process cell under a write load: another member leads
// after one election (term + 1) without waiting out an election timeout, the process exits 0
// within the bound, a watch on it ends with `unavailable` and the revision to resume from, and
// every write the clients sent succeeds (after the client's retries on another member).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { BatonClient } from '../../src/client/index.js';
import { findLeader, http, sleep, startTestCell, type TestCell } from './harness.js';

let cell: TestCell;

before(async () => {
  // Election timeout 10-20 ticks of 100 ms: 1-2 s, so a stop that waited for an election shows.
  cell = await startTestCell({ extraArgs: ['--tick-ms', '100'] });
});

after(async () => {
  await cell?.close();
});

async function statusOf(name: string): Promise<{ leader: number; term: number; members: { id: number; name: string }[] }> {
  return (await http(`${cell.cell.clientUrl(name)}/v1/cluster/status`, { timeoutMs: 1000 })).body;
}

test('SIGTERM to the leader hands leadership over first, answers what is in flight, and exits 0', async () => {
  const leader = await findLeader(cell);
  const others = cell.names.filter((name) => name !== leader);
  const before = await statusOf(others[0]!);

  // A watch on the leader: it must end resumably (unavailable + lastRevision), not just drop.
  const watch = await fetch(`${cell.cell.clientUrl(leader)}/v1/watch?key=/graceful/&prefix=true`);
  assert.equal(watch.status, 200);
  const watchText = watch.text();

  // Writers through every member, the leader included, until the stop is over.
  const client = new BatonClient({ endpoints: cell.cell.clientUrls() });
  let stopping = false;
  let written = 0;
  const failures: string[] = [];
  const writers = Array.from({ length: 4 }, async (_, w) => {
    for (let i = 0; !stopping && i < 10_000; i++) {
      try {
        await client.put(`/graceful/${w}/${i}`, 'v');
        written++;
      } catch (error) {
        failures.push(`${w}/${i}: ${(error as Error).message}`);
      }
    }
  });
  await sleep(500);

  const signalledAt = performance.now();
  cell.cell.signal(leader, 'SIGTERM');
  // Another member leads soon after: a transfer, not an election timeout (1-2 s here).
  let newLeaderAt = Number.POSITIVE_INFINITY;
  let after = before;
  while (performance.now() - signalledAt < 5_000) {
    after = await statusOf(others[0]!).catch(() => after);
    const leaderName = after.members.find((member) => member.id === after.leader)?.name;
    if (after.leader > 0 && leaderName !== leader) {
      newLeaderAt = performance.now();
      break;
    }
    await sleep(10);
  }
  const code = await cell.cell.waitExit(leader, 40_000);
  const exitedAt = performance.now();
  stopping = true;
  await Promise.all(writers);
  await client.close();

  assert.equal(code, 0, `the stopped leader exited with ${code}: ${cell.cell.tail(leader)}`);
  assert.ok(newLeaderAt - signalledAt < 900, `a new leader after ${Math.round(newLeaderAt - signalledAt)} ms (an election timeout is 1-2 s)`);
  assert.equal(after.term, before.term + 1, 'one election: the transfer');
  assert.ok(exitedAt - signalledAt < 10_000, `exited ${Math.round(exitedAt - signalledAt)} ms after SIGTERM`);
  assert.match(cell.cell.tail(leader, 200), /stopping: handing leadership to member/);
  assert.deepEqual(failures, [], 'every write succeeded (the client retries on another member)');
  assert.ok(written > 0);

  const ended = await watchText;
  assert.match(ended, /"code":"unavailable"/, `the watch ended resumably: ${ended.slice(-300)}`);
  assert.match(ended, /"lastRevision":\d+/);

  // The cell goes on with two members, and the stopped one rejoins.
  const put = await http(`${cell.cell.clientUrl(others[0]!)}/v1/kv/graceful/after`, { method: 'PUT', body: 'x' });
  assert.ok(put.status === 200 || put.status === 201, JSON.stringify(put.body));
  cell.cell.start(leader);
  await cell.cell.waitReady(30_000);
});

test('SIGTERM to a follower stops it without an election', async () => {
  const leader = await findLeader(cell);
  const follower = cell.names.find((name) => name !== leader)!;
  const before = await statusOf(leader);
  cell.cell.signal(follower, 'SIGTERM');
  assert.equal(await cell.cell.waitExit(follower, 20_000), 0);
  const after = await statusOf(leader);
  assert.equal(after.leader, before.leader);
  assert.equal(after.term, before.term);
  cell.cell.start(follower);
  await cell.cell.waitReady(30_000);
});

test('SIGTERM to every member at once (a whole cell shut down): the leader does not wait out a hand-off to a member that is stopping too', async () => {
  const leader = await findLeader(cell);
  const startedAt = Date.now();
  for (const name of cell.names) cell.cell.signal(name, 'SIGTERM');
  for (const name of cell.names) assert.equal(await cell.cell.waitExit(name, 20_000), 0, `${name} exits 0`);
  const tookMs = Date.now() - startedAt;
  const said = cell.cell.tail(leader, 40);
  assert.doesNotMatch(said, /no member took over leadership within/, 'the leader waited out the transfer');
  assert.match(said, /went away before taking over|member \d+ leads|no other voter in contact/);
  console.log(`every member exited ${tookMs} ms after SIGTERM; the leader said: ${said.split('\n').filter((line) => line.includes('stopping')).join(' | ')}`);
});
