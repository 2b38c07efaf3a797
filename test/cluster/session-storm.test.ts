// A session storm on a real 3-process cell (docs/api/tenants.md "Session storms", issue #28):
// 2,000 clients (the client library's StreamConnection, one WebSocket each) keep 4,000 leases
// alive with batched keepalive frames; every connection is dropped at once and reconnects. Each
// node admits at most BATON_NEW_SESSIONS_PER_SECOND (here 50) stream opens a second and tells
// the rest staggered Retry-Afters, which the client honours (plus a draw within the second): the
// reconnections are spread over the guidance window (the table printed: reconnects per second),
// no second sees more than the nodes' rates allow, the leader stays leader in the same term, and
// not one lease expires. A TTL below the cell's minimum is still 400, never a 429 to retry.
// BATON_NEW_SESSIONS_PER_SECOND=0 in the environment runs it without the gate (it then fails the
// per-second bound: how its teeth were shown).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { StreamConnection, type StreamSubscriber } from '../../src/client/stream-connection.js';
import { EndpointSet } from '../../src/client/endpoints.js';
import { http, startTestCell, type TestCell } from './harness.js';

// The nodes inherit the environment: BATON_NEW_SESSIONS_PER_SECOND (default here 50) is the rate
// the expectations are computed from, and 0 (no gate) runs them against no gate. STORM_CLIENTS
// (default 2,000) sizes the storm: `STORM_CLIENTS=10000 BATON_NEW_SESSIONS_PER_SECOND=200` is the
// issue's 10,000-session run.
process.env['BATON_NEW_SESSIONS_PER_SECOND'] ??= '50';
const perSecondPerNode = Number(process.env['BATON_NEW_SESSIONS_PER_SECOND']);
const clients = Number(process.env['STORM_CLIENTS'] ?? 2_000);
const leasesPerClient = 2;
/** The window the nodes' rate needs to admit every client again (no gate: none). */
const windowMs = perSecondPerNode > 0 ? ((clients - 3 * perSecondPerNode) / (3 * perSecondPerNode)) * 1000 : 0;
// Longer than the guidance window (2,000 / 150 a second: ~13 s) plus a renewal interval, with room
// for a loaded machine: a well-behaved client's TTL outlasts the window it may be told to wait.
const ttlSeconds = Math.max(45, Math.ceil(windowMs / 1000) + 30);
/** How long every client may take to connect (at first, and after the drop). */
const connectMsMax = Math.max(60_000, windowMs * 2);

let cell: TestCell;
const urls = (): string[] => cell.cell.clientUrls();

before(async () => {
  cell = await startTestCell({ size: 3 });
}, { timeout: 120_000 });

after(async () => {
  await cell?.cell.stopAll();
});

/** Opening requests admitted and refused so far, summed over the members. */
async function sessionCounts(): Promise<{ admitted: number; refused: number }> {
  const counts = { admitted: 0, refused: 0 };
  for (const url of urls()) {
    const text = (await http(`${url}/metrics`)).body as string;
    for (const outcome of ['admitted', 'refused'] as const) {
      const line = text.split('\n').find((l) => l.startsWith(`baton_new_sessions_total{outcome="${outcome}"}`));
      counts[outcome] += Number(line?.split(' ')[1] ?? 0);
    }
  }
  return counts;
}

async function status(url: string): Promise<{ leader: number; term: number }> {
  const answer = await http(`${url}/v1/cluster/status`);
  assert.equal(answer.status, 200);
  return { leader: answer.body.leader as number, term: answer.body.term as number };
}

/** Grants `count` leases in batches (a batch is one opening request); retries a 429 as told. */
async function grantLeases(count: number): Promise<number[]> {
  const ids: number[] = [];
  while (ids.length < count) {
    const answer = await http(`${urls()[0] as string}/v1/leases/batch`, { method: 'POST', body: JSON.stringify({ ttl: ttlSeconds, count: Math.min(1000, count - ids.length) }) });
    if (answer.status === 429) {
      await new Promise((resolve) => setTimeout(resolve, Number(answer.headers.get('retry-after') ?? 1) * 1000));
      continue;
    }
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    for (const lease of answer.body.leases as Array<{ id: number }>) ids.push(lease.id);
  }
  return ids;
}

test(`${clients.toLocaleString('en')} stream clients dropped at once reconnect spread over the guidance window; the leader and every lease survive`, { timeout: 240_000 + connectMsMax * 2 }, async () => {
  // A TTL below the minimum is refused as bad input, storm or not.
  const short = await http(`${urls()[0] as string}/v1/leases`, { method: 'POST', body: JSON.stringify({ ttl: 1 }) });
  assert.equal(short.status, 400, JSON.stringify(short.body));

  const ids = await grantLeases(clients * leasesPerClient);
  const before = await status(urls()[0] as string);
  const opens: number[] = [];
  const connections: StreamConnection[] = [];
  for (let i = 0; i < clients; i++) {
    const connection = new StreamConnection(new EndpointSet(urls(), Math.random), Math.random);
    const subscriber: StreamSubscriber = { onFrame: () => {}, onConnected: () => void opens.push(performance.now()), onDisconnected: () => {} };
    connection.subscribe(`storm-${i}`, subscriber);
    connections.push(connection);
  }
  const expired: number[] = [];
  let countsBefore = { admitted: 0, refused: 0 };
  let countsAfter = countsBefore;
  const failures: string[] = [];
  let stopping = false;
  // Each client renews its two leases in one frame every 3 s (well under the TTL).
  const renewals = connections.map(async (connection, i) => {
    const mine = ids.slice(i * leasesPerClient, (i + 1) * leasesPerClient);
    await new Promise((resolve) => setTimeout(resolve, Math.random() * 3_000));
    while (!stopping) {
      try {
        const result = await connection.request({ type: 'keepalive', ids: mine }, 10_000) as { leases: Array<{ id: number; error?: string }> };
        for (const lease of result.leases) if (lease.error !== undefined) expired.push(lease.id);
      } catch (error) {
        failures.push(String(error));
      }
      await new Promise((resolve) => setTimeout(resolve, 3_000));
    }
  });
  try {
    const waitAllOpen = async (from: number, limitMs: number): Promise<void> => {
      const deadline = performance.now() + limitMs;
      while (connections.some((c) => !c.connected) || opens.length - from < clients) {
        assert.ok(performance.now() < deadline, `only ${opens.length - from} of ${clients} connected`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };
    await waitAllOpen(0, connectMsMax);
    await new Promise((resolve) => setTimeout(resolve, 4_000));

    // The storm: every connection dropped at the same moment (a network recovery).
    countsBefore = await sessionCounts();
    const droppedAt = performance.now();
    const openedBefore = opens.length;
    for (const connection of connections) (connection as unknown as { socket: { terminate(): void } }).socket.terminate();
    await waitAllOpen(openedBefore, connectMsMax);
    const reopened = opens.slice(openedBefore).map((at) => at - droppedAt);
    const perSecond: number[] = Array.from({ length: Math.floor(Math.max(...reopened) / 1000) + 1 }, () => 0);
    for (const at of reopened) perSecond[Math.floor(at / 1000)] = (perSecond[Math.floor(at / 1000)] as number) + 1;
    const table = perSecond.map((count, second) => `  ${second}-${second + 1} s: ${count}`).join('\n');
    countsAfter = await sessionCounts();
    console.log(`reconnects per second after the drop (${clients} clients, ${perSecondPerNode}/s per node x 3; first after ${Math.min(...reopened).toFixed(0)} ms, ` +
      `last after ${Math.max(...reopened).toFixed(0)} ms; opens admitted ${countsAfter.admitted - countsBefore.admitted}, refused with guidance ${countsAfter.refused - countsBefore.refused}):\n${table}`);
    // Keep renewing a while after the storm, then stop and check.
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    stopping = true;
    await Promise.all(renewals);

    const after = await status(urls()[0] as string);
    assert.deepEqual(after, before, 'the leader stays leader, in the same term');
    // The nodes admit at most their rate (plus one second's bucket each): the reconnections take at
    // least the window that rate needs. Without the gate they all land within the client's own
    // speed (a few seconds here). The table above is measured at the client, whose event loop on a
    // loaded machine handles opens in bursts, so its seconds are reported, not asserted.
    const spreadMs = Math.max(...reopened) - Math.min(...reopened);
    const neededMs = perSecondPerNode > 0 ? windowMs : Infinity;
    assert.ok(spreadMs >= neededMs * 0.9, `reconnections spread over ${spreadMs.toFixed(0)} ms, the rate needs ${neededMs.toFixed(0)} ms`);
    assert.ok(countsAfter.refused - countsBefore.refused > 0, 'opens past the rate were refused with guidance');
    assert.deepEqual(expired, [], 'no well-behaved lease expired');
    // Every lease is still there (renewed over HTTP too, in batches of 1,000).
    for (let i = 0; i < ids.length; i += 1000) {
      const answer = await http(`${urls()[1]}/v1/leases/keepalive`, { method: 'POST', body: JSON.stringify({ ids: ids.slice(i, i + 1000) }) });
      assert.equal(answer.status, 200);
      const lost = (answer.body.leases as Array<{ id: number; error?: string }>).filter((l) => l.error !== undefined);
      assert.deepEqual(lost, []);
    }
    console.log(`keepalive frames that failed (connection dropped under them, retried): ${failures.length}`);
  } finally {
    stopping = true;
    for (const connection of connections) connection.close();
  }
});
