// `npm run bench`: Baton vs etcd 3.4 in the same run, etcd at its best. etcd is driven through its
// v3 gRPC API by etcd's own Go client (clientv3), the way etcd's tools/benchmark measures it; Baton
// twice: through its etcd gRPC facade by the same Go client, and through its native HTTP API by
// Baton's own closed-loop client (src/bench/load.ts, in this process; its CPU is measured too).
// A client that is not the bottleneck: each client's own CPU is printed. The Go load client
// (bench/go/loadgen/main.go) is built once in GOPATH mode against Debian's packaged etcd sources
// (golang-go, golang-etcd-server-dev: /usr/share/gocode) and cached in $TMPDIR.
// (`npm run bench:http` is the older bench: etcd through its JSON gateway, its slowest path, and
// Baton's CPU and allocation profiles.)
//
// Starts a 3-member etcd cell and a 3-process Baton cell (--listen-grpc on each) on free loopback
// ports with temp data directories (default durability), runs every workload unrecorded on each
// system first (Node's JIT), then for each workload x client count runs the systems back to back,
// the order alternating between repeats. Server CPU is all of a cell's processes, from /proc, over
// the client's measured window. Prints per-system medians and the median of the same-repeat
// Baton ÷ etcd ratios: on a shared machine only same-run ratios mean anything.
//
//   npm run bench                                    put,get x 1,16,64,256 x 3 repeats of 5 s
//   npm run bench -- --quick                         put,get x 1,64 x 1 repeat of 2 s
//   npm run bench -- --workload put --clients 16,64,256 --repeats 3
// Flags: --workload put,get,txn (get is linearizable)  --clients LIST  --repeats N  --seconds S
//        --warmup-s S  --quick  --connections N (gRPC connections, default 8)  --endpoints
//        all|leader|followers (which members the clients talk to; default all three, like clientv3
//        given 3 endpoints; followers: every write is forwarded; --leader-only = --endpoints
//        leader)  --key-space N  --value-bytes N  --prime-s S (unrecorded load per workload
//        first, default 3)  --json  --grpc-only (no native-API runs)  --baton-b DIR (also a Baton
//        cell of another build, DIR/dist, interleaved: an A/B, through gRPC)  --baton-only (no
//        etcd cell)  --node-args "FLAGS" / --node-args-b "FLAGS" (Node flags for each Baton cell's
//        members). Baton's CPU is also reported for its leader and per follower.
//        --tls: also a Baton cell and an etcd cell with mutual TLS on every listener (client
//        and peer; one throwaway CA, the Go client presents a certificate), as baton-tls and
//        etcd-tls, and each TLS ÷ plain ratio (issue 25: with mTLS and authorization, >= 0.9x).
//        --auth (with --tls): baton-tls also enforces a policy and the client is principal
//        "bench" (read/write on /gobench/ only). etcd-tls has no auth: it is the TLS reference.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { EtcdCell, etcdInstallHint, etcdVersion, type EtcdMember } from '../src/bench/etcd-cell.js';
import { populateKeys, runLoad } from '../src/bench/load.js';
import { parseClientCounts } from '../src/bench/matrix.js';
import { freePorts } from '../src/bench/ports.js';
import { cpuSeconds, findPids } from '../src/bench/proc-cpu.js';
import { batonProtocol, type WorkloadName } from '../src/bench/protocols.js';
import { median, table } from '../src/bench/report.js';
import { CellTls, httpsRequest } from '../src/node/testing/cell-tls.js';
import { ProcessCell } from '../src/node/testing/process-cell.js';
import { issueClientCert, issueMemberCert, type CertFiles } from '../src/security/certs.js';

const repoDir = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..');
const loadgenSource = join(repoDir, 'bench', 'go', 'loadgen', 'main.go');
const gocode = '/usr/share/gocode';
const goInstallHint =
  'The Go load client needs Go and etcd\'s Go sources. On Debian/Ubuntu (as root): ' +
  'apt-get update && apt-get install -y golang-go golang-etcd-server-dev etcd-server etcd-client';

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    workload: { type: 'string' },
    clients: { type: 'string' },
    repeats: { type: 'string' },
    seconds: { type: 'string' },
    'warmup-s': { type: 'string' },
    connections: { type: 'string' },
    'leader-only': { type: 'boolean' },
    endpoints: { type: 'string' },
    'baton-b': { type: 'string' },
    'baton-only': { type: 'boolean' },
    'grpc-only': { type: 'boolean' },
    quick: { type: 'boolean' },
    'node-args': { type: 'string' },
    'node-args-b': { type: 'string' },
    'key-space': { type: 'string' },
    'value-bytes': { type: 'string' },
    'prime-s': { type: 'string' },
    json: { type: 'boolean' },
    tls: { type: 'boolean' },
    auth: { type: 'boolean' },
  },
  strict: true,
});

type Workload = 'put' | 'get' | 'txn';
const workloads = (values.workload ?? 'put,get').split(',').map((w) => w.trim()) as Workload[];
if (!workloads.every((w) => w === 'put' || w === 'get' || w === 'txn')) throw new Error('--workload takes put, get and/or txn');
const quick = values.quick === true;
const clientCounts = parseClientCounts(values.clients ?? (quick ? '1,64' : '1,16,64,256'));
const repeats = Number(values.repeats ?? (quick ? 1 : 3));
const seconds = Number(values.seconds ?? (quick ? 2 : 5));
const warmupS = Number(values['warmup-s'] ?? (quick ? 0.5 : 1));
const connections = Number(values.connections ?? 8);
const endpointChoice = values['leader-only'] === true ? 'leader' : (values.endpoints ?? 'all');
if (!['all', 'leader', 'followers'].includes(endpointChoice)) throw new Error('--endpoints takes all, leader or followers');
const batonOnly = values['baton-only'] === true;
const otherBuild = values['baton-b'];
const splitArgs = (text: string | undefined): string[] => (text === undefined ? [] : text.split(/\s+/).filter((a) => a.length > 0));
const keySpace = Number(values['key-space'] ?? 1000);
const valueBytes = Number(values['value-bytes'] ?? 256);
const primeS = Number(values['prime-s'] ?? (quick ? 1.5 : 3));
const withNative = values['grpc-only'] !== true;
const withTls = values.tls === true;
const withAuth = values.auth === true;
if (withAuth && !withTls) throw new Error('--auth needs --tls');
if (!(Number.isInteger(repeats) && repeats >= 1 && seconds > 0 && seconds <= 300 && warmupS >= 0 && primeS >= 0)) {
  throw new Error('--repeats >= 1 (integer), 0 < --seconds <= 300, --warmup-s >= 0 and --prime-s >= 0 are required');
}
if (!(Number.isInteger(connections) && connections >= 1 && connections <= 256)) throw new Error('--connections takes 1..256');

function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

/** Builds the Go client once per source and Go version; returns the binary's path. */
function buildLoadgen(): string {
  const go = spawnSync('go', ['version'], { encoding: 'utf8', timeout: 30_000 });
  if (go.status !== 0 || typeof go.stdout !== 'string') throw new Error(`no Go toolchain on PATH (go version failed). ${goInstallHint}`);
  if (!existsSync(join(gocode, 'src', 'go.etcd.io', 'etcd', 'clientv3', 'client.go'))) {
    throw new Error(`etcd's Go client sources are missing (${gocode}/src/go.etcd.io/etcd/clientv3). ${goInstallHint}`);
  }
  const hash = createHash('sha256').update(readFileSync(loadgenSource)).update(go.stdout).digest('hex').slice(0, 16);
  const cacheDir = join(tmpdir(), 'baton-gobench');
  const binary = join(cacheDir, `loadgen-${hash}`);
  if (existsSync(binary)) return binary;
  mkdirSync(cacheDir, { recursive: true });
  const partial = `${binary}.${process.pid}.tmp`;
  log(`bench: building the Go load client (GOPATH mode, ${gocode}) into ${binary}`);
  const built = spawnSync('go', ['build', '-o', partial, loadgenSource], {
    encoding: 'utf8',
    timeout: 600_000,
    cwd: cacheDir,
    env: {
      ...process.env,
      GO111MODULE: 'off',
      GOPATH: `${join(cacheDir, 'gopath')}:${gocode}`,
      GOCACHE: join(cacheDir, 'gocache'),
      GOFLAGS: '',
      GOPROXY: 'off',
      CGO_ENABLED: '0',
    },
  });
  if (built.status !== 0) throw new Error(`go build of ${loadgenSource} failed:\n${built.stderr}${built.stdout}\n${goInstallHint}`);
  renameSync(partial, binary);
  return binary;
}

interface LoadgenResult {
  workload: Workload;
  endpoints: string[];
  conns: number;
  clients: number;
  seconds: number;
  ops: number;
  ops_per_s: number;
  p50_ms: number;
  p99_ms: number;
  p999_ms: number;
  max_ms: number;
  errors: number;
  error_samples: string[];
  client_cpu_s: number;
  client_cpu_cores: number;
}

interface Run extends LoadgenResult {
  system: System;
  repeat: number;
  serverCpuCores: number;
  serverCpuUsPerOp: number;
  /** Baton: the leader's CPU per op, and a follower's (the followers' mean). */
  leaderCpuUsPerOp: number;
  followerCpuUsPerOp: number;
}

/** baton-native: the 'baton' cell through its native HTTP API and Baton's own bench client. */
/** baton-tls / etcd-tls (--tls): a second cell of each with mutual TLS on every listener. */
type System = 'baton' | 'baton-native' | 'baton-b' | 'baton-tls' | 'etcd' | 'etcd-tls';
const nativeWorkload = { put: 'put', get: 'get-lin', txn: 'txn' } as const satisfies Record<Workload, WorkloadName>;

const version = batonOnly ? null : etcdVersion();
if (version === null && !batonOnly) {
  log(etcdInstallHint);
  process.exit(2);
}
let loadgen: string;
try {
  loadgen = buildLoadgen();
} catch (e) {
  log((e as Error).message);
  process.exit(2);
}

const workDir = mkdtempSync(join(tmpdir(), 'baton-gogrpc-bench-'));
const ports = await freePorts(39);

/** What the bench uses of a Baton cell, of this build or another one. */
interface BatonCell {
  names(): string[];
  grpcEndpoint(name: string): string;
  clientUrl(name: string): string;
  startAll(): void;
  waitReady(timeoutMs: number): Promise<void>;
  stopAll(timeoutMs: number): Promise<void>;
}

async function batonCell(dir: string, portsAt: number, build: string | null, nodeArgs: string[], tls = false): Promise<BatonCell> {
  let Cell: typeof ProcessCell = ProcessCell;
  if (build !== null) {
    const modulePath = join(resolve(build), 'dist', 'src', 'node', 'testing', 'process-cell.js');
    if (!existsSync(modulePath)) throw new Error(`--baton-b ${build}: no ${modulePath} (built?)`);
    Cell = ((await import(modulePath)) as { ProcessCell: typeof ProcessCell }).ProcessCell;
  }
  return new Cell({
    dataDir: join(workDir, dir),
    ...(tls ? { tlsDir: join(workDir, dir, 'certs') } : {}),
    output: 'pipe',
    members: [0, 1, 2].map((i) => ({
      name: `n${i + 1}`, clientPort: ports[portsAt + i] as number, peerPort: ports[portsAt + 3 + i] as number,
      grpcPort: ports[portsAt + 6 + i] as number,
    })),
    nodeArgs: () => nodeArgs,
  });
}

const batons: Partial<Record<System, BatonCell>> = { baton: await batonCell('baton', 0, null, splitArgs(values['node-args'])) };
if (otherBuild !== undefined) batons['baton-b'] = await batonCell('other', 9, otherBuild, splitArgs(values['node-args-b']));
if (withTls) batons['baton-tls'] = await batonCell('baton-tls', 24, null, splitArgs(values['node-args']), true);
/** The directory of each Baton cell's data (and so of its processes' command lines). */
const batonDirs: Partial<Record<System, string>> = { baton: 'baton', 'baton-b': 'other', 'baton-tls': 'baton-tls' };
/** --tls: the secure Baton cell's CA, and the certificate the Go client presents to each TLS system. */
const secure = withTls ? (batons['baton-tls'] as ProcessCell).tls as CellTls : null;
const clientCerts: Partial<Record<System, CertFiles>> = {};
const etcdMembers = (at: number): EtcdMember[] =>
  [0, 1, 2].map((i) => ({ name: `e${i + 1}`, clientPort: ports[at + i] as number, peerPort: ports[at + 3 + i] as number }));
const etcd = batonOnly ? null : new EtcdCell(join(workDir, 'etcd'), etcdMembers(18));
const etcdTls = batonOnly || secure === null ? null : new EtcdCell(join(workDir, 'etcd-tls'), etcdMembers(33), 'etcd', {
  ca: secure.ca.cert,
  member: (name) => issueMemberCert(secure.ca, 'etcd', name),
  client: secure.root,
});
const systems: System[] = [
  ...(Object.keys(batons) as System[]), ...(withNative ? ['baton-native' as const] : []), ...(etcd === null ? [] : ['etcd' as const]),
  ...(etcdTls === null ? [] : ['etcd-tls' as const]),
];
/** The cell a system's runs go to (baton-native is the 'baton' cell through another API). */
const cellOf = (system: System): System => (system === 'baton-native' ? 'baton' : system);
const endpoints: Partial<Record<System, string[]>> = {};
for (const [system, cell] of Object.entries(batons) as [System, BatonCell][]) {
  endpoints[system] = cell.names().map((name) => cell.grpcEndpoint(name));
}
if (etcd !== null) endpoints.etcd = etcd.clientUrls().map((url) => url.host);
if (etcdTls !== null) endpoints['etcd-tls'] = etcdTls.clientUrls().map((url) => url.host);
const pids: Record<System, number[]> = { baton: [], 'baton-native': [], 'baton-b': [], 'baton-tls': [], etcd: [], 'etcd-tls': [] };

/** GET over the cell's own scheme (a TLS cell: trusting its CA, as root). */
async function getJson(cell: BatonCell, url: string): Promise<unknown> {
  const tls = (cell as ProcessCell).tls ?? null;
  if (tls === null) return (await fetch(url)).json();
  const answer = await httpsRequest(url, { ca: tls.ca.cert, client: tls.root });
  if (answer.status !== 200) throw new Error(`${url}: ${answer.status} ${answer.body}`);
  return JSON.parse(answer.body);
}

/**
 * --auth: the secure Baton cell enforces a policy (enabled by root), and the Go client calls as
 * principal "bench", bound to read and write on /gobench/ only: every request pays its decision.
 */
async function enableBenchPolicy(cell: ProcessCell, tls: CellTls): Promise<CertFiles> {
  const policy = { enabled: true, roles: { bench: [{ prefix: '/gobench/', ops: ['read', 'write'] }] }, bindings: { bench: ['bench'] } };
  const answer = await httpsRequest(`${cell.clientUrl(cell.names()[0] as string)}/v1/auth/policy`, {
    ca: tls.ca.cert, client: tls.root, method: 'PUT', body: JSON.stringify(policy), headers: { 'if-version': '0', 'content-type': 'application/json' },
  });
  if (answer.status !== 200) throw new Error(`enabling the bench policy: ${answer.status} ${answer.body}`);
  return issueClientCert(tls.ca, 'bench');
}

/** A Baton cell's leader and followers as of now (pids by data dir, leader from /v1/cluster/status). */
async function rolesOf(system: System): Promise<{ leader: string; followers: string[]; pids: Record<string, number[]> } | null> {
  const cell = batons[cellOf(system)];
  if (cell === undefined) return null;
  const status = (await getJson(cell, `${cell.clientUrl('n1')}/v1/cluster/status`)) as { leader: number; members: { id: number; name: string }[] };
  const leader = status.members.find((m) => m.id === status.leader)?.name;
  if (leader === undefined) throw new Error(`${system}: no leader in /v1/cluster/status`);
  const dir = join(workDir, batonDirs[cellOf(system)] as string);
  const memberPids = Object.fromEntries(cell.names().map((n) => [n, findPids(`${join(dir, n)}\0`)]));
  return { leader, followers: cell.names().filter((n) => n !== leader), pids: memberPids };
}

let cleaning: Promise<void> | null = null;
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    const cells = [...Object.values(batons), ...(etcd === null ? [] : [etcd]), ...(etcdTls === null ? [] : [etcdTls])];
    await Promise.all(cells.map((c) => c.stopAll(10_000))).catch((e: Error) => log(`cleanup: ${e.message}`));
    rmSync(workDir, { recursive: true, force: true });
  })();
  return cleaning;
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`bench: ${signal}, stopping both cells`);
    void cleanup().then(() => process.exit(130));
  });
}

/** One run of the Go client; server CPU sampled at its window's start and end events. */
type Measured = LoadgenResult & { serverCpuS: number; windowS: number; leaderCpuS?: number; followerCpuS?: number };

async function runLoadgen(system: System, workload: Workload, clients: number, durationS: number, warmS: number): Promise<Measured> {
  if (system === 'baton-native') return runNative(workload, clients, durationS, warmS);
  const roles = await rolesOf(system);
  const targets = roles === null || endpointChoice === 'all' ? (endpoints[system] ?? [])
    : (endpointChoice === 'leader' ? [roles.leader] : roles.followers).map((n) => (batons[system] as BatonCell).grpcEndpoint(n));
  const args = [
    '-endpoints', targets.join(','),
    '-workload', workload,
    '-conns', String(connections),
    '-clients', String(clients),
    '-duration', `${durationS}s`,
    '-warmup', `${warmS}s`,
    '-key-space', String(keySpace),
    '-value-bytes', String(valueBytes),
    // No leading '/': the facade's key is Baton's without it (src/api/grpc/keys.ts), so this is /gobench/... in Baton.
    '-prefix', `gobench/${workload}/`,
    ...(roles === null && endpointChoice !== 'all' ? [`-${endpointChoice}-only`] : []),
    ...tlsArgs(system),
  ];
  const child = spawn(loadgen, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const stderr: string[] = [];
  child.stderr.on('data', (chunk: Buffer) => {
    stderr.push(chunk.toString('utf8'));
    if (stderr.length > 200) stderr.splice(0, stderr.length - 200);
  });
  const killer = setTimeout(() => child.kill('SIGKILL'), (durationS + warmS + 90) * 1000);
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
  const window = new CpuWindow(() => cpuSeconds(pids[system]), roles === null ? [] : [roles.leader, ...roles.followers].map((n) => roles.pids[n] ?? []));
  let result: LoadgenResult | null = null;
  for await (const line of createInterface({ input: child.stdout })) {
    if (line === '{"event":"start"}') window.mark('start');
    else if (line === '{"event":"end"}') window.mark('end');
    else if (line.startsWith('{')) result = JSON.parse(line) as LoadgenResult;
  }
  const code = await exited;
  clearTimeout(killer);
  if (code !== 0 || result === null || !window.ended) {
    throw new Error(`Go client against ${system} (${workload}, ${clients} clients) exited ${code}: ${stderr.join('').slice(-3000)}`);
  }
  return { ...result, ...window.measured() };
}

/** The Go client's TLS flags for a TLS system (trust the CA, present that system's client certificate). */
function tlsArgs(system: System): string[] {
  const client = clientCerts[system];
  if (secure === null || client === undefined) return [];
  return ['-cacert', secure.ca.cert, '-cert', client.cert, '-key', client.key];
}

/** The cell's CPU and each member's (leader first) over the measured window, and its length. */
class CpuWindow {
  private readonly start = { cpu: 0, members: [] as number[], at: 0 };
  private readonly end = { cpu: 0, members: [] as number[], at: 0 };

  constructor(
    private readonly cellCpu: () => number,
    private readonly memberPids: readonly number[][],
  ) {}

  get ended(): boolean {
    return this.end.at !== 0;
  }

  mark(edge: 'start' | 'end'): void {
    const into = edge === 'start' ? this.start : this.end;
    into.cpu = this.cellCpu();
    into.members = this.memberPids.map((memberPids) => cpuSeconds(memberPids));
    into.at = performance.now();
  }

  measured(): { serverCpuS: number; windowS: number; leaderCpuS?: number; followerCpuS?: number } {
    const used = this.end.members.map((end, i) => end - (this.start.members[i] ?? 0));
    const roles = used.length === 0 ? {} : {
      leaderCpuS: used[0] as number,
      followerCpuS: used.slice(1).reduce((a, b) => a + b, 0) / Math.max(1, used.length - 1),
    };
    return { serverCpuS: this.end.cpu - this.start.cpu, windowS: (this.end.at - this.start.at) / 1000, ...roles };
  }
}

/** Populated once per native key prefix, so linearizable gets find their keys. */
const nativePopulated = new Set<string>();

/** One run of Baton's own HTTP client (in this process) against the 'baton' cell's native API. */
async function runNative(workload: Workload, clients: number, durationS: number, warmS: number): Promise<Measured> {
  const cell = batons.baton as BatonCell;
  const roles = await rolesOf('baton');
  if (roles === null) throw new Error('baton: no roles');
  const names = endpointChoice === 'all' ? cell.names() : endpointChoice === 'leader' ? [roles.leader] : roles.followers;
  const urls = names.map((n) => new URL(cell.clientUrl(n)));
  const keyPrefix = `/gobench-native/${workload}/`;
  if (workload === 'get' && !nativePopulated.has(keyPrefix)) {
    await populateKeys(batonProtocol, urls, keySpace, valueBytes, keyPrefix);
    nativePopulated.add(keyPrefix);
  }
  const window = new CpuWindow(() => cpuSeconds(pids.baton), [roles.leader, ...roles.followers].map((n) => roles.pids[n] ?? []));
  const result = await runLoad({
    protocol: batonProtocol,
    endpoints: urls,
    workload: nativeWorkload[workload],
    clients,
    durationMs: durationS * 1000,
    warmupMs: warmS * 1000,
    keyCount: keySpace,
    valueBytes,
    requestTimeoutMs: 15_000,
    keyPrefix,
    onWindow: (edge) => window.mark(edge),
  });
  const errors = Object.values(result.errors).reduce((a, b) => a + b, 0);
  const measured = window.measured();
  const { windowS } = measured;
  return {
    workload,
    endpoints: urls.map((u) => u.host),
    conns: 0,
    clients,
    seconds: result.seconds,
    ops: result.completed,
    ops_per_s: result.opsPerSecond,
    p50_ms: result.latency.p50Us / 1000,
    p99_ms: result.latency.p99Us / 1000,
    p999_ms: result.latency.p999Us / 1000,
    max_ms: result.latency.maxUs / 1000,
    errors,
    error_samples: Object.entries(result.errors).slice(0, 3).map(([what, n]) => `${what} x${n}`),
    client_cpu_s: result.clientCpuCores * windowS,
    client_cpu_cores: result.clientCpuCores,
    ...measured,
  };
}

function progress(run: Run): string {
  const errors = run.errors > 0 ? `  errors ${run.errors} (${run.error_samples.join(' | ')})` : '';
  const roles = Number.isFinite(run.leaderCpuUsPerOp)
    ? `  leader ${run.leaderCpuUsPerOp.toFixed(0)} follower ${run.followerCpuUsPerOp.toFixed(0)} us/op` : '';
  return `${run.system.padEnd(12)} ${run.workload} c=${String(run.clients).padStart(3)} #${run.repeat + 1}  ` +
    `${run.ops_per_s.toFixed(0).padStart(6)} ops/s  p50 ${run.p50_ms.toFixed(2)}  p99 ${run.p99_ms.toFixed(2)}  p99.9 ${run.p999_ms.toFixed(2)} ms  ` +
    `server ${run.serverCpuCores.toFixed(2)} cores ${run.serverCpuUsPerOp.toFixed(0)} us/op${roles}  client ${run.client_cpu_cores.toFixed(2)} cores${errors}`;
}

async function main(): Promise<void> {
  const cells = [...Object.values(batons), ...(etcd === null ? [] : [etcd]), ...(etcdTls === null ? [] : [etcdTls])];
  for (const cell of cells) cell.startAll();
  await Promise.all(cells.map((cell) => cell.waitReady(60_000)));
  pids.baton = findPids(`${join(workDir, 'baton')}/`);
  pids['baton-native'] = pids.baton;
  pids['baton-b'] = findPids(`${join(workDir, 'other')}/`);
  pids['baton-tls'] = findPids(`${join(workDir, 'baton-tls')}/`);
  pids.etcd = findPids(`${join(workDir, 'etcd')}/`);
  pids['etcd-tls'] = findPids(`${join(workDir, 'etcd-tls')}/`);
  if (secure !== null) {
    clientCerts['baton-tls'] = withAuth ? await enableBenchPolicy(batons['baton-tls'] as ProcessCell, secure) : secure.root;
    clientCerts['etcd-tls'] = secure.root;
  }
  log(`bench: ${systems.join(', ')}${version === null ? '' : ` (${version})`}; ` +
    `Go clientv3, ${connections} connections, endpoints: ${endpointChoice}, ${valueBytes}-byte values over ${keySpace} keys; ` +
    `${workloads.join(',')} x ${clientCounts.join(',')} clients x ${repeats} repeats of ${seconds} s (+${warmupS} s warm-up)`);
  if (primeS > 0) {
    for (const system of systems) {
      for (const workload of workloads) await runLoadgen(system, workload, 64, primeS, 0);
    }
  }
  const runs: Run[] = [];
  for (const workload of workloads) {
    for (const clients of clientCounts) {
      for (let repeat = 0; repeat < repeats; repeat++) {
        const order: System[] = repeat % 2 === 0 ? systems : [...systems].reverse();
        for (const system of order) {
          const r = await runLoadgen(system, workload, clients, seconds, warmupS);
          const perOp = (cpu: number | undefined): number => (cpu !== undefined && r.ops > 0 ? (1e6 * cpu) / r.ops : Number.NaN);
          const run: Run = {
            ...r,
            system,
            repeat,
            serverCpuCores: r.serverCpuS / r.windowS,
            serverCpuUsPerOp: perOp(r.serverCpuS),
            leaderCpuUsPerOp: perOp(r.leaderCpuS),
            followerCpuUsPerOp: perOp(r.followerCpuS),
          };
          runs.push(run);
          log(progress(run));
        }
      }
    }
  }
  report(runs);
}

function report(runs: readonly Run[]): void {
  const pick = (system: System, workload: Workload, clients: number): Run[] =>
    runs.filter((r) => r.system === system && r.workload === workload && r.clients === clients).sort((a, b) => a.repeat - b.repeat);
  const f = (x: number, digits: number): string => (Number.isFinite(x) ? x.toFixed(digits) : '-');
  const med = (rs: readonly Run[], get: (r: Run) => number): number => median(rs.map(get));
  const ratio = (b: readonly Run[], e: readonly Run[], get: (r: Run) => number): number =>
    median(b.map((r, i) => get(r) / get(e[i] as Run)));
  const rows: string[][] = [];
  const ratioRows: string[][] = [];
  const abRows: string[][] = [];
  const tlsRows: string[][] = [];
  for (const workload of workloads) {
    for (const clients of clientCounts) {
      const [b, bn, bb, e] = (['baton', 'baton-native', 'baton-b', 'etcd'] as const).map((system) => pick(system, workload, clients)) as [Run[], Run[], Run[], Run[]];
      for (const system of systems) {
        const rs = pick(system, workload, clients);
        rows.push([
          `${workload} x${clients}`, system, f(med(rs, (r) => r.ops_per_s), 0), f(med(rs, (r) => r.p50_ms), 2),
          f(med(rs, (r) => r.p99_ms), 2), f(med(rs, (r) => r.p999_ms), 2), String(rs.reduce((s, r) => s + r.errors, 0)),
          f(med(rs, (r) => r.serverCpuCores), 2), f(med(rs, (r) => r.serverCpuUsPerOp), 0),
          f(med(rs, (r) => r.leaderCpuUsPerOp), 0), f(med(rs, (r) => r.followerCpuUsPerOp), 0),
          f(med(rs, (r) => r.client_cpu_cores), 2), rs.map((r) => r.ops_per_s.toFixed(0)).join(' '),
        ]);
      }
      for (const [label, ours] of [['gRPC facade', b], ['native API', bn]] as const) {
        if (e.length === 0 || ours.length === 0) continue;
        ratioRows.push([
          `${workload} x${clients}`, label, `${f(ratio(ours, e, (r) => r.ops_per_s), 2)}x`, `${f(ratio(ours, e, (r) => r.p50_ms), 2)}x`,
          `${f(ratio(ours, e, (r) => r.p99_ms), 2)}x`, `${f(ratio(ours, e, (r) => r.serverCpuUsPerOp), 2)}x`,
        ]);
      }
      for (const [label, tlsSystem, plainSystem] of [['Baton (gRPC facade)', 'baton-tls', 'baton'], ['etcd', 'etcd-tls', 'etcd']] as const) {
        const [t, p] = [pick(tlsSystem, workload, clients), pick(plainSystem, workload, clients)];
        if (t.length === 0 || p.length === 0) continue;
        tlsRows.push([
          `${workload} x${clients}`, label, `${f(ratio(t, p, (r) => r.ops_per_s), 2)}x`, `${f(ratio(t, p, (r) => r.p99_ms), 2)}x`,
          `${f(ratio(t, p, (r) => r.serverCpuUsPerOp), 2)}x`, `${f(ratio(t, p, (r) => r.client_cpu_cores / r.ops_per_s), 2)}x`,
        ]);
      }
      if (bb.length > 0) {
        abRows.push([
          `${workload} x${clients}`, '', `${f(ratio(b, bb, (r) => r.ops_per_s), 2)}x`, `${f(ratio(b, bb, (r) => r.p99_ms), 2)}x`,
          `${f(ratio(b, bb, (r) => r.serverCpuUsPerOp), 2)}x`, `${f(ratio(b, bb, (r) => r.leaderCpuUsPerOp), 2)}x`,
          `${f(ratio(b, bb, (r) => r.followerCpuUsPerOp), 2)}x`, `${f(ratio(b, bb, (r) => r.client_cpu_cores / r.ops_per_s), 2)}x`,
        ]);
      }
    }
  }
  const out = (text: string): void => void process.stdout.write(`${text}\n`);
  out(`\nMedians of ${repeats} repeat(s), ${seconds} s each, endpoints: ${endpointChoice}. etcd and baton: etcd's Go clientv3 over gRPC (${connections} connections); baton-native: Baton's HTTP/1.1 bench client on its native API:`);
  out(table(['case', 'system', 'ops/s', 'p50 ms', 'p99 ms', 'p99.9 ms', 'errors', 'srv cores', 'srv us/op', 'leader us/op', 'follower us/op', 'client cores', 'ops/s per repeat'], rows));
  if (ratioRows.length > 0) {
    out('\nBaton ÷ etcd, median of same-repeat ratios (ops > 1: Baton serves more; p50, p99, us/op < 1: Baton is better):');
    out(table(['case', 'Baton through', 'ops', 'p50', 'p99', 'srv us/op'], ratioRows));
  }
  if (abRows.length > 0) {
    out(`\nThis build ÷ ${otherBuild} (baton-b), median of same-repeat ratios (us/op < 1: this build spends less):`);
    out(table(['case', '', 'ops', 'p99', 'srv us/op', 'leader us/op', 'follower us/op', 'client cpu/op'], abRows));
  }
  if (tlsRows.length > 0) {
    out(`\nWith mutual TLS on every listener ÷ the same system plain, median of same-repeat ratios${withAuth ? ' (Baton also enforcing a policy: the client is principal "bench")' : ''}:`);
    out(table(['case', 'system', 'ops', 'p99', 'srv us/op', 'client cpu/op'], tlsRows));
  }
  out('srv: all three server processes of the cell over the client\'s measured window (idle CPU included); client: the Go client\'s own CPU (getrusage)');
  if (values.json === true) out(JSON.stringify({ etcd: version, connections, endpoints: endpointChoice, runs }));
}

try {
  await main();
} finally {
  await cleanup();
}
