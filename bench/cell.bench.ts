// `npm run bench:http`: Baton vs etcd in the same run over HTTP/JSON, on this machine (etcd through
// its JSON gateway, its slowest path: `npm run bench` drives etcd through gRPC instead). Starts a 3-process Baton cell
// and a 3-member etcd 3.4 cell on free loopback ports with their own temp data directories, drives
// both with the same closed-loop HTTP/1.1 client (Baton's native API, etcd's v3 JSON gateway),
// configuration by configuration, alternating which goes first, and prints medians and Baton ÷
// etcd ratios (throughput, p99, server CPU per op). Only same-run ratios mean anything here: the
// client shares the cores with both cells and with whatever else the machine is doing.
//
//   npm run bench:http                       all workloads, 1/16/64/256 clients, 3 x 4 s each (~10 min)
//   npm run bench:http -- --quick            1 and 64 clients, 1 x 2 s each (~1.5 min)
//   npm run bench:http -- --profile          Baton only: CPU profiles of the leader and a follower under put, 64 clients
//                                            (with --tls or --encrypt: of that cell)
//   npm run bench:http -- --alloc            Baton only: bytes allocated per op on the leader and a follower, by site
//   npm run bench:http -- --json             the same, plus every run as JSON on stdout
// Other flags: --workload LIST|all --clients 1,16,... --duration-s N --warmup-s N --repeats N
// --prime-s N (unrecorded load per workload on each cell first, default 3) --baton-only
// --endpoints all|leader|followers (Baton cells: which members the clients talk to; default all;
// followers: every write is forwarded). Baton's CPU is also reported for the leader and per follower.
// --baton-b DIR: also run a second Baton cell from another build (DIR/dist, e.g. the previous
// commit's) in the same run, interleaved, as system "baton-b": an A/B of two builds on one noisy
// machine, each against the same etcd runs. --encrypt-b: that cell with encryption at rest on (as
// --encrypt's cell; with --encrypt too, also printed: baton-enc ÷ baton-b, the two builds encrypted). --node-args "FLAGS" / --node-args-b "FLAGS": Node/V8
// flags for cell A's / cell B's members (with --baton-b . an A/B of flags on one build). In
// --profile mode each member's output is kept in $TMPDIR/baton-bench-NAME.log (e.g. --trace-gc).
// --tls: also run a second Baton cell with TLS everywhere (HTTPS with client certificates,
// mutual TLS between members), as system "baton-tls", and print its ratios to the plain cell
// (issue 25: with mTLS, put and get >= 90% of the same build without). --auth (with --tls): the
// TLS cell also enforces a policy, and the bench client calls as principal "bench" (not root),
// bound to a role with read/write/watch/lease on /bench/: the cost of every decision included.
// --encrypt: also run a second plain-HTTP Baton cell with encryption at rest on (a generated
// --encryption-key-file: the WAL encrypted and the store's records sealed, the default), as system
// "baton-enc", and print its ratios to the plain cell (issue 25: put throughput >= 90% of the same
// build). --encrypt-store CIPHER: that cell's --encryption-store-cipher (records, none, or
// lmdb-chacha8, experimental).
// --gateway: also drive Baton's etcd JSON gateway (the facade's port) with etcd's requests, as system
// "baton-gateway", and print its ratios to etcd's gateway (issue 26: the gateway >= 1.0x etcd's).
// --http-client undici|node: the load client's HTTP stack (default undici, about half node:http's
// CPU per request; node reproduces the figures recorded before session 23).
// Everything started here is stopped at the end, on errors and on Ctrl-C.
import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { summarizeCpuProfile } from '../src/bench/cpu-profile.js';
import { summarizeHeapProfile, type SamplingHeapProfile } from '../src/bench/heap-profile.js';
import { InspectorSession } from '../src/bench/inspector.js';
import { EtcdCell, etcdInstallHint, etcdVersion } from '../src/bench/etcd-cell.js';
import { populateKeys, runLoad } from '../src/bench/load.js';
import {
  defaultMatrix, endpointChoices, estimateSeconds, parseClientCounts, parseWorkloads, progressLine, runMatrix,
  type BenchTarget, type EndpointChoice, type MemberRoles,
} from '../src/bench/matrix.js';
import { leaderActivity } from '../src/bench/metrics-text.js';
import { freePorts } from '../src/bench/ports.js';
import { cpuSeconds, findPids } from '../src/bench/proc-cpu.js';
import { batonProtocol, etcdProtocol, type SystemName } from '../src/bench/protocols.js';
import { abTable, ratioTable, ratios, resultsTable, summarize, table } from '../src/bench/report.js';
import { ProcessCell } from '../src/node/testing/process-cell.js';
import { httpsRequest } from '../src/node/testing/cell-tls.js';
import { issueClientCert } from '../src/security/certs.js';
import { useBenchTls, useHttpClient } from '../src/bench/http-client.js';

const repoDir = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..');

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    quick: { type: 'boolean' },
    profile: { type: 'boolean' },
    alloc: { type: 'boolean' },
    json: { type: 'boolean' },
    'baton-only': { type: 'boolean' },
    'baton-b': { type: 'string' },
    'encrypt-b': { type: 'boolean' },
    gateway: { type: 'boolean' },
    tls: { type: 'boolean' },
    encrypt: { type: 'boolean' },
    'encrypt-store': { type: 'string' },
    auth: { type: 'boolean' },
    workload: { type: 'string' },
    clients: { type: 'string' },
    'duration-s': { type: 'string' },
    'warmup-s': { type: 'string' },
    repeats: { type: 'string' },
    'prime-s': { type: 'string' },
    'node-args': { type: 'string' },
    'node-args-b': { type: 'string' },
    endpoints: { type: 'string' },
    'http-client': { type: 'string' },
  },
  strict: true,
});

const httpClient = values['http-client'] ?? 'undici';
if (httpClient !== 'undici' && httpClient !== 'node') throw new Error('--http-client is undici or node');
useHttpClient(httpClient);

const quick = values.quick === true;
const alloc = values.alloc === true;
const profile = values.profile === true || alloc;
const defaultClients = profile ? '64' : quick ? '1,64' : '1,16,64,256';
const plan = {
  ...defaultMatrix,
  workloads: parseWorkloads(values.workload ?? (profile ? 'put' : 'all')),
  clients: parseClientCounts(values.clients ?? defaultClients),
  durationMs: 1000 * Number(values['duration-s'] ?? (profile ? 10 : quick ? 2 : 4)),
  warmupMs: 1000 * Number(values['warmup-s'] ?? (profile ? 2 : quick ? 0.5 : 1)),
  repeats: Number(values.repeats ?? (profile || quick ? 1 : 3)),
  // Unrecorded load on each cell first (see MatrixOptions.primeMs); --prime-s 0 turns it off.
  primeMs: 1000 * Number(values['prime-s'] ?? (quick ? 1.5 : 3)),
};
if (!(plan.durationMs > 0 && plan.warmupMs >= 0 && Number.isInteger(plan.repeats))) {
  throw new Error('--duration-s > 0, --warmup-s >= 0 and an integer --repeats >= 1 are required');
}
if (plan.repeats < 1) throw new Error('--repeats must be at least 1');
const endpoints = (values.endpoints ?? 'all') as EndpointChoice;
if (!endpointChoices.includes(endpoints)) throw new Error(`--endpoints takes ${endpointChoices.join(', ')}`);

/** Extra Node flags for each Baton member (A/B of V8 flags: same build as --baton-b, other flags). */
const nodeArgsA = splitArgs(values['node-args']);
const nodeArgsB = splitArgs(values['node-args-b']);

function splitArgs(text: string | undefined): string[] {
  return text === undefined ? [] : text.split(/\s+/).filter((a) => a.length > 0);
}

const workDir = mkdtempSync(join(tmpdir(), 'baton-bench-'));
const cleanups: (() => Promise<void>)[] = [];
let cleaning: Promise<void> | null = null;

function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const step of cleanups.reverse()) {
      await step().catch((e: Error) => log(`cleanup: ${e.message}`));
    }
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

function out(text: string): void {
  process.stdout.write(`${text}\n`);
}

/** Three members on six free ports: client ports first, then peer ports. */
async function memberPorts(prefix: string, grpc = false): Promise<
  { name: string; clientPort: number; peerPort: number; grpcPort?: number }[]
> {
  const ports = await freePorts(grpc ? 9 : 6);
  return [0, 1, 2].map((i) => ({
    name: `${prefix}${i + 1}`,
    clientPort: ports[i] as number,
    peerPort: ports[i + 3] as number,
    ...(grpc ? { grpcPort: ports[i + 6] as number } : {}),
  }));
}

async function startBaton(nodeArgs: (name: string) => readonly string[] = () => []): Promise<ProcessCell> {
  const cell = new ProcessCell({
    dataDir: join(workDir, 'baton'),
    output: 'pipe',
    members: await memberPorts('n', values.gateway === true),
    nodeArgs: (name) => [...nodeArgsA, ...nodeArgs(name)],
  });
  cleanups.push(() => cell.stopAll(10_000));
  cell.startAll();
  await cell.waitReady(60_000);
  return cell;
}

/** The same build with TLS on every listener and between members (certificates made with openssl). */
async function startSecureBaton(nodeArgs: (name: string) => readonly string[] = () => []): Promise<ProcessCell> {
  const dataDir = join(workDir, 'secure');
  const cell = new ProcessCell({
    dataDir,
    tlsDir: join(dataDir, 'certs'),
    output: 'pipe',
    members: await memberPorts('s'),
    nodeArgs: (name) => [...nodeArgsA, ...nodeArgs(name)],
  });
  const tls = cell.tls as NonNullable<ProcessCell['tls']>;
  cleanups.push(() => cell.stopAll(10_000));
  cell.startAll();
  await cell.waitReady(60_000);
  if (values.auth === true) {
    // Enabled by root (over its own HTTPS call), then the load runs as "bench".
    const policy = { enabled: true, roles: { bench: [{ prefix: '/bench/', ops: ['read', 'write', 'watch', 'lease'] }] }, bindings: { bench: ['bench'] } };
    const answer = await httpsRequest(`${cell.clientUrl(cell.names()[0] as string)}/v1/auth/policy`, {
      ca: tls.ca.cert, client: tls.root, method: 'PUT', body: JSON.stringify(policy), headers: { 'if-version': '0', 'content-type': 'application/json' },
    });
    if (answer.status !== 200) throw new Error(`enabling the bench policy: ${answer.status} ${answer.body}`);
    const bench = issueClientCert(tls.ca, 'bench');
    useBenchTls({ ca: readFileSync(tls.ca.cert), cert: readFileSync(bench.cert), key: readFileSync(bench.key) });
  } else {
    useBenchTls({ ca: readFileSync(tls.ca.cert), cert: readFileSync(tls.root.cert), key: readFileSync(tls.root.key) });
  }
  return cell;
}

/** Encryption at rest for a cell: a generated key-encryption key (in `dataDir`) for every member. */
function encryptionArgs(dataDir: string): string[] {
  const keyFile = join(dataDir, 'kek.hex');
  writeFileSync(keyFile, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
  return ['--encryption-key-file', keyFile, ...(values['encrypt-store'] === undefined ? [] : ['--encryption-store-cipher', values['encrypt-store']])];
}

/** The same build with encryption at rest: one generated key-encryption key for every member. */
async function startEncryptedBaton(nodeArgs: (name: string) => readonly string[] = () => []): Promise<ProcessCell> {
  const dataDir = join(workDir, 'encrypted');
  mkdirSync(dataDir, { recursive: true });
  const cell = new ProcessCell({
    dataDir,
    output: 'pipe',
    members: await memberPorts('c'),
    nodeArgs: (name) => [...nodeArgsA, ...nodeArgs(name)],
    extraArgs: encryptionArgs(dataDir),
  });
  cleanups.push(() => cell.stopAll(10_000));
  cell.startAll();
  await cell.waitReady(60_000);
  return cell;
}

/** What the bench needs of a cell of either build. */
interface BatonCell {
  clientUrls(): string[];
  clientUrl(name: string): string;
  names(): string[];
}

/** A cell of another build (its own ProcessCell, so its own server binary). */
async function startOtherBaton(buildDir: string): Promise<BatonCell> {
  // src/node/testing since issue 20; src/server in builds before it.
  const dist = join(resolve(buildDir), 'dist', 'src');
  const modulePath = [join(dist, 'node', 'testing', 'process-cell.js'), join(dist, 'server', 'process-cell.js')]
    .find((path) => existsSync(path)) ?? join(dist, 'node', 'testing', 'process-cell.js');
  const { ProcessCell: OtherCell } = (await import(modulePath)) as { ProcessCell: typeof ProcessCell };
  const dataDir = join(workDir, 'other');
  mkdirSync(dataDir, { recursive: true });
  const cell = new OtherCell({
    dataDir,
    output: 'pipe',
    members: await memberPorts('n'),
    nodeArgs: () => nodeArgsB,
    ...(values['encrypt-b'] === true ? { extraArgs: encryptionArgs(dataDir) } : {}),
  });
  cleanups.push(() => cell.stopAll(10_000));
  cell.startAll();
  await cell.waitReady(60_000);
  return cell;
}

async function startEtcd(): Promise<EtcdCell> {
  const cell = new EtcdCell(join(workDir, 'etcd'), await memberPorts('e'));
  cleanups.push(() => cell.stopAll(10_000));
  cell.startAll();
  await cell.waitReady(60_000);
  return cell;
}

async function compare(): Promise<void> {
  const batonOnly = values['baton-only'] === true;
  const version = batonOnly ? null : etcdVersion();
  if (version === null && !batonOnly) log(`${etcdInstallHint}\nRunning Baton alone (no ratios).`);
  const baton = await startBaton();
  const targets: BenchTarget[] = [{
    protocol: batonProtocol,
    urls: baton.clientUrls().map((u) => new URL(u)),
    serverPids: pidsOf(`${join(workDir, 'baton')}/`),
    roles: rolesOf(baton, join(workDir, 'baton')),
  }];
  if (values.gateway === true) {
    targets.push({
      protocol: { ...etcdProtocol, system: 'baton-gateway' as SystemName },
      urls: baton.names().map((name) => new URL(`http://${baton.grpcEndpoint(name)}`)),
      serverPids: pidsOf(`${join(workDir, 'baton')}/`),
      roles: rolesOf(baton, join(workDir, 'baton')),
    });
  }
  if (values.tls === true) {
    const secure = await startSecureBaton();
    targets.push({
      protocol: { ...batonProtocol, system: 'baton-tls' as SystemName },
      urls: secure.clientUrls().map((u) => new URL(u)),
      serverPids: pidsOf(`${join(workDir, 'secure')}/`),
      roles: rolesOf(secure, join(workDir, 'secure')),
    });
  }
  if (values.encrypt === true) {
    const encrypted = await startEncryptedBaton();
    targets.push({
      protocol: { ...batonProtocol, system: 'baton-enc' as SystemName },
      urls: encrypted.clientUrls().map((u) => new URL(u)),
      serverPids: pidsOf(`${join(workDir, 'encrypted')}/`),
      roles: rolesOf(encrypted, join(workDir, 'encrypted')),
    });
  }
  const otherBuild = values['baton-b'];
  if (otherBuild !== undefined) {
    const other = await startOtherBaton(otherBuild);
    targets.push({
      protocol: { ...batonProtocol, system: 'baton-b' as SystemName },
      urls: other.clientUrls().map((u) => new URL(u)),
      serverPids: pidsOf(join(workDir, 'other')),
      roles: rolesOf(other, join(workDir, 'other')),
    });
  }
  if (version !== null) {
    const etcd = await startEtcd();
    const serverPids = pidsOf(join(workDir, 'etcd'));
    targets.push({ protocol: etcdProtocol, urls: etcd.clientUrls(), serverPids });
  }
  const options = { ...plan, targets };
  const against = version === null ? '' : ` vs ${version}`;
  log(`bench: Baton${against}, ${plan.workloads.join(',')} x ${plan.clients.join(',')} clients ` +
    `x ${plan.repeats} runs of ${plan.durationMs / 1000} s (+${plan.warmupMs / 1000} s warm-up): ` +
    `about ${Math.ceil(estimateSeconds(options))} s`);
  const results = await runMatrix({ ...options, endpoints, onResult: (r) => log(progressLine(r)) });
  const summary = summarize(results);
  const comparison = ratios(summary);
  const gatewayComparison = ratios(summary, 'baton-gateway');
  const tlsComparison = ratios(summary.map((row) => (row.system === 'baton' ? { ...row, system: 'etcd' } : row)), 'baton-tls');
  const seconds = plan.durationMs / 1000;
  out(`\nMedians of ${plan.repeats} run(s), ${seconds} s each, same run, same client:`);
  out(resultsTable(summary));
  if (comparison.length > 0) {
    out('\nBaton ÷ etcd (ops ratio > 1: Baton serves more; p99 and cpu/op < 1: Baton is better):');
    out(ratioTable(comparison));
  }
  if (tlsComparison.length > 0) {
    out('\nBaton with TLS everywhere ÷ Baton plain (the "etcd" columns are the plain cell):');
    out(ratioTable(tlsComparison));
  }
  const encComparison = ratios(summary.map((row) => (row.system === 'baton' ? { ...row, system: 'etcd' } : row)), 'baton-enc');
  if (encComparison.length > 0) {
    out('\nBaton with encryption at rest ÷ Baton plain (the "etcd" columns are the plain cell):');
    out(ratioTable(encComparison));
  }
  if (gatewayComparison.length > 0) {
    out("\nBaton's gateway ÷ etcd's gateway (the same etcd JSON requests to both):");
    out(ratioTable(gatewayComparison));
  }
  if (otherBuild !== undefined) {
    out(`\nThis build ÷ ${otherBuild} (baton-b), median of same-repeat ratios (us/op < 1: this build spends less):`);
    out(abTable(results));
    if (values['encrypt-b'] === true && values.encrypt === true) {
      out(`\nThis build encrypted (baton-enc) ÷ ${otherBuild} encrypted (baton-b), median of same-repeat ratios:`);
      out(abTable(results, 'baton-enc'));
    }
  }
  if (values.json === true) {
    out(JSON.stringify({ etcd: version, results, summary, ratios: comparison }, null, 2));
  }
}

/** Baton only: load with every node under --cpu-prof, then the leader's self-time summary. */
async function profileLeader(): Promise<void> {
  const profileDir = join(workDir, 'profiles');
  // With --tls (--encrypt) the cell under the profiler is the TLS (encrypted) one: what it costs, and where.
  const profiled = (name: string): string[] => ['--cpu-prof', `--cpu-prof-dir=${join(profileDir, name)}`];
  const cellDir = values.tls === true ? 'secure' : values.encrypt === true ? 'encrypted' : 'baton';
  const baton = values.tls === true ? await startSecureBaton(profiled)
    : values.encrypt === true ? await startEncryptedBaton(profiled) : await startBaton(profiled);
  const allUrls = baton.clientUrls().map((u) => new URL(u));
  const leader = await leaderName(baton.clientUrl(baton.names()[0] as string));
  const workload = plan.workloads[0] ?? 'put';
  const clients = plan.clients[0] ?? 64;
  if (workload.startsWith('get')) {
    await populateKeys(batonProtocol, allUrls, plan.keyCount, plan.valueBytes);
  }
  const followerUrls = baton.names().filter((n) => n !== leader).map((n) => new URL(baton.clientUrl(n)));
  const urls = endpoints === 'all' ? allUrls : endpoints === 'leader' ? [new URL(baton.clientUrl(leader))] : followerUrls;
  log(`bench: profiling leader ${leader} under ${workload}, ${clients} clients (to ${endpoints}), ` +
    `${plan.durationMs / 1000} s`);
  const members = baton.names().map((name) => ({
    name,
    pids: findPids(join(workDir, cellDir, name)),
  }));
  let metricsBefore = Promise.resolve('');
  let metricsAfter = Promise.resolve('');
  let cpuBefore: number[] = [];
  let cpuAfter: number[] = [];
  const result = await runLoad({
    ...plan, protocol: batonProtocol, endpoints: urls, workload, clients,
    onWindow: (edge) => {
      const cpu = members.map((m) => cpuSeconds(m.pids));
      if (edge === 'start') [cpuBefore, metricsBefore] = [cpu, scrape(baton.clientUrl(leader))];
      else [cpuAfter, metricsAfter] = [cpu, scrape(baton.clientUrl(leader))];
    },
  });
  log(progressLine(result));
  const activity = leaderActivity(await metricsBefore, await metricsAfter);
  const cpuCores = members.map((m, i) => ({
    name: m.name,
    leader: m.name === leader,
    cores: ((cpuAfter[i] ?? 0) - (cpuBefore[i] ?? 0)) / result.seconds,
  }));
  await baton.stopAll(20_000); // a clean exit writes the profiles
  for (const name of baton.names()) {
    const logPath = join(tmpdir(), `baton-bench-${name}.log`);
    writeFileSync(logPath, baton.tail(name, 100_000));
    log(`bench: ${name}'s output kept at ${logPath}`);
  }
  const profilePath = mainThreadProfile(join(profileDir, leader));
  const kept = join(tmpdir(), `baton-leader-${workload}-${clients}-${Date.now()}.cpuprofile`);
  copyFileSync(profilePath, kept);
  const profileJson = JSON.parse(readFileSync(profilePath, 'utf8'));
  const summary = summarizeCpuProfile(profileJson, `${repoDir}/`, 30);
  const cpuText = cpuCores
    .map((c) => `${c.name}${c.leader ? ' (leader)' : ''} ${c.cores.toFixed(2)} cores`)
    .join(', ');
  out(`\nIn the measured window: ${result.opsPerSecond.toFixed(0)} ops/s; ` +
    `process CPU (all threads): ${cpuText}`);
  out(`Leader: ${activity.walFsyncs} Readys written (mean ${activity.walFsyncMeanMs.toFixed(1)} ms each), ` +
    `${activity.committedEntries} entries committed ` +
    `(${activity.entriesPerFsync.toFixed(1)} per Ready), proposal mean ` +
    `${activity.proposalMeanMs.toFixed(1)} ms (requests sent to the leader itself); ` +
    `${activity.walSyncs} fdatasyncs, ${activity.applyBatches} apply transactions`);
  out(`\nLeader ${leader} main thread, ${(summary.durationMs / 1000).toFixed(1)} s profiled ` +
    `(warm-up included), idle ${summary.idlePercent.toFixed(1)}%; profile kept at ${kept}`);
  out('Self time: time blocked inside a native call (an fsync, a lock) counts as that call\'s.');
  out(table(
    ['function', 'location', 'self ms', '% all', '% busy'],
    summary.rows.map((r) => [
      r.name, r.location, r.selfMs.toFixed(0), r.percent.toFixed(1), r.busyPercent.toFixed(1),
    ]),
  ));
  // A follower's work per op counts as much as the leader's: the three share the machine's cores.
  const follower = baton.names().find((n) => n !== leader);
  let followerSummary: ReturnType<typeof summarizeCpuProfile> | null = null;
  if (follower !== undefined) {
    const followerPath = mainThreadProfile(join(profileDir, follower));
    const keptFollower = join(tmpdir(), `baton-follower-${workload}-${clients}-${Date.now()}.cpuprofile`);
    copyFileSync(followerPath, keptFollower);
    followerSummary = summarizeCpuProfile(JSON.parse(readFileSync(followerPath, 'utf8')), `${repoDir}/`, 20);
    out(`\nFollower ${follower} main thread, idle ${followerSummary.idlePercent.toFixed(1)}%; ` +
      `profile kept at ${keptFollower}`);
    out(table(
      ['function', 'location', 'self ms', '% all', '% busy'],
      followerSummary.rows.map((r) => [
        r.name, r.location, r.selfMs.toFixed(0), r.percent.toFixed(1), r.busyPercent.toFixed(1),
      ]),
    ));
  }
  if (values.json === true) {
    out(JSON.stringify({ leader, result, cpuCores, activity, profile: summary, followerProfile: followerSummary }, null, 2));
  }
}

/**
 * Baton only: bytes allocated per op on the leader and a follower in the measured window, by
 * site and by the nearest line of our code (sampling heap profiler through the inspector).
 */
async function profileAllocations(): Promise<void> {
  const inspectPorts = await freePorts(3);
  const names = ['n1', 'n2', 'n3'];
  const inspectPort = (name: string): number => inspectPorts[names.indexOf(name)] as number;
  const baton = await startBaton((name) => [`--inspect=127.0.0.1:${inspectPort(name)}`]);
  const allUrls = baton.clientUrls().map((u) => new URL(u));
  const leader = await leaderName(baton.clientUrl(baton.names()[0] as string));
  const follower = baton.names().find((n) => n !== leader) as string;
  const followerUrls = baton.names().filter((n) => n !== leader).map((n) => new URL(baton.clientUrl(n)));
  const urls = endpoints === 'all' ? allUrls : endpoints === 'leader' ? [new URL(baton.clientUrl(leader))] : followerUrls;
  const workload = plan.workloads[0] ?? 'put';
  const clients = plan.clients[0] ?? 64;
  if (workload.startsWith('get')) await populateKeys(batonProtocol, allUrls, plan.keyCount, plan.valueBytes);
  const sessions = await Promise.all([leader, follower].map((n) => InspectorSession.connect('127.0.0.1', inspectPort(n))));
  log(`bench: allocation sampling on ${leader} (leader) and ${follower} under ${workload}, ${clients} clients`);
  let started: Promise<unknown> = Promise.resolve();
  let stopped: Promise<unknown[]> = Promise.resolve([]);
  const result = await runLoad({
    ...plan, protocol: batonProtocol, endpoints: urls, workload, clients,
    onWindow: (edge) => {
      if (edge === 'start') started = Promise.all(sessions.map((s) => s.startAllocationSampling()));
      else stopped = started.then(() => Promise.all(sessions.map((s) => s.stopAllocationSampling())));
    },
  });
  log(progressLine(result));
  const profiles = await stopped;
  for (const s of sessions) s.close();
  const ops = result.opsPerSecond * result.seconds;
  [leader, follower].forEach((name, i) => {
    const summary = summarizeHeapProfile(profiles[i] as SamplingHeapProfile, `${repoDir}/`, 25);
    const kept = join(tmpdir(), `baton-${name}-${workload}-${clients}-${Date.now()}.heapprofile`);
    writeFileSync(kept, JSON.stringify(profiles[i]));
    out(`\n${name}${name === leader ? ' (leader)' : ''}: ${(summary.totalBytes / ops).toFixed(0)} bytes ` +
      `allocated per op (${ops.toFixed(0)} ops); profile kept at ${kept}`);
    const rows = (list: typeof summary.bySite) =>
      list.map((r) => [r.name, r.location, (r.bytes / ops).toFixed(0), r.percent.toFixed(1)]);
    out('By the nearest line of our code:');
    out(table(['function', 'location', 'bytes/op', '%'], rows(summary.byOwnCode)));
    out('By allocating site:');
    out(table(['function', 'location', 'bytes/op', '%'], rows(summary.bySite)));
  });
}

async function leaderName(url: string): Promise<string> {
  const status = (await (await fetch(`${url}/v1/cluster/status`)).json()) as {
    leader: number;
    members: { id: number; name: string }[];
  };
  const leader = status.members.find((m) => m.id === status.leader)?.name;
  if (leader === undefined) throw new Error('no leader in /v1/cluster/status');
  return leader;
}

/** The main thread's profile is the largest one (the WAL sync worker writes its own). */
function mainThreadProfile(dir: string): string {
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')).map((f) => join(dir, f));
  const largest = files.sort((a, b) => statSync(b).size - statSync(a).size)[0];
  if (largest === undefined) throw new Error(`no profile written in ${dir}`);
  return largest;
}

/** The cell's leader and followers as of now: names from /v1/cluster/status, pids by data dir. */
function rolesOf(cell: BatonCell, dataDir: string): () => Promise<MemberRoles> {
  return async () => {
    const leader = await leaderName(cell.clientUrl(cell.names()[0] as string));
    const member = (name: string) => ({ url: new URL(cell.clientUrl(name)), pids: findPids(`${join(dataDir, name)}\0`) });
    return { leader: member(leader), followers: cell.names().filter((n) => n !== leader).map(member) };
  };
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

// A hard bound on the whole run: past it, stop every cell and fail rather than run on.
const bothTargets = [batonProtocol, etcdProtocol].map((protocol) => ({ protocol, urls: [] }));
const boundMs = 2000 * estimateSeconds({ ...plan, targets: bothTargets }) + 180_000;
const watchdog = setTimeout(() => {
  log(`bench: still running after ${Math.round(boundMs / 1000)} s; stopping`);
  void cleanup().then(() => process.exit(1));
}, boundMs);

try {
  await (alloc ? profileAllocations() : profile ? profileLeader() : compare());
} catch (error) {
  log(`bench failed: ${(error as Error).stack ?? String(error)}`);
  process.exitCode = 1;
} finally {
  clearTimeout(watchdog);
  await cleanup();
}
