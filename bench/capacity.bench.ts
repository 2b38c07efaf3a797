// `npm run bench:capacity` (issue 31): the brief's populations on one real 3-process cell, scaled
// to what the machine holds (docs/capacity.md turns the per-item costs into the brief's sizes,
// labelled as extrapolations). Three runs, one after the other on the same cell:
//   1. sessions: --sessions leases granted in batches of 1,000 (POST /v1/leases/batch), each with
//      one ephemeral ~100-byte key (a service registration; stream `txn` frames of 100 puts, each
//      with its own lease),
//      renewed every --period-ms over one WebSocket per --per-stream sessions (one keepalive frame
//      of all its leases each period, staggered) for --duration-s: renewals/s, frame latency,
//      sessions lost (a lease_not_found answer, a lease or key missing at the end), CPU of the
//      leader, the cell and this client, RSS and JS heap per member and bytes per session. A
//      workload of 8 closed-loop put clients and 8 lock clients (acquire + release of its own lock
//      with its own lease) runs alongside in windows of one period with renewals on and off
//      alternately (each session renewed every two periods, under the TTL; the same sessions
//      held): put and lock-pair p99 with / without (and without any sessions, before the grants).
//   2. session loss: --loss-share of the streams stop renewing at once; a watcher on a follower
//      sees the keys' deletions: time from each lease's deadline (its last renewal + TTL) to its
//      deletion seen (p50/p99/max), the revocation rate, the time until every deletion was seen;
//      the other sessions lose nothing and the leader does not change. Then the lost sessions come
//      back at once (a storm: grants in batches and their keys): its time.
//   3. watches: --watches idle watches over the members (1,000 per connection; exact keys, every
//      10th a prefix watch with prevKv): RSS and heap per watcher on the node that holds them; then
//      --watch-puts-per-s puts on watched keys for --duration-s: events/s, latency from the put's
//      answer (committed and applied on the leader) to the event at the watcher (p50/p99), and
//      every exact-key watcher's events checked against the puts acknowledged for its key (no gap,
//      no duplicate, in order). The write time is two halves: the watchers alone, then with a slow
//      consumer on every member (a connection holding 10 prefix watches with prevKv over every
//      watched key that stops reading its socket): the others' p99 in each half, and how many
//      watchers the nodes ended as slow consumers.
// --baton-dist DIR runs the cell from another build (DIR/dist), the same client: same-run A/Bs.
// --profile keeps a CPU profile of the leader over the first renewals-on and -off windows.
// --runs picks which of them run (default steady,loss,watches; `--runs loss` grants the sessions,
// attaches their keys and goes straight to run 2, e.g. `--sessions 200000 --loss-share 0.5` for
// 100,000 sessions lost at once). During run 2, 8 closed-loop put clients on the leader measure
// what the expiry wave costs other writes (a stalled leader shows as their p99 and max).
// The peak mixed operations (the brief's run 4) are `npm run bench:peak`. Progress on stderr;
// --json FILE.
//
//   npm run bench:capacity                                        100,000 sessions, 100,000 watches
//   npm run bench:capacity -- --sessions 200000 --watches 300000 --duration-s 300
import { rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Agent } from 'node:http';
import { cpuSeconds, findPids } from '../src/bench/proc-cpu.js';
import { InspectorSession } from '../src/bench/inspector.js';
import { summarizeCpuProfile } from '../src/bench/cpu-profile.js';
import { LatencyHistogram, type HistogramSummary } from '../src/bench/histogram.js';
import { pool, StreamClient } from '../src/bench/stream-client.js';
import { httpJson as sharedHttpJson, rssAnonKiB, startInspectableCell } from '../src/bench/inspectable-cell.js';

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    sessions: { type: 'string' },
    watches: { type: 'string' },
    'duration-s': { type: 'string' },
    'period-ms': { type: 'string' },
    'ttl-s': { type: 'string' },
    'per-stream': { type: 'string' },
    'loss-share': { type: 'string' },
    'watch-puts-per-s': { type: 'string' },
    runs: { type: 'string' },
    json: { type: 'string' },
    profile: { type: 'boolean' },
    'baton-dist': { type: 'string' },
  },
  strict: true,
});
const sessions = Number(values.sessions ?? 100_000);
const watches = Number(values.watches ?? 100_000);
const durationS = Number(values['duration-s'] ?? 60);
const periodMs = Number(values['period-ms'] ?? 10_000);
const ttlS = Number(values['ttl-s'] ?? 30);
const perStream = Number(values['per-stream'] ?? 1_000);
const lossShare = Number(values['loss-share'] ?? 0.1);
const watchPutsPerS = Number(values['watch-puts-per-s'] ?? 1_000);
const runs = new Set((values.runs ?? 'steady,loss,watches').split(','));
for (const run of runs) if (!['steady', 'loss', 'watches'].includes(run)) throw new Error(`--runs: unknown run ${run} (steady, loss, watches)`);
// Windows with renewals on and off alternate every period: a stream's slot falls in every other
// window, so each session is renewed every two periods (under the TTL) and an on window carries
// the full offered rate.
const alternateMs = periodMs;
const watchesPerConnection = 1_000;
for (const [name, value] of Object.entries({ sessions, watches, durationS, periodMs, ttlS, perStream, watchPutsPerS })) {
  if (!(Number.isInteger(value) && value > 0)) throw new Error(`--${name} takes a positive integer`);
}
if (!(perStream <= 1_000 && sessions % perStream === 0)) throw new Error('--per-stream is at most 1,000 and divides --sessions');
if (!(ttlS * 1000 > 2 * periodMs)) throw new Error('--ttl-s must be over two renewal periods');
if (!(lossShare > 0 && lossShare < 1)) throw new Error('--loss-share is between 0 and 1');

const log = (line: string): void => void process.stderr.write(`${line}\n`);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const load = (): string => loadavg().map((l) => l.toFixed(1)).join(' ');
const ms = (us: number): string => (us / 1000).toFixed(1);
const report: Record<string, unknown> = { sessions, watches, durationS, periodMs, ttlS, perStream };

/** The capacity bench's calls wait up to 30 s (batches of 1,000 grants on a loaded cell). */
function httpJson(agent: Agent, base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  return sharedHttpJson(agent, base, method, path, body, headers, 30_000);
}

async function grantBatches(agent: Agent, bases: readonly string[], count: number, tag: string): Promise<number[]> {
  const ids: number[] = [];
  await pool(Math.ceil(count / 1000), 2 * bases.length, async (b) => {
    const size = Math.min(1000, count - b * 1000);
    for (let attempt = 1; ; attempt++) {
      const res = await httpJson(agent, bases[b % bases.length] as string, 'POST', '/v1/leases/batch', { ttl: ttlS, count: size },
        { 'request-id': `${tag}-${b}`, 'content-type': 'application/json' }).catch((error: Error) => ({ status: 0, body: error.message }));
      if (res.status === 200 && (res.body.leases as { id?: number }[]).every((l) => l.id !== undefined)) {
        for (const lease of res.body.leases as { id: number }[]) ids.push(lease.id);
        return;
      }
      if (attempt >= 10) throw new Error(`batch grant: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
      await sleep(200 * attempt);
    }
  });
  return ids.sort((a, b) => a - b);
}

const registration = (id: number): string => JSON.stringify({ addr: `10.0.${(id >> 8) & 255}.${id & 255}:8080`, zone: 'z1', started: 1_700_000_000 }).padEnd(100, ' ');

/**
 * Puts each session's key (`/svc/<id>`) with its lease: 100 sessions' keys per transaction (one
 * revision, one log entry; each key still goes with its own lease), 2 in flight per stream; a shed
 * one is sent again.
 */
async function attachKeys(streams: readonly StreamClient[], groups: readonly (readonly number[])[]): Promise<number[]> {
  const perTxn = 100;
  const lost: number[] = [];
  await Promise.all(groups.map((ids, s) => pool(Math.ceil(ids.length / perTxn), 2, async (t) => {
    const mine = ids.slice(t * perTxn, (t + 1) * perTxn);
    for (let attempt = 1; ; attempt++) {
      const success = mine.map((id) => ({ put: { key: `/svc/${id}`, value: registration(id), lease: id } }));
      // A shed or timed-out transaction is sent again with its requestId (applied once); one
      // without a lease that expired first is a new request.
      const requestId = `keys-${ids[0]}-${t}-${ids.slice(t * perTxn, (t + 1) * perTxn).length - mine.length}`;
      try {
        if (mine.length === 0) return;
        const result = await (streams[s] as StreamClient).call({ type: 'txn', compare: [], success, failure: [], requestId });
        if (result.succeeded !== true) throw new Error(`attaching keys: ${JSON.stringify(result).slice(0, 200)}`);
        return;
      } catch (error) {
        // A session that expired before its key was attached is lost (counted); the rest go on.
        const gone = /"code":"lease_not_found".*"id":(\d+)/.exec(String(error));
        if (gone !== null && mine.includes(Number(gone[1]))) {
          lost.push(Number(gone[1]));
          mine.splice(mine.indexOf(Number(gone[1])), 1);
          continue;
        }
        // Up to about a minute: a leader change under this load can take several seconds to settle.
        if (attempt >= 40 || !/overloaded|unavailable|timeout/.test(String(error))) throw error;
        await sleep(Math.min(2_000, 100 * attempt));
      }
    }
  })));
  return lost;
}

interface Members {
  readonly names: readonly string[];
  readonly pids: Map<string, number>;
  readonly inspectors: Map<string, InspectorSession>;
}

async function memory(members: Members): Promise<Map<string, { rssKiB: number; heap: number }>> {
  const out = new Map<string, { rssKiB: number; heap: number }>();
  for (const name of members.names) {
    const heap = await (members.inspectors.get(name) as InspectorSession).heapUsedAfterGc();
    out.set(name, { rssKiB: rssAnonKiB(members.pids.get(name) as number), heap });
  }
  return out;
}

function perItem(before: Map<string, { rssKiB: number; heap: number }>, after: Map<string, { rssKiB: number; heap: number }>, name: string, items: number): { rss: number; heap: number } {
  const b = before.get(name) as { rssKiB: number; heap: number };
  const a = after.get(name) as { rssKiB: number; heap: number };
  return { rss: ((a.rssKiB - b.rssKiB) * 1024) / items, heap: (a.heap - b.heap) / items };
}

/** 8 closed-loop put clients on the leader; each put goes to the histogram `pick()` names. */
function putLoad(base: string, pick: () => LatencyHistogram | null): { stop: () => Promise<void> } {
  const agent = new Agent({ keepAlive: true, maxSockets: 8 });
  let running = true;
  const value = 'v'.repeat(256);
  const loops = Array.from({ length: 8 }, async (_, c) => {
    for (let n = 0; running; n++) {
      const target = pick();
      const started = performance.now();
      const res = await httpJson(agent, base, 'PUT', `/v1/kv/bench/put/${c}-${n % 500}`, value).catch(() => null);
      if (res?.status === 200 || res?.status === 201) target?.record((performance.now() - started) * 1000);
      else await sleep(10);
    }
  });
  return { stop: async () => { running = false; await Promise.all(loops); agent.destroy(); } };
}

/**
 * The lock clients' leases, granted once before anything else (a cell holds at most
 * BATON_LEASES_MAX leases: the sessions may fill it) and renewed every 10 s (TTL 60) until `stop`.
 */
async function lockLeases(base: string, count: number): Promise<{ ids: number[]; stop: () => void }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 2 });
  const ids: number[] = [];
  for (let c = 0; c < count; c++) {
    const res = await httpJson(agent, base, 'POST', '/v1/leases', { ttl: 60 });
    if (res.status !== 200) throw new Error(`lock load: lease grant ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
    ids.push(res.body.id as number);
  }
  const renew = setInterval(() => void httpJson(agent, base, 'POST', '/v1/leases/keepalive', { ids }).catch(() => undefined), 10_000);
  return { ids, stop: () => { clearInterval(renew); agent.destroy(); } };
}

/**
 * Closed-loop lock clients on the leader, one per lease, each with its own lock: acquire, then
 * release, timed as one pair (two committed commands). A refused or lost lock is counted (a
 * client must never be told `lock_held` here: each lock has one contender).
 */
function lockLoad(base: string, pick: () => LatencyHistogram | null, leases: readonly number[]): { stop: () => Promise<{ failures: number }> } {
  const agent = new Agent({ keepAlive: true, maxSockets: leases.length });
  let running = true;
  let failures = 0;
  const loops = leases.map(async (lease, c) => {
    while (running) {
      const target = pick();
      const started = performance.now();
      const acquired = await httpJson(agent, base, 'POST', `/v1/locks/cap-${c}/acquire`, { lease, owner: `cap-${c}`, waitMs: 5_000 }).catch(() => null);
      if (acquired?.status !== 200) {
        failures++;
        await sleep(10);
        continue;
      }
      const released = await httpJson(agent, base, 'POST', `/v1/locks/cap-${c}/release`, { key: acquired.body.key }).catch(() => null);
      if (released?.status === 200) target?.record((performance.now() - started) * 1000);
      else {
        failures++;
        await sleep(10);
      }
    }
  });
  return { stop: async () => { running = false; await Promise.all(loops); agent.destroy(); return { failures }; } };
}

/** The put and lock loads together, each into its own histogram of the window `pick()` names. */
interface Workload { puts: LatencyHistogram; locks: LatencyHistogram }
function workload(base: string, pick: () => Workload | null, leases: readonly number[]): { stop: () => Promise<{ lockFailures: number }> } {
  const puts = putLoad(base, () => pick()?.puts ?? null);
  const locks = lockLoad(base, () => pick()?.locks ?? null, leases);
  return { stop: async () => { await puts.stop(); return { lockFailures: (await locks.stop()).failures }; } };
}
const newWorkload = (): Workload => ({ puts: new LatencyHistogram(), locks: new LatencyHistogram() });

const summary = (h: LatencyHistogram): HistogramSummary => h.summary();

/** The leader's count of leases it revoked because their TTL ran out (its /metrics). */
async function expiredTotal(agent: Agent, base: string): Promise<number> {
  const res = await httpJson(agent, base, 'GET', '/metrics');
  const match = /^etcd_debugging_server_lease_expired_total(?:\{[^}]*\})? (\d+)/m.exec(String(res.body));
  return match === null ? Number.NaN : Number(match[1]);
}

/** Keeps a CPU profile of the leader in tmpdir and prints its top rows (self time). */
function logProfile(profile: unknown, phase: string): void {
  const kept = join(tmpdir(), `baton-capacity-leader-${phase.replace(/\W+/g, '-')}-${Date.now()}.cpuprofile`);
  writeFileSync(kept, JSON.stringify(profile));
  const summary = summarizeCpuProfile(profile as Parameters<typeof summarizeCpuProfile>[0], '', 25);
  log(`  leader profile, ${phase} (${(summary.durationMs / 1000).toFixed(1)} s, idle ${summary.idlePercent.toFixed(1)}%), kept at ${kept}:`);
  for (const row of summary.rows) log(`    ${row.busyPercent.toFixed(1).padStart(5)}%  ${row.name}  ${row.location}`);
}

/** A histogram's cumulative bucket counts on the leader's /metrics, by upper bound ("+Inf" last). */
async function leaderHistogram(agent: Agent, base: string, name: string): Promise<Map<string, number>> {
  const res = await httpJson(agent, base, 'GET', '/metrics');
  const buckets = new Map<string, number>();
  const pattern = new RegExp(`^${name}_bucket\\{le="([^"]+)"\\} (\\d+)`, 'gm');
  for (const match of String(res.body).matchAll(pattern)) buckets.set(match[1] as string, Number(match[2]));
  return buckets;
}

/** What fell in each bucket between two reads of one histogram: "le=count" for non-empty buckets. */
function bucketDiff(before: Map<string, number>, after: Map<string, number>): string {
  const rows: string[] = [];
  let previous = 0;
  for (const [le, cumulative] of after) {
    const here = cumulative - (before.get(le) ?? 0);
    if (here - previous > 0) rows.push(`<=${le}: ${here - previous}`);
    previous = here;
  }
  return rows.join(', ');
}

/** Watchers the nodes ended as slow consumers so far (each member's /metrics, summed). */
async function slowConsumerEnds(agent: Agent, bases: readonly string[]): Promise<number> {
  let total = 0;
  for (const base of bases) {
    const res = await httpJson(agent, base, 'GET', '/metrics');
    const match = /^baton_watch_ended_total\{reason="slow_consumer"\} (\d+)/m.exec(String(res.body));
    total += match === null ? 0 : Number(match[1]);
  }
  return total;
}

async function main(): Promise<void> {
  // A cell holds at most BATON_LEASES_MAX leases (1,000,000 by default): room for the sessions,
  // the storm's and the lock clients' (the members inherit this environment).
  if (process.env['BATON_LEASES_MAX'] === undefined && sessions > 900_000) process.env['BATON_LEASES_MAX'] = String(sessions + 100_000);
  // Likewise a node serves at most BATON_WATCH_PER_NODE_MAX watchers (250,000 by default); the
  // watches are spread over the three members.
  if (process.env['BATON_WATCH_PER_NODE_MAX'] === undefined && watches > 700_000) process.env['BATON_WATCH_PER_NODE_MAX'] = String(Math.ceil(watches / 3) + 10_000);
  const otherDist = values['baton-dist'];
  const { cell, dataDir, names, inspectPort } = await startInspectableCell('baton-capacity-',
    otherDist === undefined ? undefined : join(resolve(otherDist), 'dist', 'src', 'cli', 'main.js'));
  const opened: StreamClient[] = [];
  try {
    await cell.waitReady(60_000);
    const agent = new Agent({ keepAlive: true, maxSockets: 64 });
    // The leader, found again before each phase (a leader change under load moves the workload
    // and the per-leader figures with it; each change is logged and reported).
    const leaderChanges: string[] = [];
    let leaderName = '';
    let followerName = '';
    let leaderPid = 0;
    const findLeader = async (phase: string): Promise<void> => {
      let leader = 0;
      for (let i = 0; i < 100 && leader === 0; i++) {
        leader = (await httpJson(agent, cell.clientUrl('n1'), 'GET', '/v1/cluster/status').catch(() => ({ body: { leader: 0 } }))).body.leader as number;
        if (leader === 0) await sleep(100);
      }
      if (leaderName !== '' && leaderName !== `n${leader}`) {
        leaderChanges.push(`${phase}: ${leaderName} -> n${leader}`);
        log(`the leader changed before ${phase}: ${leaderName} -> n${leader}`);
      }
      leaderName = `n${leader}`;
      followerName = names.find((n) => n !== leaderName) as string;
      leaderPid = members?.pids.get(leaderName) ?? 0;
    };
    let members: Members | undefined;
    await findLeader('the start');
    members = {
      names,
      pids: new Map(names.map((name) => [name, findPids(join(dataDir, name))[0] as number])),
      inspectors: new Map(await Promise.all(names.map(async (name) => [name, await InspectorSession.connect('127.0.0.1', inspectPort(name))] as const))),
    };
    const cellPids = [...members.pids.values()];
    leaderPid = members.pids.get(leaderName) as number;
    const bases = cell.clientUrls();
    log(`cell up, leader ${leaderName}; ${sessions} sessions (${sessions / perStream} streams x ${perStream}, every ${periodMs} ms, TTL ${ttlS} s), ` +
      `${watches} watches; load ${load()}`);

    // The put and lock workload before any session exists: "without the sessions" (minutes before
    // the windows it is compared to; the interleaved windows below compare within one phase).
    const lockClients = await lockLeases(cell.clientUrl(leaderName), 8);
    const noSessions = newWorkload();
    const baseline = workload(cell.clientUrl(leaderName), () => noSessions, lockClients.ids);
    await sleep(runs.has('steady') ? Math.min(durationS / 2, 60) * 1000 : 5_000);
    const baselineLockFailures = (await baseline.stop()).lockFailures;
    log(`without sessions: puts ${noSessions.puts.count}, p50 ${ms(summary(noSessions.puts).p50Us)} ms, p99 ${ms(summary(noSessions.puts).p99Us)} ms; ` +
      `lock acquire+release pairs ${noSessions.locks.count}, p50 ${ms(summary(noSessions.locks).p50Us)} ms, p99 ${ms(summary(noSessions.locks).p99Us)} ms ` +
      `(${baselineLockFailures} failed)`);

    // --- run 1: sessions --------------------------------------------------------------------
    const memBefore = await memory(members);
    const grantStarted = performance.now();
    const ids = await grantBatches(agent, bases, sessions, 'cap');
    const grantS = (performance.now() - grantStarted) / 1000;
    const streamCount = sessions / perStream;
    const groups = Array.from({ length: streamCount }, (_, s) => ids.slice(s * perStream, (s + 1) * perStream));
    const streams: StreamClient[] = [];
    for (let s = 0; s < streamCount; s++) streams.push(await StreamClient.open(bases[s % bases.length] as string));
    opened.push(...streams);
    const lastRenewedMs = new Float64Array(ids.length);
    const indexOf = new Map(ids.map((id, i) => [id, i]));
    let frames = new LatencyHistogram();
    const state = { renewing: true, running: true, renewed: 0, failedFrames: 0 };
    const lostSessions = new Set<number>(); // lease_not_found answers and keys not attached
    const stopped = new Set<number>(); // streams that stopped renewing (run 2)
    const renewers = streams.map(async (stream, s) => {
      const mine = groups[s] as number[];
      // Each stream keeps its slot (s/streamCount of the period) for the whole run. A late answer or
      // a failure renews at once or 500 ms later but never moves the slot: moved, the streams one
      // slow round answered together would renew together from then on (clumps of hundreds of
      // frames, seen after the keys' attach phase, that a steady population does not send).
      let next = performance.now() + (s / streamCount) * periodMs;
      let retryAtMs = -1;
      while (state.running) {
        const retrying = retryAtMs >= 0;
        await sleep(Math.max(0, (retrying ? retryAtMs : next) - performance.now()));
        retryAtMs = -1;
        if (!retrying) next += periodMs;
        if (!state.running || stopped.has(s) || !state.renewing) continue;
        const sent = performance.now();
        try {
          const result = await stream.call({ type: 'keepalive', ids: mine });
          const now = performance.now();
          frames.record((now - sent) * 1000);
          for (const item of result.leases as { id: number; ttl?: number }[]) {
            if (item.ttl === undefined) lostSessions.add(item.id);
            else {
              state.renewed++;
              lastRenewedMs[indexOf.get(item.id) as number] = sent;
            }
          }
        } catch {
          // Shed (overloaded) or cut: renew again soon, not a period later (the TTL runs).
          state.failedFrames++;
          retryAtMs = performance.now() + 500;
          continue;
        }
        // Answered more than a period late: one renewal at once, then the slot again.
        while (next + periodMs < performance.now()) next += periodMs;
      }
    });
    // Keys are attached while the sessions are already renewed (attaching can take longer than a TTL).
    const keysStarted = performance.now();
    const lostAttaching = await attachKeys(streams, groups);
    for (const id of lostAttaching) lostSessions.add(id);
    const keysS = (performance.now() - keysStarted) / 1000;
    log(`granted ${ids.length} sessions in ${grantS.toFixed(1)} s (${(ids.length / grantS).toFixed(0)}/s), their keys in ${keysS.toFixed(1)} s ` +
      `(${(ids.length / keysS).toFixed(0)}/s); sessions expired before their key was attached: ${lostAttaching.length}; load ${load()}`);

    // Every session renewed once before anything is measured (the first period).
    await sleep(periodMs + 1000);
    await findLeader('run 1 (after the keys were attached)');
    const memSessions = await memory(members);
    const leaderBytes = perItem(memBefore, memSessions, leaderName, ids.length);
    const followerBytes = perItem(memBefore, memSessions, followerName, ids.length);
    log(`memory per session (lease + 100-byte key), RSS / heap after GC: leader ${leaderBytes.rss.toFixed(0)} / ${leaderBytes.heap.toFixed(0)} bytes, ` +
      `follower ${followerBytes.rss.toFixed(0)} / ${followerBytes.heap.toFixed(0)} bytes`);

    // Steady: windows of one period with renewals on and off alternately (see alternateMs).
    const puts = { on: newWorkload(), off: newWorkload() };
    let side: 'on' | 'off' = 'on';
    let switchedMs = performance.now();
    const putStream = workload(cell.clientUrl(leaderName), () => (performance.now() - switchedMs < 250 ? null : puts[side]), lockClients.ids);
    const renewedAtStart = state.renewed;
    // Frames from here on only: the ones sent while keys were being attached waited behind them.
    const attachFrames = frames.summary();
    const attachFailures = state.failedFrames;
    frames = new LatencyHistogram();
    state.failedFrames = 0;
    const cpuStart = { leader: cpuSeconds([leaderPid]), cell: cpuSeconds(cellPids), client: process.cpuUsage() };
    // The leadership confirmations renewals waited on: how long each took, how many frames shared one.
    const leaderBase = cell.clientUrl(leaderName);
    const roundsBefore = { seconds: await leaderHistogram(agent, leaderBase, 'baton_lease_confirm_round_seconds'), keepalives: await leaderHistogram(agent, leaderBase, 'baton_lease_confirm_round_keepalives') };
    const steadyStarted = performance.now();
    const windows = runs.has('steady') ? Math.max(2, 2 * Math.round((durationS * 1000) / alternateMs / 2)) : 0;
    let onSeconds = 0;
    let renewedOn = 0;
    // CPU seconds per member and this client, summed over each side's windows: does a side ask
    // more of the 2 cores than the other (a tail from the OS's run queue, not from one process)?
    const sideCpu = { on: new Map<string, number>(), off: new Map<string, number>() };
    const cpuNow = (): Map<string, number> => {
      const client = process.cpuUsage();
      return new Map([...names.map((n) => [n, cpuSeconds([members!.pids.get(n) as number])] as const), ['client', (client.user + client.system) / 1e6] as const]);
    };
    for (let w = 0; w < windows; w++) {
      side = w % 2 === 0 ? 'on' : 'off';
      state.renewing = side === 'on';
      switchedMs = performance.now();
      const renewedBefore = state.renewed;
      // --profile: the leader's CPU over the first window of each side.
      const profiled = values.profile === true && w < 2 ? members.inspectors.get(leaderName) as InspectorSession : null;
      await profiled?.startProfile();
      const cpuBefore = cpuNow();
      await sleep(alternateMs);
      for (const [name, seconds] of cpuNow()) sideCpu[side].set(name, (sideCpu[side].get(name) ?? 0) + seconds - (cpuBefore.get(name) as number));
      if (profiled !== null) logProfile(await profiled.stopProfile(), `renewals ${side}`);
      if (side === 'on') {
        onSeconds += alternateMs / 1000;
        renewedOn += state.renewed - renewedBefore;
      }
    }
    state.renewing = true;
    if (runs.has('steady')) {
      log(`  leader's confirmation rounds (duration s): ${bucketDiff(roundsBefore.seconds, await leaderHistogram(agent, leaderBase, 'baton_lease_confirm_round_seconds'))}`);
      log(`  keepalive frames per round: ${bucketDiff(roundsBefore.keepalives, await leaderHistogram(agent, leaderBase, 'baton_lease_confirm_round_keepalives'))}`);
    }
    const steadyLockFailures = (await putStream.stop()).lockFailures;
    const steadyS = (performance.now() - steadyStarted) / 1000;
    const clientCpu = process.cpuUsage(cpuStart.client);
    const cpu = {
      leader: (cpuSeconds([leaderPid]) - cpuStart.leader) / steadyS,
      cell: (cpuSeconds(cellPids) - cpuStart.cell) / steadyS,
      client: (clientCpu.user + clientCpu.system) / 1e6 / steadyS,
    };
    const coresBySide = (): { on: Record<string, number>; off: Record<string, number> } => {
      const of = (side: 'on' | 'off'): Record<string, number> =>
        Object.fromEntries([...sideCpu[side]].map(([n, c]) => [n === leaderName ? `${n} (leader)` : n, c / Math.max(1, windows / 2) / (alternateMs / 1000)]));
      return { on: of('on'), off: of('off') };
    };
    const run1 = {
      grantsPerS: ids.length / grantS, keysPerS: ids.length / keysS, lostWhileAttaching: lostAttaching.length,
      renewalsPerS: (state.renewed - renewedAtStart) / steadyS, renewalsPerSWhileOn: renewedOn / onSeconds,
      frames: summary(frames), lostSessions: lostSessions.size, failedFrames: state.failedFrames, cpu,
      whileAttaching: { frames: attachFrames, failedFrames: attachFailures },
      bytesPerSession: { leader: leaderBytes, follower: followerBytes },
      memory: Object.fromEntries(await memory(members)),
      puts: { noSessions: summary(noSessions.puts), renewalsOn: summary(puts.on.puts), renewalsOff: summary(puts.off.puts) },
      coresBySide: coresBySide(),
      lockPairs: { noSessions: summary(noSessions.locks), renewalsOn: summary(puts.on.locks), renewalsOff: summary(puts.off.locks), failures: steadyLockFailures },
    };
    report.sessions = run1;
    if (runs.has('steady')) log(`run 1: ${run1.renewalsPerS.toFixed(0)} renewals/s over ${steadyS.toFixed(0)} s (${run1.renewalsPerSWhileOn.toFixed(0)}/s while on; ` +
      `offered ${(sessions * 1000 / periodMs).toFixed(0)}/s), frame p50 ${ms(run1.frames.p50Us)} ms p99 ${ms(run1.frames.p99Us)} ms, ` +
      `sessions lost (lease_not_found) ${lostSessions.size}, failed frames ${state.failedFrames} (while attaching keys: p99 ${ms(attachFrames.p99Us)} ms, ${attachFailures} failed); CPU cores: leader ${cpu.leader.toFixed(2)}, cell ${cpu.cell.toFixed(2)}, ` +
      `client ${cpu.client.toFixed(2)}; load ${load()}`);
    if (runs.has('steady')) log(`  put p99: renewals on ${ms(run1.puts.renewalsOn.p99Us)} ms (${run1.puts.renewalsOn.count}), off ${ms(run1.puts.renewalsOff.p99Us)} ms ` +
      `(${run1.puts.renewalsOff.count}), no sessions ${ms(run1.puts.noSessions.p99Us)} ms: ` +
      `${(run1.puts.renewalsOn.p99Us / run1.puts.renewalsOff.p99Us).toFixed(2)}x interleaved, ` +
      `${(run1.puts.renewalsOn.p99Us / run1.puts.noSessions.p99Us).toFixed(2)}x the no-session baseline`);
    if (runs.has('steady')) log(`  CPU cores, renewals on / off: ${Object.keys(run1.coresBySide.on).map((n) => `${n} ${(run1.coresBySide.on[n] ?? 0).toFixed(2)} / ${(run1.coresBySide.off[n] ?? 0).toFixed(2)}`).join(', ')}`);
    if (runs.has('steady')) log(`  lock acquire+release p99: renewals on ${ms(run1.lockPairs.renewalsOn.p99Us)} ms (${run1.lockPairs.renewalsOn.count}), off ` +
      `${ms(run1.lockPairs.renewalsOff.p99Us)} ms (${run1.lockPairs.renewalsOff.count}), no sessions ${ms(run1.lockPairs.noSessions.p99Us)} ms: ` +
      `${(run1.lockPairs.renewalsOn.p99Us / run1.lockPairs.renewalsOff.p99Us).toFixed(2)}x interleaved, ` +
      `${(run1.lockPairs.renewalsOn.p99Us / run1.lockPairs.noSessions.p99Us).toFixed(2)}x the no-session baseline; ${steadyLockFailures} failed`);

    // --- run 2: session loss -----------------------------------------------------------------
    if (runs.has('loss')) {
    await findLeader('run 2');
    const lostStreams = Array.from({ length: Math.max(1, Math.round(streamCount * lossShare)) }, (_, i) => i * Math.floor(1 / lossShare));
    const lostIds = lostStreams.flatMap((s) => groups[s] as number[]);
    const watcher = await StreamClient.open(cell.clientUrl(followerName));
    opened.push(watcher);
    const deletedAt = new Map<number, number>();
    watcher.onEvents = (_id, frame, arrivedMs) => {
      for (const event of frame.events as { type: string; kv: { key: string } }[]) {
        if (event.type === 'delete') deletedAt.set(Number(event.kv.key.slice(5)), arrivedMs);
      }
    };
    // As the client library does: a watch ended as a slow consumer is created again from its last
    // revision + 1 (history has every deletion), so the times below include the resumptions.
    let watcherEnded: unknown = null;
    let resumes = 0;
    watcher.onWatchEnd = (_id, error) => {
      log(`  the watcher was ended after ${deletedAt.size} deletions: ${JSON.stringify(error).slice(0, 200)}`);
      if (error?.code === 'slow_consumer' && typeof error.lastRevision === 'number' && resumes < 100) {
        resumes++;
        watcher.watch(`loss-${resumes}`, { key: '/svc/', prefix: true, filter: 'delete', startRevision: error.lastRevision + 1 })
          .catch((failed: Error) => { watcherEnded = failed.message; });
        return;
      }
      watcherEnded = error;
    };
    await watcher.watch('loss', { key: '/svc/', prefix: true, filter: 'delete' });
    const leaderBefore = (await httpJson(agent, cell.clientUrl(leaderName), 'GET', '/v1/cluster/status')).body.leader as number;
    // Writes beside the expiry wave: from the stop until every deletion was seen.
    const putsDuringLoss = new LatencyHistogram();
    const lossPuts = putLoad(cell.clientUrl(leaderName), () => putsDuringLoss);
    const expiredBefore = await expiredTotal(agent, cell.clientUrl(leaderName));
    const lossCpuStart = { leader: cpuSeconds([leaderPid]), cell: cpuSeconds(cellPids) };
    const lossStarted = performance.now();
    for (const s of lostStreams) stopped.add(s);
    const waitUntil = lossStarted + ttlS * 1000 + periodMs + 120_000;
    while (deletedAt.size < lostIds.length && watcherEnded === null && performance.now() < waitUntil) await sleep(200);
    // Ended early: wait on the leader's count of the lost sessions' keys instead (no per-key times past that point).
    while (watcherEnded !== null && performance.now() < waitUntil &&
      ((await httpJson(agent, cell.clientUrl(leaderName), 'GET', '/v1/kv/svc/?prefix=true&countOnly=true')).body.count as number) > ids.length - lostIds.length) await sleep(200);
    const keysGoneS = (performance.now() - lossStarted) / 1000;
    await lossPuts.stop();
    const lossWaitS = (performance.now() - lossStarted) / 1000;
    const lossCpu = { leader: (cpuSeconds([leaderPid]) - lossCpuStart.leader) / lossWaitS, cell: (cpuSeconds(cellPids) - lossCpuStart.cell) / lossWaitS };
    const expiredAfter = await expiredTotal(agent, cell.clientUrl(leaderName));
    const lossDelay = new LatencyHistogram();
    let firstDelete = Number.POSITIVE_INFINITY;
    let lastDelete = 0;
    for (const id of lostIds) {
      const at = deletedAt.get(id);
      if (at === undefined) continue;
      // The lease's deadline as the client knows it: its last renewal sent + TTL (the leader's is later).
      lossDelay.record(Math.max(0, at - (lastRenewedMs[indexOf.get(id) as number] as number) - ttlS * 1000) * 1000);
      firstDelete = Math.min(firstDelete, at);
      lastDelete = Math.max(lastDelete, at);
    }
    // The deadlines spread over a renewal period (the streams renew staggered), so the average rate
    // is capped by that spread; the busiest second shows what the cell did when it had the work.
    const perSecond = new Map<number, number>();
    for (const at of deletedAt.values()) perSecond.set(Math.floor(at / 1000), (perSecond.get(Math.floor(at / 1000)) ?? 0) + 1);
    const peakPerS = Math.max(0, ...perSecond.values());
    const lostSet = new Set(lostIds);
    const unexpected = [...deletedAt.keys()].filter((id) => !lostSet.has(id)).length;
    const leaderAfter = (await httpJson(agent, cell.clientUrl(leaderName), 'GET', '/v1/cluster/status')).body.leader as number;
    const keyCount = (await httpJson(agent, cell.clientUrl(leaderName), 'GET', '/v1/kv/svc/?prefix=true&countOnly=true')).body.count as number;
    // The storm: every lost session comes back at once.
    const stormStarted = performance.now();
    const backIds = await grantBatches(agent, bases, lostIds.length, 'storm');
    const stormGrantS = (performance.now() - stormStarted) / 1000;
    const backGroups = Array.from({ length: Math.ceil(backIds.length / perStream) }, (_, s) => backIds.slice(s * perStream, (s + 1) * perStream));
    const stormLost = (await attachKeys(lostStreams.slice(0, backGroups.length).map((s) => streams[s] as StreamClient), backGroups)).length;
    const stormS = (performance.now() - stormStarted) / 1000;
    const run2 = {
      lost: lostIds.length, deletionsSeen: deletedAt.size, otherDeletions: unexpected,
      deadlineToDeletion: lossDelay.summary(),
      revocationsPerS: deletedAt.size / Math.max(0.001, (lastDelete - firstDelete) / 1000), peakRevocationsPerS: peakPerS,
      allSeenAfterStopS: (lastDelete - lossStarted) / 1000,
      keysLeft: keyCount, keysExpected: ids.length - lostIds.length, leaderChanged: leaderBefore !== leaderAfter,
      expiredByLeader: expiredAfter - expiredBefore, putsDuringLoss: putsDuringLoss.summary(), cpu: lossCpu, watcherEnded, watcherResumes: resumes, keysGoneS,
      stormGrantS, stormS, stormSessionsPerS: backIds.length / stormS, stormLost,
    };
    report.loss = run2;
    log(`run 2: ${run2.lost} sessions stopped renewing; deletions seen ${run2.deletionsSeen} (others deleted: ${unexpected}); ` +
      `deadline -> deletion seen p50 ${ms(run2.deadlineToDeletion.p50Us)} ms p99 ${ms(run2.deadlineToDeletion.p99Us)} ms max ${ms(run2.deadlineToDeletion.maxUs)} ms; ` +
      `${run2.revocationsPerS.toFixed(0)} revocations/s (busiest second ${peakPerS}); all seen ${run2.allSeenAfterStopS.toFixed(1)} s after the stop; keys left ${keyCount} ` +
      `(expected ${run2.keysExpected}); leader changed: ${run2.leaderChanged}; storm: ${backIds.length} sessions back in ${stormS.toFixed(1)} s ` +
      `(grants ${stormGrantS.toFixed(1)} s)`);
    log(`  watcher resumed after slow_consumer ${resumes} times; every lost key gone (the leader's count) ${keysGoneS.toFixed(1)} s after the stop; leader's expired-lease count +${run2.expiredByLeader}; puts beside the expiry wave: ${run2.putsDuringLoss.count}, p50 ` +
      `${ms(run2.putsDuringLoss.p50Us)} ms p99 ${ms(run2.putsDuringLoss.p99Us)} ms max ${ms(run2.putsDuringLoss.maxUs)} ms; ` +
      `CPU cores from the stop to the last deletion: leader ${lossCpu.leader.toFixed(2)}, cell ${lossCpu.cell.toFixed(2)}; load ${load()}`);
    }
    state.running = false;
    lockClients.stop();
    await Promise.race([Promise.all(renewers), sleep(periodMs + 5_000)]);
    for (const stream of opened) stream.close();
    opened.length = 0;

    // --- run 3: watches ----------------------------------------------------------------------
    if (runs.has('watches')) {
    await findLeader('run 3');
    const memWatchBefore = await memory(members);
    const connections = Math.ceil(watches / watchesPerConnection);
    const watchClients: StreamClient[] = [];
    const holder = (c: number): string => names[c % names.length] as string;
    for (let c = 0; c < connections; c++) watchClients.push(await StreamClient.open(cell.clientUrl(holder(c))));
    opened.push(...watchClients);
    const exactKey = (w: number): string => `/w/${Math.floor(w / 10)}/${w}`;
    const eventsByWatch = new Map<number, number[]>(); // exact watches: the revisions seen
    const arrivals: [value: string, arrivedMs: number][] = [];
    let eventsDelivered = 0;
    const watchCreated = performance.now();
    await Promise.all(watchClients.map(async (client, c) => {
      client.onEvents = (id, frame, arrivedMs) => {
        const w = Number(id.slice(1));
        for (const event of frame.events as { kv: { modRevision: number; value: string } }[]) {
          eventsDelivered++;
          if (id.startsWith('e')) (eventsByWatch.get(w) ?? eventsByWatch.set(w, []).get(w) as number[]).push(event.kv.modRevision);
          arrivals.push([event.kv.value, arrivedMs]);
        }
      };
      const first = c * watchesPerConnection;
      await pool(Math.min(watchesPerConnection, watches - first), 64, async (i) => {
        const w = first + i;
        // Every 10th watch: a prefix (its group of 10 keys), with prevKv.
        if (w % 10 === 9) await client.watch(`p${w}`, { key: `/w/${Math.floor(w / 10)}/`, prefix: true, prevKv: true });
        else await client.watch(`e${w}`, { key: exactKey(w) });
      });
    }));
    const watchSetupS = (performance.now() - watchCreated) / 1000;
    await sleep(2_000);
    const memWatches = await memory(members);
    const held = new Map(names.map((name) => [name, 0]));
    for (let c = 0; c < connections; c++) held.set(holder(c), (held.get(holder(c)) as number) + Math.min(watchesPerConnection, watches - c * watchesPerConnection));
    const perWatcher = Object.fromEntries(names.map((name) => [name, perItem(memWatchBefore, memWatches, name, held.get(name) as number)]));
    log(`run 3: ${watches} watches on ${connections} connections in ${watchSetupS.toFixed(1)} s; memory per idle watcher (RSS / heap after GC): ` +
      names.map((name) => `${name} ${perWatcher[name]?.rss.toFixed(0)} / ${perWatcher[name]?.heap.toFixed(0)} bytes`).join(', '));
    // The write load: puts on watched exact keys at a fixed rate, 32 in flight at most, in two
    // halves: the watchers alone, then with a slow consumer on every member (a connection that
    // stops reading, holding 10 prefix watches with prevKv over every watched key).
    const putAgent = new Agent({ keepAlive: true, maxSockets: 32 });
    const acked = new Map<number, number[]>(); // exact watch -> revisions acknowledged for its key
    const putTimes = new Map<string, { sentMs: number; answeredMs: number; phase: 'alone' | 'slow' }>(); // by value
    let sent = 0;
    async function writePhase(phase: 'alone' | 'slow', seconds: number): Promise<{ sent: number; seconds: number; events: number }> {
      const started = performance.now();
      const deliveredAtStart = eventsDelivered;
      const sentAtStart = sent;
      let inFlight = 0;
      const writers: Promise<void>[] = [];
      // Offered at a fixed rate, 32 in flight at most (what the cell takes is reported).
      for (let n = 0; n < watchPutsPerS * seconds && performance.now() - started < seconds * 1000;) {
        const due = started + (n * 1000) / watchPutsPerS;
        if (performance.now() < due || inFlight >= 32) {
          await sleep(Math.max(1, due - performance.now()));
          continue;
        }
        let w = Math.floor(Math.random() * watches);
        if (w % 10 === 9) w--; // an exact key (its group's prefix watch sees it too)
        n++;
        sent++;
        inFlight++;
        const value = `v${sent}`;
        const sentMs = performance.now();
        writers.push(httpJson(putAgent, cell.clientUrl(leaderName), 'PUT', `/v1/kv${exactKey(w)}`, value).then((res) => {
          if (res.status === 200 || res.status === 201) {
            putTimes.set(value, { sentMs, answeredMs: performance.now(), phase });
            (acked.get(w) ?? acked.set(w, []).get(w) as number[]).push(res.body.revision as number);
          }
        }, () => undefined).finally(() => inFlight--));
      }
      await Promise.all(writers);
      await sleep(3_000);
      const tookS = (performance.now() - started - 3_000) / 1000;
      return { sent: sent - sentAtStart, seconds: tookS, events: eventsDelivered - deliveredAtStart };
    }
    const alone = await writePhase('alone', Math.max(5, Math.round(durationS / 2)));
    // The slow consumers: their watches created while reading, then the socket stops being read.
    const slowClients: StreamClient[] = [];
    const slowEnds: string[] = [];
    for (const name of names) {
      const slow = await StreamClient.open(cell.clientUrl(name));
      opened.push(slow);
      slow.onWatchEnd = (_id, error) => void slowEnds.push(String(error?.code));
      for (let i = 0; i < 10; i++) await slow.watch(`slow-${i}`, { key: '/w/', prefix: true, prevKv: true });
      slow.pauseReading();
      slowClients.push(slow);
    }
    const endedBefore = await slowConsumerEnds(agent, bases);
    const withSlow = await writePhase('slow', Math.max(5, Math.round(durationS / 2)));
    const endedBySlow = (await slowConsumerEnds(agent, bases)) - endedBefore;
    for (const slow of slowClients) slow.resumeReading();
    await sleep(2_000);
    const writeS = alone.seconds + withSlow.seconds;
    let gaps = 0;
    let checked = 0;
    for (const [w, revisions] of acked) {
      const seen = eventsByWatch.get(w) ?? [];
      checked++;
      const want = [...revisions].sort((a, b) => a - b);
      if (seen.length !== want.length || seen.some((r, i) => r !== want[i])) gaps++;
    }
    // Latency per delivered event: from its put's answer (the put committed and applied on the
    // leader; an event may beat the answer: counted as 0) and from the put's send (an upper bound).
    const fromAnswer = { alone: new LatencyHistogram(), slow: new LatencyHistogram() };
    const fromSend = { alone: new LatencyHistogram(), slow: new LatencyHistogram() };
    let beforeAnswer = 0;
    for (const [value, arrivedMs] of arrivals) {
      const times = putTimes.get(value);
      if (times === undefined) continue;
      if (arrivedMs < times.answeredMs) beforeAnswer++;
      fromAnswer[times.phase].record(Math.max(0, arrivedMs - times.answeredMs) * 1000);
      fromSend[times.phase].record((arrivedMs - times.sentMs) * 1000);
    }
    const run3 = {
      watches, connections, setupS: watchSetupS, perWatcher, putsPerS: sent / writeS,
      eventsPerS: (alone.events + withSlow.events) / writeS, answerToEvent: fromAnswer.alone.summary(), sendToEvent: fromSend.alone.summary(),
      eventsBeforeTheAnswer: beforeAnswer,
      watchersChecked: checked, watchersWithGapOrDuplicate: gaps,
      slowConsumer: {
        connections: slowClients.length, watchesEach: 10, putsPerS: withSlow.sent / withSlow.seconds,
        answerToEvent: fromAnswer.slow.summary(), sendToEvent: fromSend.slow.summary(),
        p99Ratio: fromAnswer.slow.summary().p99Us / fromAnswer.alone.summary().p99Us,
        endedSlowConsumer: endedBySlow, endsSeenByTheSlowClients: slowEnds.length,
      },
    };
    report.watches = run3;
    log(`  ${sent} puts in ${writeS.toFixed(1)} s (${run3.putsPerS.toFixed(0)}/s): ${run3.eventsPerS.toFixed(0)} events/s delivered; put answered -> event at ` +
      `the watcher p50 ${ms(run3.answerToEvent.p50Us)} ms p99 ${ms(run3.answerToEvent.p99Us)} ms (${beforeAnswer} before the answer), put sent -> event ` +
      `p50 ${ms(run3.sendToEvent.p50Us)} ms p99 ${ms(run3.sendToEvent.p99Us)} ms; ${checked} exact watchers checked against the ` +
      `acknowledged puts: ${gaps} with a gap, duplicate or reorder; load ${load()}`);
    log(`  with a slow consumer on each member (${withSlow.sent} puts, ${run3.slowConsumer.putsPerS.toFixed(0)}/s): the others' put answered -> event p50 ` +
      `${ms(run3.slowConsumer.answerToEvent.p50Us)} ms p99 ${ms(run3.slowConsumer.answerToEvent.p99Us)} ms: ${run3.slowConsumer.p99Ratio.toFixed(2)}x the p99 without; ` +
      `the nodes ended ${endedBySlow} watchers as slow consumers (the slow clients saw ${slowEnds.length} ends once they read again)`);
    putAgent.destroy();
    }
    for (const inspector of members.inspectors.values()) inspector.close();
    agent.destroy();
    report.leaderChanges = leaderChanges;
    if (values.json !== undefined) writeFileSync(values.json, `${JSON.stringify(report, null, 2)}\n`);
  } finally {
    for (const stream of opened) stream.close();
    await cell.stopAll();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
