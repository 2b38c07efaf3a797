// `npm run bench`: Baton vs etcd in the same run, on this machine. Starts a 3-process Baton cell
// and a 3-member etcd 3.4 cell on free loopback ports with their own temp data directories, drives
// both with the same closed-loop HTTP/1.1 client (Baton's native API, etcd's v3 JSON gateway),
// configuration by configuration, alternating which goes first, and prints medians and Baton ÷
// etcd ratios (throughput, p99, server CPU per op). Only same-run ratios mean anything here: the
// client shares the cores with both cells and with whatever else the machine is doing.
//
//   npm run bench                       all workloads, 1/16/64/256 clients, 3 x 4 s each (~9 min)
//   npm run bench -- --quick            1 and 64 clients, 1 x 2 s each (~1 min)
//   npm run bench -- --profile          Baton only: CPU profile of the leader under put, 64 clients
//   npm run bench -- --json             the same, plus every run as JSON on stdout
// Other flags: --workload LIST|all --clients 1,16,... --duration-s N --warmup-s N --repeats N
// --baton-only. Everything started here is stopped at the end, on errors and on Ctrl-C.
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { summarizeCpuProfile } from '../src/bench/cpu-profile.js';
import { EtcdCell, etcdInstallHint, etcdVersion } from '../src/bench/etcd-cell.js';
import { runLoad, populateKeys } from '../src/bench/load.js';
import {
  defaultMatrix, estimateSeconds, parseClientCounts, parseWorkloads, progressLine, runMatrix,
  type BenchTarget,
} from '../src/bench/matrix.js';
import { freePorts } from '../src/bench/ports.js';
import { leaderActivity } from '../src/bench/metrics-text.js';
import { cpuSeconds, findPids } from '../src/bench/proc-cpu.js';
import { batonProtocol, etcdProtocol } from '../src/bench/protocols.js';
import { ratioTable, ratios, resultsTable, summarize, table } from '../src/bench/report.js';
import { ProcessCell } from '../src/server/process-cell.js';

const repoDir = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..');

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    quick: { type: 'boolean' },
    profile: { type: 'boolean' },
    json: { type: 'boolean' },
    'baton-only': { type: 'boolean' },
    workload: { type: 'string' },
    clients: { type: 'string' },
    'duration-s': { type: 'string' },
    'warmup-s': { type: 'string' },
    repeats: { type: 'string' },
  },
  strict: true,
});

const quick = values.quick === true;
const profile = values.profile === true;
const workloads = parseWorkloads(values.workload ?? (profile ? 'put' : 'all'));
const clients = parseClientCounts(values.clients ?? (profile ? '64' : quick ? '1,64' : '1,16,64,256'));
const durationMs = 1000 * Number(values['duration-s'] ?? (profile ? 10 : quick ? 2 : 4));
const warmupMs = 1000 * Number(values['warmup-s'] ?? (profile ? 2 : quick ? 0.5 : 1));
const repeats = Number(values.repeats ?? (profile || quick ? 1 : 3));
if (!(durationMs > 0 && warmupMs >= 0 && Number.isInteger(repeats) && repeats >= 1)) {
  throw new Error('--duration-s > 0, --warmup-s >= 0 and an integer --repeats >= 1 are required');
}

const workDir = mkdtempSync(join(tmpdir(), 'baton-bench-'));
const cleanups: (() => Promise<void>)[] = [];
let cleaning: Promise<void> | null = null;
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const step of cleanups.reverse()) await step().catch((e: Error) => log(`cleanup: ${e.message}`));
    rmSync(workDir, { recursive: true, force: true });
  })();
  return cleaning;
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`bench: ${signal}, stopping every cell`);
    void cleanup().then(() => process.exit(130));
  });
}

function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

async function startBaton(nodeArgs?: (name: string) => readonly string[]): Promise<ProcessCell> {
  const ports = await freePorts(6);
  const cell = new ProcessCell({
    dataDir: join(workDir, 'baton'),
    output: 'pipe',
    members: [0, 1, 2].map((i) => ({ name: `n${i + 1}`, clientPort: ports[i] as number, peerPort: ports[i + 3] as number })),
    ...(nodeArgs === undefined ? {} : { nodeArgs }),
  });
  cleanups.push(() => cell.stopAll(10_000));
  cell.startAll();
  await cell.waitReady(30_000);
  return cell;
}

async function startEtcd(): Promise<EtcdCell> {
  const ports = await freePorts(6);
  const cell = new EtcdCell(
    join(workDir, 'etcd'),
    [0, 1, 2].map((i) => ({ name: `e${i + 1}`, clientPort: ports[i] as number, peerPort: ports[i + 3] as number })),
  );
  cleanups.push(() => cell.stopAll(10_000));
  cell.startAll();
  await cell.waitReady(30_000);
  return cell;
}

async function compare(): Promise<void> {
  const version = values['baton-only'] === true ? null : etcdVersion();
  if (version === null && values['baton-only'] !== true) log(`${etcdInstallHint}\nRunning Baton alone (no ratios).`);
  const baton = await startBaton();
  const targets: BenchTarget[] = [{
    protocol: batonProtocol,
    urls: baton.clientUrls().map((u) => new URL(u)),
    serverPids: pidsOf(join(workDir, 'baton')),
  }];
  if (version !== null) {
    const etcd = await startEtcd();
    targets.push({ protocol: etcdProtocol, urls: etcd.clientUrls(), serverPids: pidsOf(join(workDir, 'etcd')) });
  }
  const options = { ...defaultMatrix, targets, workloads, clients, durationMs, warmupMs, repeats };
  log(`bench: Baton${version === null ? '' : ` vs ${version}`}, ${workloads.join(',')} x ${clients.join(',')} clients ` +
    `x ${repeats} runs of ${durationMs / 1000} s (+${warmupMs / 1000} s warm-up): about ${Math.ceil(estimateSeconds(options))} s`);
  const results = await runMatrix({ ...options, onResult: (r) => log(progressLine(r)) });
  const summary = summarize(results);
  const comparison = ratios(summary);
  process.stdout.write(`\nMedians of ${repeats} run(s), ${durationMs / 1000} s each, same run, same client:\n`);
  process.stdout.write(`${resultsTable(summary)}\n`);
  if (comparison.length > 0) {
    process.stdout.write('\nBaton ÷ etcd (ops ratio > 1: Baton serves more; p99 and cpu/op ratios < 1: Baton is better):\n');
    process.stdout.write(`${ratioTable(comparison)}\n`);
  }
  if (values.json === true) {
    process.stdout.write(`${JSON.stringify({ etcd: version, results, summary, ratios: comparison }, null, 2)}\n`);
  }
}

/** Baton only: put load with every node under --cpu-prof, then the leader's self-time summary. */
async function profileLeader(): Promise<void> {
  const profileDir = join(workDir, 'profiles');
  const baton = await startBaton((name) => [`--cpu-prof`, `--cpu-prof-dir=${join(profileDir, name)}`]);
  const urls = baton.clientUrls().map((u) => new URL(u));
  const status = (await (await fetch(`${urls[0]?.origin}/v1/cluster/status`)).json()) as {
    leader: number;
    members: { id: number; name: string }[];
  };
  const leader = status.members.find((m) => m.id === status.leader)?.name;
  if (leader === undefined) throw new Error('no leader in /v1/cluster/status');
  const workload = workloads[0] ?? 'put';
  const clientCount = clients[0] ?? 64;
  if (workload.startsWith('get')) await populateKeys(batonProtocol, urls, defaultMatrix.keyCount, defaultMatrix.valueBytes);
  log(`bench: profiling leader ${leader} under ${workload}, ${clientCount} clients, ${durationMs / 1000} s`);
  const leaderUrl = baton.clientUrl(leader);
  const memberPids = baton.names().map((name) => ({ name, pids: findPids(join(workDir, 'baton', name)) }));
  let metricsBefore = '';
  let cpuBefore: number[] = [];
  let cpuAfter: number[] = [];
  let metricsAfter: Promise<string> = Promise.resolve('');
  const result = await runLoad({
    ...defaultMatrix, protocol: batonProtocol, endpoints: urls, workload, clients: clientCount, durationMs, warmupMs,
    onWindow: (edge) => {
      const cpu = memberPids.map((m) => cpuSeconds(m.pids));
      if (edge === 'start') {
        cpuBefore = cpu;
        void scrape(leaderUrl).then((text) => (metricsBefore = text));
      } else {
        cpuAfter = cpu;
        metricsAfter = scrape(leaderUrl);
      }
    },
  });
  log(progressLine(result));
  const activity = leaderActivity(metricsBefore, await metricsAfter);
  const cpuCores = memberPids.map((m, i) => ({
    name: m.name,
    leader: m.name === leader,
    cores: ((cpuAfter[i] ?? 0) - (cpuBefore[i] ?? 0)) / result.seconds,
  }));
  process.stdout.write(`\nIn the measured window: ${result.opsPerSecond.toFixed(0)} ops/s; process CPU (all threads) ` +
    `${cpuCores.map((c) => `${c.name}${c.leader ? ' (leader)' : ''} ${c.cores.toFixed(2)} cores`).join(', ')}\n` +
    `Leader: ${activity.walFsyncs} WAL fsyncs (mean ${activity.walFsyncMeanMs.toFixed(1)} ms), ` +
    `${activity.committedEntries} entries committed (${activity.entriesPerFsync.toFixed(1)} per fsync), ` +
    `proposal mean ${activity.proposalMeanMs.toFixed(1)} ms (requests sent to the leader itself)\n`);
  await baton.stopAll(20_000); // a clean exit writes the profiles
  const leaderDir = join(profileDir, leader);
  const files = readdirSync(leaderDir).filter((f) => f.endsWith('.cpuprofile'));
  const main = files.map((f) => join(leaderDir, f)).sort((a, b) => sizeOf(b) - sizeOf(a))[0];
  if (main === undefined) throw new Error(`no profile written in ${leaderDir}`);
  const kept = join(tmpdir(), `baton-leader-${workload}-${clientCount}-${Date.now()}.cpuprofile`);
  copyFileSync(main, kept);
  const summary = summarizeCpuProfile(JSON.parse(readFileSync(main, 'utf8')), `${repoDir}/`, 30);
  process.stdout.write(`\nLeader ${leader} main thread, ${(summary.durationMs / 1000).toFixed(1)} s profiled ` +
    `(warm-up included), idle ${summary.idlePercent.toFixed(1)}%; profile kept at ${kept}\n`);
  process.stdout.write(`${table(
    ['function', 'location', 'self ms', '% all', '% busy'],
    summary.rows.map((r) => [r.name, r.location, r.selfMs.toFixed(0), r.percent.toFixed(1), r.busyPercent.toFixed(1)]),
  )}\n`);
  if (values.json === true) {
    process.stdout.write(`${JSON.stringify({ leader, result, cpuCores, activity, profile: summary }, null, 2)}\n`);
  }
}

function pidsOf(dataDir: string): () => number[] {
  let pids: number[] = [];
  return () => {
    if (pids.length === 0) pids = findPids(dataDir);
    return pids;
  };
}

async function scrape(url: string): Promise<string> {
  try {
    return await (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
  } catch {
    return '';
  }
}

function sizeOf(path: string): number {
  return readFileSync(path).length;
}

// A hard bound on the whole run: past it, stop every cell and fail rather than run on.
const boundMs = 2 * (estimateSeconds({ ...defaultMatrix, targets: [batonProtocol, etcdProtocol].map((protocol) => ({ protocol, urls: [] })), workloads, clients, durationMs, warmupMs, repeats }) * 1000) + 180_000;
const watchdog = setTimeout(() => {
  log(`bench: still running after ${Math.round(boundMs / 1000)} s; stopping`);
  void cleanup().then(() => process.exit(1));
}, boundMs);

try {
  await (profile ? profileLeader() : compare());
} catch (error) {
  log(`bench failed: ${(error as Error).stack ?? String(error)}`);
  process.exitCode = 1;
} finally {
  clearTimeout(watchdog);
  await cleanup();
}
