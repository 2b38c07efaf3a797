// `npm run bench:leases`: lease renewals on a real 3-process Baton cell (issue 7's benchmark).
//   1. put p99 alone (the baseline), 8 closed-loop put clients on the leader, in a worker thread
//      of their own (see PutWorker);
//   2. grant N leases (TTL 600 s, see ttlSeconds) in batches of --grant-batch (default 1,000,
//      POST /v1/leases/batch, --grant-in-flight batches in flight per member, default 2), or with --grant-batch 1 one per
//      request, --grant-concurrency requests at once spread over the three members (followers
//      forward the proposals); memory per lease on the leader = its JS heap after a full GC (taken
//      through the inspector, see src/bench/inspector.ts) after the grants minus before, / N;
//   3. steady load, once per --period-ms value: N leases on N/100 WebSocket streams spread over all three members (followers
//      forward to the leader), each stream renewing its 100 leases in one keepalive frame every
//      period (default 10 s, staggered), while the same put load runs: renewals/s, frame p99,
//      leader CPU, put p99 with renewals / without. The renewals are switched on and off in
//      alternating windows (--alternate-ms, default 5 s) while the puts run throughout, so the
//      with/without ratio compares puts seconds apart, not minutes apart: on a shared machine
//      whose load drifts, that is the only ratio worth quoting (the phase-1 ratio is printed too);
//   4. maximum renewals/s: closed-loop keepalive frames of 1,000 IDs on 8 streams to the leader.
// --streams-to leader puts step 3's streams all on the leader (no follower forwards).
// --baton-dist DIR runs the cell from another build (DIR/dist, e.g. main's) with this bench's
// code, so two builds are measured by the same client (run one, then the other, alternately).
// Each steady phase also reports the leader's socket writes to its peers per second, on / off
// (baton_peer_sent_writes_total), and the peer messages per write.
// Plus the expiry tracker's own heap per lease, measured in-process (run with --expose-gc).
// --profile writes a CPU profile of the leader over the first steady phase (with --grants-only:
// over the grants) and prints its top rows.
//
//   npm run bench:leases                      20,000 leases (fits a shared 2-core machine)
//   npm run bench:leases -- --leases 100000   the seed's scale (10,000 renewals/s)
//   npm run bench:leases -- --leases 100000 --period-ms 10000,1000   and then 100,000 renewals/s
//   npm run bench:leases -- --seconds 20 --period-ms 10000
//   npm run bench:leases -- --leases 100000 --grants-only   the grant phase alone (grants/s)
import { rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { Agent, request } from 'node:http';
import WebSocket from 'ws';
import { cpuSeconds, findPids } from '../src/bench/proc-cpu.js';
import { summarizeCpuProfile } from '../src/bench/cpu-profile.js';
import { InspectorSession } from '../src/bench/inspector.js';
import { LatencyHistogram } from '../src/bench/histogram.js';
import { LeaseExpiryTracker } from '../src/lease/index.js';
import { httpJson, rssAnonKiB, startInspectableCell } from '../src/bench/inspectable-cell.js';
import { metricValue } from '../src/bench/metrics-text.js';

const { values } = parseArgs({
  args: isMainThread ? process.argv.slice(2) : [],
  options: {
    leases: { type: 'string' },
    seconds: { type: 'string' },
    'period-ms': { type: 'string' },
    'put-clients': { type: 'string' },
    'ttl-s': { type: 'string' },
    'alternate-ms': { type: 'string' },
    'grant-concurrency': { type: 'string' },
    'grant-batch': { type: 'string' },
    'grant-in-flight': { type: 'string' },
    'streams-to': { type: 'string' },
    'max-seconds': { type: 'string' },
    profile: { type: 'boolean' },
    'grants-only': { type: 'boolean' },
    'baton-dist': { type: 'string' },
  },
  strict: true,
});
const leaseCount = Number(values.leases ?? 20_000);
const seconds = Number(values.seconds ?? 20);
const periodsMs = (values['period-ms'] ?? '10000').split(',').map(Number);
const grantConcurrency = Number(values['grant-concurrency'] ?? 384);
// Leases per grant request: POST /v1/leases/batch above 1 (issue 31), the single grant at 1.
const grantBatch = Number(values['grant-batch'] ?? 1000);
if (!(Number.isInteger(grantBatch) && grantBatch >= 1 && grantBatch <= 1000)) throw new Error('--grant-batch takes 1..1000');
// Batch requests in flight per member (each one log entry in a format-3 cell).
const grantInFlight = Number(values['grant-in-flight'] ?? 2);
const maxSeconds = Number(values['max-seconds'] ?? 10);
const putClients = Number(values['put-clients'] ?? 8);
const perStream = 100;
// Longer than the grant phase (100K grants take minutes here), so no lease expires before its
// stream starts renewing it; renewals still come every period.
const ttlSeconds = Number(values['ttl-s'] ?? 600);
const alternateMs = Number(values['alternate-ms'] ?? 5_000);
/** Puts that start this soon after a switch count for neither side (in-flight renewals settle). */
const switchGuardMs = 250;
const log = (line: string): void => void process.stderr.write(`${line}\n`);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const ms = (us: number): string => (us / 1000).toFixed(1);
const load = (): string => loadavg().map((l) => l.toFixed(1)).join(' ');

/**
 * Closed-loop put clients on the leader until `stop()`. Each put's latency goes to the histogram
 * `pick()` names when it starts (null: not recorded); by default one histogram for all.
 */
function putLoad(
  base: string,
  clients: number,
  pick?: () => LatencyHistogram | null,
): { stop: () => Promise<LatencyHistogram> } {
  const agent = new Agent({ keepAlive: true, maxSockets: clients });
  const histogram = new LatencyHistogram();
  const choose = pick ?? (() => histogram);
  let running = true;
  const value = 'v'.repeat(256);
  const loops = Array.from({ length: clients }, async (_, c) => {
    for (let n = 0; running; n++) {
      const started = performance.now();
      const target = choose();
      try {
        await new Promise<void>((resolve, reject) => {
          const url = new URL(`/v1/kv/bench/put/${c}-${n % 1000}`, base);
          const req = request({ agent, host: url.hostname, port: url.port, method: 'PUT', path: url.pathname,
            headers: { 'content-length': value.length } }, (res) => { res.resume(); res.on('end', resolve); });
          req.on('error', reject);
          req.end(value);
        });
        target?.record((performance.now() - started) * 1000);
      } catch {
        await sleep(10);
      }
    }
  });
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
      agent.destroy();
      return histogram;
    },
  };
}

type Summary = ReturnType<LatencyHistogram['summary']>;
type PutSide = 'all' | 'on' | 'off';

/**
 * The put load in a worker thread of its own: put latencies are timed on an event loop that
 * does nothing else, so the renewal clients' work in this thread (1,000 streams) cannot show up
 * as put latency (clients of a real cell are other processes). Puts are recorded as 'all', or,
 * once the main thread says which side a window is on, as 'on' / 'off' (none in the first
 * switchGuardMs of a window).
 */
class PutWorker {
  private constructor(private readonly worker: Worker) {}
  static async start(base: string, clients: number): Promise<PutWorker> {
    const worker = new Worker(new URL(import.meta.url), { workerData: { base, clients } });
    await new Promise<void>((resolve, reject) => worker.once('message', () => resolve()).once('error', reject));
    return new PutWorker(worker);
  }
  side(side: PutSide): void {
    this.worker.postMessage({ type: 'side', side });
  }
  async stop(): Promise<Record<PutSide, Summary>> {
    const done = new Promise<Record<PutSide, Summary>>((resolve, reject) =>
      this.worker.once('message', resolve).once('error', reject));
    this.worker.postMessage({ type: 'stop' });
    const result = await done;
    await this.worker.terminate();
    return result;
  }
}

function runPutWorker(): void {
  const port = parentPort;
  if (port === null) throw new Error('not a worker');
  const { base, clients } = workerData as { base: string; clients: number };
  const histograms: Record<PutSide, LatencyHistogram> = { all: new LatencyHistogram(), on: new LatencyHistogram(), off: new LatencyHistogram() };
  let side: PutSide = 'all';
  let switchedAtMs = performance.now();
  const load = putLoad(base, clients, () =>
    side !== 'all' && performance.now() - switchedAtMs < switchGuardMs ? null : histograms[side]);
  port.on('message', (message: { type: 'side'; side: PutSide } | { type: 'stop' }) => {
    if (message.type === 'side') {
      side = message.side;
      switchedAtMs = performance.now();
      return;
    }
    void load.stop().then(() => port.postMessage({
      all: histograms.all.summary(), on: histograms.on.summary(), off: histograms.off.summary(),
    }));
  });
  port.postMessage('started');
}

/** One WebSocket carrying keepalive frames; answers resolve in order of their frame ids. */
class KeepaliveStream {
  private readonly pending = new Map<number, { sentMs: number; resolve: (renewed: number) => void }>();
  private nextId = 1;
  /** The last ID list sent, serialized once (a stream renews the same leases every period). */
  private idsSent: readonly number[] = [];
  private idsJson = '[]';
  private constructor(private readonly ws: WebSocket) {
    // The client shares the cell's two cores: answers are read without parsing them whole (the
    // id leads the frame; renewed leases are the "ttl" fields), to keep the bench's CPU per
    // renewal small next to the server's.
    ws.on('message', (data) => {
      const text = String(data);
      const id = Number(/^\{"id":(\d+)/.exec(text)?.[1] ?? NaN);
      const waiter = this.pending.get(id);
      if (waiter === undefined) return;
      this.pending.delete(id);
      let renewed = 0;
      for (let at = text.indexOf('"ttl":'); at >= 0; at = text.indexOf('"ttl":', at + 6)) renewed++;
      waiter.resolve(renewed);
    });
  }
  static async open(base: string): Promise<KeepaliveStream> {
    const ws = new WebSocket(`${base.replace('http', 'ws')}/v1/stream`);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    return new KeepaliveStream(ws);
  }
  /** Resolves with the number renewed and the frame's latency in microseconds. */
  keepalive(ids: readonly number[]): Promise<{ renewed: number; latencyUs: number }> {
    const id = this.nextId++;
    const sentMs = performance.now();
    if (ids !== this.idsSent) {
      this.idsSent = ids;
      this.idsJson = JSON.stringify(ids);
    }
    return new Promise((resolve) => {
      this.pending.set(id, { sentMs, resolve: (renewed) => resolve({ renewed, latencyUs: (performance.now() - sentMs) * 1000 }) });
      this.ws.send(`{"id":${id},"type":"keepalive","ids":${this.idsJson}}`);
    });
  }
  close(): void {
    this.ws.terminate();
  }
}

function trackerHeapBytesPerLease(count: number): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) return NaN;
  gc();
  const before = process.memoryUsage().heapUsed;
  const tracker = new LeaseExpiryTracker();
  for (let id = 1; id <= count; id++) tracker.granted(id, 60_000, id);
  // Steady state: clients renew every TTL/3, so old heap items pile up until compacted.
  for (let round = 1; round <= 4; round++) for (let id = 1; id <= count; id++) tracker.renew(id, round * 20_000 + id);
  gc();
  const bytes = process.memoryUsage().heapUsed - before;
  if (tracker.size !== count) throw new Error('tracker size');
  return bytes / count;
}

/** Grants `count` leases, `grantConcurrency` requests at once spread over `bases`; their IDs ascending. */
async function grantAll(bases: readonly string[], count: number): Promise<number[]> {
  const agents = bases.map(() => new Agent({ keepAlive: true, maxSockets: Math.ceil(grantConcurrency / bases.length) }));
  const ids: number[] = [];
  let next = 0;
  // Batches: a few in flight per member (each is up to 1,000 log entries proposed together).
  const workers = grantBatch > 1 ? Math.min(grantConcurrency, grantInFlight * bases.length) : grantConcurrency;
  await Promise.all(Array.from({ length: workers }, async (_, worker) => {
    const member = worker % bases.length;
    while (grantBatch > 1 && next < count) {
      const n = next;
      const size = Math.min(grantBatch, count - next);
      next += size;
      for (let attempt = 1; ; attempt++) {
        const res = await httpJson(agents[member] as Agent, bases[member] as string, 'POST', '/v1/leases/batch', { ttl: ttlSeconds, count: size },
          { 'request-id': `bench-grants-${n}` }).catch((error: Error) => ({ status: 0, body: error.message }));
        const items = res.status === 200 ? (res.body.leases as { id?: number; error?: string }[]) : [];
        if (res.status === 200 && items.every((item) => item.id !== undefined)) {
          for (const item of items) ids.push(item.id as number);
          break;
        }
        // A retry with the same Request-ID answers the leases already granted and grants the rest.
        if (attempt >= 10 || (res.status !== 200 && ![0, 429, 503, 504].includes(res.status))) {
          throw new Error(`batch grant: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
        }
        await sleep(200 * attempt);
      }
    }
    while (grantBatch === 1 && next < count) {
      const n = next++;
      // A timeout's outcome is unknown: retry with the same Request-ID (never a second lease).
      for (let attempt = 1; ; attempt++) {
        const res = await httpJson(agents[member] as Agent, bases[member] as string, 'POST', '/v1/leases', { ttl: ttlSeconds },
          { 'request-id': `bench-grant-${n}` }).catch((error: Error) => ({ status: 0, body: error.message }));
        if (res.status === 200) {
          ids.push(res.body.id as number);
          break;
        }
        if (attempt >= 10 || ![0, 429, 503, 504].includes(res.status)) {
          throw new Error(`grant: ${res.status} ${JSON.stringify(res.body)}`);
        }
        await sleep(200 * attempt);
      }
    }
  }));
  for (const agent of agents) agent.destroy();
  return ids.sort((a, b) => a - b);
}

interface PhaseResult {
  renewalsPerSecond: number;
  frames: ReturnType<LatencyHistogram['summary']>;
  on: ReturnType<LatencyHistogram['summary']>;
  off: ReturnType<LatencyHistogram['summary']>;
  cpuOn: number;
  cpuOff: number;
  /** CPU cores used by all three members, renewals on / off. */
  cellCpuOn: number;
  cellCpuOff: number;
  /** This process (the renewal streams and the put worker), cores, renewals on / off. */
  clientCpuOn: number;
  clientCpuOff: number;
  /** The leader's socket writes to peers per second, and peer messages per write, on / off. */
  peerWritesOn: number;
  peerWritesOff: number;
  messagesPerWriteOn: number;
  messagesPerWriteOff: number;
  windows: number;
}

/** The leader's peer socket writes and messages so far (its /metrics). */
async function peerSends(agent: Agent, base: string): Promise<{ writes: number; messages: number }> {
  const text = String((await httpJson(agent, base, 'GET', '/metrics')).body);
  return { writes: metricValue(text, 'baton_peer_sent_writes_total'), messages: metricValue(text, 'baton_peer_sent_messages_total') };
}

/**
 * Puts run throughout; renewals are switched on and off in alternating windows (off first).
 * `renewers` start the renewal loops, which renew only while `state.renewing` and end once
 * `state.running` is false.
 */
async function alternatingPhase(
  leaderBase: string,
  leaderPid: number,
  cellPids: readonly number[],
  phaseSeconds: number,
  renewers: (state: { renewing: boolean; running: boolean; renewed: number; frames: LatencyHistogram }) => Promise<void>[],
): Promise<PhaseResult> {
  const state = { renewing: false, running: true, renewed: 0, frames: new LatencyHistogram() };
  const cpu = { on: 0, off: 0 };
  const cellCpu = { on: 0, off: 0 };
  const clientCpu = { on: 0, off: 0 };
  const secondsIn = { on: 0, off: 0 };
  const writes = { on: 0, off: 0 };
  const messages = { on: 0, off: 0 };
  const metricsAgent = new Agent({ keepAlive: true, maxSockets: 1 });
  const puts = await PutWorker.start(leaderBase, putClients);
  puts.side('off');
  const loops = renewers(state);
  const windows = Math.max(2, 2 * Math.round((phaseSeconds * 1000) / alternateMs / 2));
  let renewedOn = 0;
  for (let w = 0; w < windows; w++) {
    const side = state.renewing ? 'on' : 'off';
    const cpuAtStart = cpuSeconds([leaderPid]);
    const cellCpuAtStart = cpuSeconds(cellPids);
    const clientCpuAtStart = process.cpuUsage();
    const renewedAtStart = state.renewed;
    const sendsAtStart = await peerSends(metricsAgent, leaderBase);
    const startedMs = performance.now();
    await sleep(alternateMs);
    const sends = await peerSends(metricsAgent, leaderBase);
    writes[side] += sends.writes - sendsAtStart.writes;
    messages[side] += sends.messages - sendsAtStart.messages;
    cpu[side] += cpuSeconds([leaderPid]) - cpuAtStart;
    cellCpu[side] += cpuSeconds(cellPids) - cellCpuAtStart;
    const clientUsed = process.cpuUsage(clientCpuAtStart);
    clientCpu[side] += (clientUsed.user + clientUsed.system) / 1e6;
    secondsIn[side] += (performance.now() - startedMs) / 1000;
    if (side === 'on') renewedOn += state.renewed - renewedAtStart;
    state.renewing = !state.renewing;
    puts.side(state.renewing ? 'on' : 'off');
  }
  state.running = false;
  metricsAgent.destroy();
  const put = await puts.stop();
  await Promise.race([Promise.all(loops), sleep(Math.max(...periodsMs) + 5_000)]);
  return {
    renewalsPerSecond: renewedOn / secondsIn.on,
    frames: state.frames.summary(),
    on: put.on,
    off: put.off,
    cpuOn: cpu.on / secondsIn.on,
    cpuOff: cpu.off / secondsIn.off,
    cellCpuOn: cellCpu.on / secondsIn.on,
    cellCpuOff: cellCpu.off / secondsIn.off,
    clientCpuOn: clientCpu.on / secondsIn.on,
    clientCpuOff: clientCpu.off / secondsIn.off,
    peerWritesOn: writes.on / secondsIn.on,
    peerWritesOff: writes.off / secondsIn.off,
    messagesPerWriteOn: messages.on / writes.on,
    messagesPerWriteOff: messages.off / writes.off,
    windows,
  };
}

function logPhase(label: string, target: string, result: PhaseResult): void {
  const { on, off, frames } = result;
  log(`${label} (${result.windows} alternating ${alternateMs / 1000} s windows, load ${load()}): ` +
    `${result.renewalsPerSecond.toFixed(0)} renewals/s while on${target}, frame p50 ${ms(frames.p50Us)} ms ` +
    `p99 ${ms(frames.p99Us)} ms, leader CPU ${result.cpuOn.toFixed(2)} cores on / ${result.cpuOff.toFixed(2)} off, ` +
    `cell ${result.cellCpuOn.toFixed(2)} / ${result.cellCpuOff.toFixed(2)}, client ${result.clientCpuOn.toFixed(2)} / ${result.clientCpuOff.toFixed(2)} (` +
    `${((1e6 * (result.cellCpuOn - result.cellCpuOff)) / result.renewalsPerSecond).toFixed(1)} cell CPU-µs per renewal)`);
  log(`  puts with renewals: ${on.count}, p50 ${ms(on.p50Us)} ms p99 ${ms(on.p99Us)} ms; without (interleaved): ${off.count}, ` +
    `p50 ${ms(off.p50Us)} ms p99 ${ms(off.p99Us)} ms; p99 ratio ${(on.p99Us / off.p99Us).toFixed(2)}x`);
  log(`  leader's peer socket writes/s ${result.peerWritesOn.toFixed(0)} on / ${result.peerWritesOff.toFixed(0)} off, ` +
    `messages per write ${result.messagesPerWriteOn.toFixed(2)} / ${result.messagesPerWriteOff.toFixed(2)}`);
}

/** Keeps the leader's CPU profile in tmpdir and prints its top rows. */
function logProfile(profile: unknown, phase: string): void {
  const kept = join(tmpdir(), `baton-lease-${phase.includes('follower') ? '' : 'leader-'}${phase}-${Date.now()}.cpuprofile`);
  writeFileSync(kept, JSON.stringify(profile));
  const summary = summarizeCpuProfile(profile as Parameters<typeof summarizeCpuProfile>[0], '', 30);
  log(`leader profile, ${phase} (${(summary.durationMs / 1000).toFixed(1)} s, idle ${summary.idlePercent.toFixed(1)}%), kept at ${kept}:`);
  for (const row of summary.rows) log(`  ${row.busyPercent.toFixed(1).padStart(5)}%  ${row.name}  ${row.location}`);
}

async function main(): Promise<void> {
  const otherDist = values['baton-dist'];
  const { cell, dataDir, names, inspectPort } = await startInspectableCell('baton-lease-bench-',
    otherDist === undefined ? undefined : join(resolve(otherDist), 'dist', 'src', 'cli', 'main.js'));
  try {
    await cell.waitReady(30_000);
    const agent = new Agent({ keepAlive: true, maxSockets: 64 });
    let leader = 0;
    for (let i = 0; i < 100 && leader === 0; i++) {
      leader = (await httpJson(agent, cell.clientUrl('n1'), 'GET', '/v1/cluster/status')).body.leader as number;
      if (leader === 0) await sleep(100);
    }
    const leaderName = `n${leader}`;
    const leaderBase = cell.clientUrl(leaderName);
    const leaderPid = findPids(join(dataDir, leaderName))[0] as number;
    const cellPids = names.flatMap((name) => findPids(join(dataDir, name)));
    const inspector = await InspectorSession.connect('127.0.0.1', inspectPort(leaderName));
    log(`cell up, leader ${leaderName} (pid ${leaderPid}); ${leaseCount} leases, ${leaseCount / perStream} streams, ` +
      `periods ${periodsMs.join(', ')} ms, ${seconds} s phases; load ${load()}; build ${otherDist ?? 'this one'}`);

    // Informative only (minutes before the phases): the same-run ratios below are what counts.
    const baselineSeconds = values['grants-only'] === true ? 0 : Math.min(seconds, 30);
    const baseline = await PutWorker.start(leaderBase, putClients);
    await sleep(baselineSeconds * 1000);
    const putAlone = (await baseline.stop()).all;
    log(`puts alone: ${putAlone.count} in ${baselineSeconds} s, p50 ${ms(putAlone.p50Us)} ms, p99 ${ms(putAlone.p99Us)} ms`);

    const heapBefore = await inspector.heapUsedAfterGc();
    const rssBefore = rssAnonKiB(leaderPid);
    const profileGrants = values.profile === true && values['grants-only'] === true;
    // A follower's profile beside the leader's: followers apply every entry too and serve their
    // share of the requests.
    const followerName = names.find((name) => name !== leaderName) as string;
    const followerInspector = profileGrants ? await InspectorSession.connect('127.0.0.1', inspectPort(followerName)) : null;
    if (profileGrants) await inspector.startProfile();
    await followerInspector?.startProfile();
    const grantStarted = performance.now();
    // CPU of the load client (this process), the leader and the whole cell over the grants: says
    // whether the client, the leader or the machine caps the rate.
    const clientCpuAtStart = process.cpuUsage();
    const leaderCpuAtStart = cpuSeconds([leaderPid]);
    const cellCpuAtStart = cpuSeconds(cellPids);
    const ids = await grantAll(cell.clientUrls(), leaseCount);
    const grantSeconds = (performance.now() - grantStarted) / 1000;
    const clientCpu = process.cpuUsage(clientCpuAtStart);
    const cores = (cpu: number): string => (cpu / grantSeconds).toFixed(2);
    log(`granted ${ids.length} in ${grantSeconds.toFixed(1)} s (${(ids.length / grantSeconds).toFixed(0)}/s, ` +
      `${grantBatch > 1 ? `batches of ${grantBatch}, ${grantInFlight} in flight per member` : `${grantConcurrency} at once`} over 3 members; load ${load()})`);
    log(`  CPU over the grants, cores: client ${cores((clientCpu.user + clientCpu.system) / 1e6)}, leader ` +
      `${cores(cpuSeconds([leaderPid]) - leaderCpuAtStart)}, cell ${cores(cpuSeconds(cellPids) - cellCpuAtStart)}; ` +
      `cell CPU-µs per grant ${((1e6 * (cpuSeconds(cellPids) - cellCpuAtStart)) / ids.length).toFixed(1)}`);
    const heapAfterGrants = await inspector.heapUsedAfterGc();
    log(`leader heap after GC: ${((heapAfterGrants - heapBefore) / ids.length).toFixed(0)} bytes per lease after the grants ` +
      `(${(heapBefore / 2 ** 20).toFixed(1)} -> ${(heapAfterGrants / 2 ** 20).toFixed(1)} MiB)`);
    if (values['grants-only'] === true) {
      if (profileGrants) logProfile(await inspector.stopProfile(), 'grants');
      if (followerInspector !== null) {
        logProfile(await followerInspector.stopProfile(), `grants-follower-${followerName}`);
        followerInspector.close();
      }
      inspector.close();
      agent.destroy();
      return;
    }

    const streams: KeepaliveStream[] = [];
    // --streams-to leader: every renewal stream on the leader (no forwarding), to tell the cost
    // of followers forwarding from the cost of the frames themselves.
    const streamsToLeader = values['streams-to'] === 'leader';
    for (let s = 0; s < ids.length / perStream; s++) {
      streams.push(await KeepaliveStream.open(streamsToLeader ? leaderBase : cell.clientUrl(names[s % 3] as string)));
    }
    for (const [p, periodMs] of periodsMs.entries()) {
      const steadyFollower = p === 0 && values.profile === true
        ? await InspectorSession.connect('127.0.0.1', inspectPort(names.find((name) => name !== leaderName) as string))
        : null;
      if (p === 0 && values.profile === true) await inspector.startProfile();
      await steadyFollower?.startProfile();
      const result = await alternatingPhase(leaderBase, leaderPid, cellPids, seconds, (state) => streams.map(async (stream, s) => {
        const mine = ids.slice(s * perStream, (s + 1) * perStream);
        // Staggered slots, as independent clients would be; a slot in an off window is skipped.
        let next = performance.now() + (s / streams.length) * periodMs;
        while (state.running) {
          await sleep(Math.max(0, next - performance.now()));
          next += periodMs;
          if (!state.running || !state.renewing) continue;
          const answer = await stream.keepalive(mine);
          state.frames.record(answer.latencyUs);
          state.renewed += answer.renewed;
          next = Math.max(next, performance.now());
        }
      }));
      if (p === 0 && values.profile === true) {
        logProfile(await inspector.stopProfile(), 'steady');
      }
      if (steadyFollower !== null) {
        logProfile(await steadyFollower.stopProfile(), 'steady-follower');
        steadyFollower.close();
      }
      logPhase(`steady, every ${periodMs} ms`, ` (target ${(ids.length * 1000 / periodMs).toFixed(0)}/s)`, result);
    }
    for (const stream of streams) stream.close();
    // Once the streams are gone (their sessions are connection memory, not lease memory), what
    // the heap kept is the leases: the leader's deadlines (the table itself is in LMDB).
    await sleep(2_000);
    const heapAfterRenewals = await inspector.heapUsedAfterGc();
    log(`leader heap after GC: ${((heapAfterRenewals - heapBefore) / ids.length).toFixed(0)} bytes per lease after renewals ` +
      `and closing the streams (${(heapAfterRenewals / 2 ** 20).toFixed(1)} MiB; anonymous RSS grew ` +
      `${(((rssAnonKiB(leaderPid) - rssBefore) * 1024) / ids.length).toFixed(0)} bytes per lease; the table in LMDB is ` +
      `file-backed, not counted)`);

    // Maximum renewals/s: 8 streams to the leader, each keeping 2 frames of 1,000 IDs in flight.
    const maxStreams = await Promise.all(Array.from({ length: 8 }, () => KeepaliveStream.open(leaderBase)));
    const batch = 1000;
    const max = await alternatingPhase(leaderBase, leaderPid, cellPids, maxSeconds, (state) => maxStreams.flatMap((stream, s) => [0, 1].map(async (lane) => {
      for (let n = 0; state.running; n++) {
        if (!state.renewing) {
          await sleep(20);
          continue;
        }
        const from = ((s * 2 + lane + n * 16) * batch) % Math.max(batch, ids.length - batch);
        const answer = await stream.keepalive(ids.slice(from, from + batch));
        state.frames.record(answer.latencyUs);
        state.renewed += answer.renewed;
      }
    })));
    logPhase('maximum (1,000-ID frames, 8 streams x 2 in flight)', '', max);
    for (const stream of maxStreams) stream.close();
    inspector.close();
    agent.destroy();
    log(`expiry tracker heap: ${trackerHeapBytesPerLease(Math.max(ids.length, 100_000)).toFixed(0)} bytes per lease (in-process, --expose-gc)`);
  } finally {
    await cell.stopAll();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (isMainThread) await main();
else runPutWorker();
