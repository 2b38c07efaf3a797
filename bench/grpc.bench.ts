// `npm run bench:grpc`: Baton's etcd gRPC facade vs etcd itself, through the same gRPC client
// (src/bench/grpc-load.ts), in the same run: a 3-process Baton cell and a 3-member etcd cell on
// free loopback ports (temp data directories, default durability). Round by round, alternating
// which system goes first, each workload (put, linearizable get) runs at each client count; a
// linearizable get through Baton's native HTTP API runs too (same keys' size, same clients), so
// the facade's own cost shows as a same-run ratio. Server CPU per operation (all processes of
// each cell, from /proc, less the cell's idle CPU measured before each round: heartbeats and
// timers would otherwise weigh more on the slower system) is measured for every case: on a
// shared 2-core machine it is steadier than throughput. Prints each system's median over the rounds and the median of the per-round
// Baton ÷ etcd ratios: the machine is shared, so only same-run ratios mean anything.
//
//   npm run bench:grpc                      3 rounds of 5 s per case (about 3 minutes)
//   npm run bench:grpc -- --quick           1 round of 2 s per case
//   npm run bench:grpc -- --profile         Baton alone, gets on the leader's gRPC endpoint with
//                                           every node under --cpu-prof: the leader's self times
// Flags: --rounds N --seconds S --clients 1,16 --ops put,get --value-bytes N
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { summarizeCpuProfile } from '../src/bench/cpu-profile.js';
import { EtcdCell, etcdInstallHint, etcdVersion } from '../src/bench/etcd-cell.js';
import { runGrpcLoad, type GrpcOp } from '../src/bench/grpc-load.js';
import { populateKeys, runLoad } from '../src/bench/load.js';
import { freePorts } from '../src/bench/ports.js';
import { cpuSeconds, findPids } from '../src/bench/proc-cpu.js';
import { batonProtocol } from '../src/bench/protocols.js';
import { median, table } from '../src/bench/report.js';
import { ProcessCell } from '../src/node/testing/process-cell.js';

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    quick: { type: 'boolean' },
    profile: { type: 'boolean' },
    rounds: { type: 'string' },
    seconds: { type: 'string' },
    clients: { type: 'string' },
    ops: { type: 'string' },
    'value-bytes': { type: 'string' },
  },
  strict: true,
});
const quick = values.quick === true;
const profile = values.profile === true;
const rounds = Number(values.rounds ?? (quick ? 1 : 3));
const seconds = Number(values.seconds ?? (quick ? 2 : profile ? 10 : 5));
const clientCounts = (values.clients ?? (profile ? '16' : '1,16')).split(',').map(Number);
const valueBytes = Number(values['value-bytes'] ?? 256);
const ops = (values.ops ?? 'put,get').split(',') as GrpcOp[];
if (!ops.every((op) => op === 'put' || op === 'get')) throw new Error('--ops takes put and/or get');

const version = profile ? null : etcdVersion();
if (version === null && !profile) {
  console.error(etcdInstallHint);
  process.exit(2);
}
const dataDir = mkdtempSync(join(tmpdir(), 'baton-grpc-bench-'));
const profileDir = join(dataDir, 'profiles');
const ports = await freePorts(15);
const baton = new ProcessCell({
  dataDir: join(dataDir, 'baton'),
  members: [0, 1, 2].map((i) => ({ name: `n${i + 1}`, clientPort: ports[i] as number, peerPort: ports[3 + i] as number, grpcPort: ports[6 + i] as number })),
  ...(profile ? { output: 'pipe' as const, nodeArgs: (name: string) => ['--cpu-prof', `--cpu-prof-dir=${join(profileDir, name)}`] } : {}),
});
const etcd = new EtcdCell(
  join(dataDir, 'etcd'),
  [0, 1, 2].map((i) => ({ name: `e${i + 1}`, clientPort: ports[9 + i] as number, peerPort: ports[12 + i] as number })),
);
const systems = {
  baton: baton.names().map((name) => baton.grpcEndpoint(name)),
  etcd: etcd.clientUrls().map((url) => url.host),
};
type System = keyof typeof systems | 'baton-http';

interface Figures {
  opsPerSecond: number[];
  p50Us: number[];
  p99Us: number[];
  cpuUsPerOp: number[];
}
const figures = new Map<string, Figures>();
const record = (system: System, label: string, r: { opsPerSecond: number; p50: number; p99: number; cpuUsPerOp: number }): void => {
  const key = `${system}|${label}`;
  const entry = figures.get(key) ?? { opsPerSecond: [], p50Us: [], p99Us: [], cpuUsPerOp: [] };
  entry.opsPerSecond.push(r.opsPerSecond);
  entry.p50Us.push(r.p50);
  entry.p99Us.push(r.p99);
  entry.cpuUsPerOp.push(r.cpuUsPerOp);
  figures.set(key, entry);
};

let batonPids: number[] = [];
let etcdPids: number[] = [];
const serverCpu = (system: System): number => cpuSeconds(system === 'etcd' ? etcdPids : batonPids);
/** Each cell's CPU (cores) with no load, measured before each round. */
const idleCores = { baton: 0, etcd: 0 };
const idleOf = (system: System): number => (system === 'etcd' ? idleCores.etcd : idleCores.baton);

async function measureIdle(): Promise<void> {
  const started = performance.now();
  const before = { baton: serverCpu('baton'), etcd: serverCpu('etcd') };
  await new Promise((resolve) => setTimeout(resolve, 3_000));
  const elapsedS = (performance.now() - started) / 1000;
  idleCores.baton = (serverCpu('baton') - before.baton) / elapsedS;
  idleCores.etcd = (serverCpu('etcd') - before.etcd) / elapsedS;
  console.log(`idle: baton ${idleCores.baton.toFixed(3)} cores, etcd ${idleCores.etcd.toFixed(3)} cores`);
}

/** CPU per operation over a window, less the idle CPU of that window. */
function cpuUsPerOp(system: System, cpuS: number, windowS: number, ops: number): number {
  return (Math.max(0, cpuS - idleOf(system) * windowS) * 1e6) / Math.max(1, ops);
}

async function measure(system: System, op: GrpcOp, clients: number, round: number): Promise<void> {
  const label = `${op} x${clients}`;
  if (system === 'baton-http') {
    // The native API's linearizable get of a key the same size, through the same members.
    let cpuStart = 0;
    let cpuEnd = 0;
    let windowStart = 0;
    let windowEnd = 0;
    const result = await runLoad({
      protocol: batonProtocol,
      endpoints: baton.clientUrls().map((url) => new URL(url)),
      workload: 'get-lin',
      clients,
      durationMs: seconds * 1000,
      warmupMs: 500,
      keyCount: 100,
      valueBytes,
      requestTimeoutMs: 10_000,
      keyPrefix: '/grpc-bench-http/',
      onWindow: (edge) => {
        if (edge === 'start') [cpuStart, windowStart] = [serverCpu(system), performance.now()];
        else [cpuEnd, windowEnd] = [serverCpu(system), performance.now()];
      },
    });
    const perOp = cpuUsPerOp(system, cpuEnd - cpuStart, (windowEnd - windowStart) / 1000, result.completed);
    record(system, label, { opsPerSecond: result.opsPerSecond, p50: result.latency.p50Us, p99: result.latency.p99Us, cpuUsPerOp: perOp });
    report(round, system, label, result.opsPerSecond, result.latency.p50Us, result.latency.p99Us, perOp, 0);
    return;
  }
  const cpuStart = serverCpu(system);
  const windowStart = performance.now();
  const result = await runGrpcLoad({
    endpoints: systems[system],
    op,
    clients,
    durationMs: seconds * 1000,
    valueBytes,
    prefix: `bench-${round}-${op}-${clients}`,
  });
  // The warm-up puts (one per client) are counted too: negligible against seconds of load.
  const perOp = cpuUsPerOp(system, serverCpu(system) - cpuStart, (performance.now() - windowStart) / 1000, result.ops + clients);
  const summary = result.histogram.summary();
  record(system, label, { opsPerSecond: result.opsPerSecond, p50: summary.p50Us, p99: summary.p99Us, cpuUsPerOp: perOp });
  report(round, system, label, result.opsPerSecond, summary.p50Us, summary.p99Us, perOp, result.errors);
}

function report(round: number, system: System, label: string, opsPerSecond: number, p50Us: number, p99Us: number, cpuUsPerOp: number, errors: number): void {
  console.log(
    `round ${round + 1} ${system.padEnd(10)} ${label}: ${opsPerSecond.toFixed(0)} ops/s, ` +
      `p50 ${(p50Us / 1000).toFixed(2)} ms, p99 ${(p99Us / 1000).toFixed(2)} ms, server cpu ${(cpuUsPerOp / 1000).toFixed(3)} ms/op` +
      (errors > 0 ? `, ${errors} errors` : ''),
  );
}

async function compare(): Promise<void> {
  baton.startAll();
  etcd.startAll();
  await Promise.all([baton.waitReady(30_000), etcd.waitReady(30_000)]);
  batonPids = findPids(join(dataDir, 'baton'));
  etcdPids = findPids(join(dataDir, 'etcd'));
  if (ops.includes('get')) {
    await populateKeys(batonProtocol, baton.clientUrls().map((url) => new URL(url)), 100, valueBytes, '/grpc-bench-http/');
  }
  console.log(`Baton (etcd gRPC facade) vs ${version}: ${rounds} round(s), ${seconds} s per case, ${valueBytes}-byte values`);
  for (let round = 0; round < rounds; round++) {
    await measureIdle();
    const order: System[] = round % 2 === 0 ? ['baton', 'etcd'] : ['etcd', 'baton'];
    for (const op of ops) {
      for (const clients of clientCounts) {
        for (const system of op === 'get' ? [...order, 'baton-http' as const] : order) await measure(system, op, clients, round);
      }
    }
  }
  const rows: string[][] = [];
  const ratio = (xs: number[], ys: number[]): number => median(xs.map((x, i) => x / (ys[i] as number)));
  for (const op of ops) {
    for (const clients of clientCounts) {
      const label = `${op} x${clients}`;
      const b = figures.get(`baton|${label}`);
      const e = figures.get(`etcd|${label}`);
      if (b === undefined || e === undefined) continue;
      const h = figures.get(`baton-http|${label}`);
      rows.push([
        label,
        median(b.opsPerSecond).toFixed(0),
        median(e.opsPerSecond).toFixed(0),
        ratio(b.opsPerSecond, e.opsPerSecond).toFixed(2),
        ratio(b.p50Us, e.p50Us).toFixed(2),
        ratio(b.p99Us, e.p99Us).toFixed(2),
        (median(b.cpuUsPerOp) / 1000).toFixed(3),
        (median(e.cpuUsPerOp) / 1000).toFixed(3),
        ratio(b.cpuUsPerOp, e.cpuUsPerOp).toFixed(2),
        h === undefined ? '-' : (median(h.cpuUsPerOp) / 1000).toFixed(3),
        h === undefined ? '-' : ratio(b.cpuUsPerOp, h.cpuUsPerOp).toFixed(2),
      ]);
    }
  }
  console.log(
    table(
      ['case', 'baton ops/s', 'etcd ops/s', 'ops ratio', 'p50 ratio', 'p99 ratio', 'baton cpu ms/op', 'etcd cpu ms/op', 'cpu ratio', 'http cpu ms/op', 'grpc÷http cpu'],
      rows,
    ),
  );
  console.log('ratios are Baton ÷ etcd, the median of the per-round ratios (ops: higher is better for Baton; latency, cpu: lower);');
  console.log('cpu: all server processes of the cell per operation, less their idle CPU; "http": a linearizable get through Baton\'s native API');
}

/** Baton only: gets on the leader's gRPC endpoint, every node under --cpu-prof; the leader's self times. */
async function profileLeader(): Promise<void> {
  baton.startAll();
  await baton.waitReady(30_000);
  const status = (await (await fetch(`${baton.clientUrl('n1')}/v1/cluster/status`)).json()) as { leader: number; members: { id: number; name: string }[] };
  const leader = status.members.find((m) => m.id === status.leader)?.name;
  if (leader === undefined) throw new Error('no leader');
  batonPids = findPids(join(dataDir, 'baton', leader));
  const clients = clientCounts[0] ?? 16;
  const op = ops.includes('get') ? 'get' : 'put';
  const cpuStart = serverCpu('baton');
  const result = await runGrpcLoad({ endpoints: [baton.grpcEndpoint(leader)], op, clients, durationMs: seconds * 1000, valueBytes, prefix: 'profile' });
  const cpuUsPerOp = ((serverCpu('baton') - cpuStart) * 1e6) / Math.max(1, result.ops + clients);
  console.log(`${op} x${clients} on leader ${leader}: ${result.opsPerSecond.toFixed(0)} ops/s, leader process cpu ${(cpuUsPerOp / 1000).toFixed(3)} ms/op`);
  await baton.stopAll(20_000); // a clean exit writes the profiles
  const dir = join(profileDir, leader);
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')).map((f) => join(dir, f));
  const largest = files.sort((a, b) => statSync(b).size - statSync(a).size)[0];
  if (largest === undefined) throw new Error(`no profile written in ${dir}`);
  const kept = join(tmpdir(), `baton-grpc-${op}-${clients}-${Date.now()}.cpuprofile`);
  copyFileSync(largest, kept);
  const summary = summarizeCpuProfile(JSON.parse(readFileSync(largest, 'utf8')), `${process.cwd()}/`, 40);
  console.log(`leader main thread, ${(summary.durationMs / 1000).toFixed(1)} s profiled (start-up included), idle ${summary.idlePercent.toFixed(1)}%; profile kept at ${kept}`);
  console.log(table(['function', 'location', 'self ms', '% busy'], summary.rows.map((r) => [r.name, r.location, r.selfMs.toFixed(0), r.busyPercent.toFixed(1)])));
}

try {
  await (profile ? profileLeader() : compare());
} finally {
  await Promise.all([baton.stopAll(), etcd.stopAll()]);
  rmSync(dataDir, { recursive: true, force: true });
}
