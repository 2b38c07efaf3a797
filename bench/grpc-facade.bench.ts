// The etcd gRPC facade alone: a child process serves etcd's KV service (grpc-js, the facade's
// handlers and codecs) over a stub cell that answers at once, and this process drives Range and
// Put through the same client as `bench:grpc`. The child's CPU per call (from /proc) is the
// facade's own cost, without Raft, storage or peers: what to look at when tuning the facade.
//
// --direct leaves grpc-js out: the facade's own part of a call (decode the request, the handler,
// encode the answer) in a loop in this process, CPU time per call: steady on a shared machine.
//
//   node dist/bench/grpc-facade.bench.js                 get and put, 16 clients, 3 runs of 4 s
//   node dist/bench/grpc-facade.bench.js --profile       the child under --cpu-prof: its self times
//   node dist/bench/grpc-facade.bench.js --direct        the facade's part alone, 5 runs of 50,000 calls
// Flags: --clients N --seconds S --runs N --value-bytes N --ops get,put
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { MethodDefinition } from '@grpc/grpc-js';
import { HeaderSource } from '../src/api/grpc/header.js';
import { withKvCodecs } from '../src/api/grpc/kv-codec.js';
import { KvFacade } from '../src/api/grpc/kv-service.js';
import { etcdServices } from '../src/api/grpc/proto.js';
import { EtcdGrpcServer, type GrpcDeps } from '../src/api/grpc/server.js';
import type { CellApi, ClusterStatus, RangeRequest } from '../src/api/types.js';
import { summarizeCpuProfile } from '../src/bench/cpu-profile.js';
import { runGrpcLoad, type GrpcOp } from '../src/bench/grpc-load.js';
import { cpuSeconds } from '../src/bench/proc-cpu.js';
import { median, table } from '../src/bench/report.js';

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    serve: { type: 'boolean' },
    direct: { type: 'boolean' },
    profile: { type: 'boolean' },
    clients: { type: 'string', default: '16' },
    seconds: { type: 'string', default: '4' },
    runs: { type: 'string', default: '3' },
    'value-bytes': { type: 'string', default: '256' },
    ops: { type: 'string', default: 'get,put' },
  },
  strict: true,
});
const valueBytes = Number(values['value-bytes']);

function stubCell(): CellApi {
  const value = new Uint8Array(valueBytes).fill(0x61);
  const status: ClusterStatus = {
    cell: 'bench',
    clusterId: 'a1b2c3d4e5f60718',
    member: 1,
    leader: 1,
    term: 3,
    commitIndex: 100,
    appliedIndex: 100,
    revision: 42,
    compactRevision: 0,
    epoch: 0,
    storeFormat: 3,
    moveProtocol: 1,
    restoredFrom: null,
    data: 'ok',
    members: [],
  };
  return {
    cellId: 'bench',
    checkAdmin: () => {},
    readBarrier: async () => {},
    localPolicyRecord: () => ({ version: 0, record: null }),
    checkClusterInfo: () => {},
    revision: () => 42,
    put: async () => ({ created: false, version: 2, revision: 43, fencingToken: 10 }),
    range: async (request: RangeRequest) => ({
      revision: 42,
      count: 1,
      more: false,
      kvs: [{ key: request.key, value, version: 2, createRevision: 10, modRevision: 42, lease: 0 }],
    }),
    deleteRange: async () => ({ deleted: 0, revision: 42 }),
    txn: async () => ({ succeeded: true, revision: 42, results: [] }),
    compact: async () => ({ revision: 42, compactRevision: 0 }),
    policyRecord: async () => ({ version: 0, record: null }),
    setPolicyRecord: async () => ({ version: 1 }),
    status: () => status,
    healthy: () => true,
    ready: () => ({ ready: true, reason: '' }),
    metricsText: () => Promise.resolve(''),
  };
}

async function serve(): Promise<void> {
  const deps = {
    cell: stubCell(),
    leases: {},
    leaseBounds: { ttlMsMin: 5_000, ttlMsMax: 86_400_000 },
    watches: {},
    cluster: { grpcUrls: new Map(), dbBytes: () => 0 },
    logError: (error: unknown) => console.error(error),
  } as unknown as GrpcDeps;
  const server = await EtcdGrpcServer.start(deps, '127.0.0.1', 0);
  console.log(`port ${server.port}`);
  process.on('SIGTERM', () => void server.stop(100).then(() => process.exit(0)));
}

async function drive(): Promise<void> {
  const profileDir = mkdtempSync(join(tmpdir(), 'baton-facade-bench-'));
  const args = [...(values.profile ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []), fileURLToPath(import.meta.url), '--serve', '--value-bytes', String(valueBytes)];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        const match = /port (\d+)/.exec(chunk.toString());
        if (match !== null) resolve(Number(match[1]));
      });
      child.once('exit', () => reject(new Error('the server exited')));
    });
    const pid = child.pid as number;
    const clients = Number(values.clients);
    const rows: string[][] = [];
    for (const op of values.ops.split(',') as GrpcOp[]) {
      const usPerCall: number[] = [];
      const opsPerSecond: number[] = [];
      for (let run = 0; run < Number(values.runs); run++) {
        const before = cpuSeconds([pid]);
        const result = await runGrpcLoad({ endpoints: [`127.0.0.1:${port}`], op, clients, durationMs: Number(values.seconds) * 1000, valueBytes, prefix: `f${run}` });
        usPerCall.push(((cpuSeconds([pid]) - before) * 1e6) / (result.ops + clients));
        opsPerSecond.push(result.opsPerSecond);
      }
      rows.push([`${op} x${clients}`, median(opsPerSecond).toFixed(0), median(usPerCall).toFixed(0), usPerCall.map((u) => u.toFixed(0)).join(' ')]);
    }
    console.log(table(['case', 'calls/s', 'server cpu us/call (median)', 'runs'], rows));
  } finally {
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    await exited;
  }
  if (values.profile) {
    const file = readdirSync(profileDir).find((f) => f.endsWith('.cpuprofile'));
    if (file !== undefined) {
      const summary = summarizeCpuProfile(JSON.parse(readFileSync(join(profileDir, file), 'utf8')), `${process.cwd()}/`, 40);
      console.log(table(['function', 'location', 'self ms', '% busy'], summary.rows.map((r) => [r.name, r.location, r.selfMs.toFixed(0), r.busyPercent.toFixed(1)])));
    }
  }
  rmSync(profileDir, { recursive: true, force: true });
}

/** The facade's own part of each call, as grpc-js runs it: deserialize, handle, serialize. */
async function direct(): Promise<void> {
  const cell = stubCell();
  const kv = new KvFacade(cell, new HeaderSource(cell));
  const methods = withKvCodecs(etcdServices().KV) as unknown as Record<'Range' | 'Put', MethodDefinition<unknown, unknown>>;
  const generic = etcdServices().KV as unknown as Record<'Range' | 'Put', MethodDefinition<unknown, unknown>>;
  const value = Buffer.alloc(valueBytes, 0x61);
  const cases = {
    get: { method: 'Range' as const, request: generic.Range.requestSerialize({ key: Buffer.from('bench/0/0') }), call: (r: unknown) => kv.range(r as never, '') },
    put: { method: 'Put' as const, request: generic.Put.requestSerialize({ key: Buffer.from('bench/0/0'), value }), call: (r: unknown) => kv.put(r as never, '') },
  };
  const calls = 50_000;
  const rows: string[][] = [];
  for (const op of values.ops.split(',') as (keyof typeof cases)[]) {
    const { method, request, call } = cases[op];
    const definition = methods[method];
    const usPerCall: number[] = [];
    for (let run = 0; run < Math.max(Number(values.runs), 5); run++) {
      const started = process.cpuUsage();
      for (let i = 0; i < calls; i++) {
        const answer = await call(definition.requestDeserialize(request));
        definition.responseSerialize(answer);
      }
      const used = process.cpuUsage(started);
      usPerCall.push((used.user + used.system) / calls);
    }
    rows.push([op, median(usPerCall).toFixed(2), usPerCall.map((u) => u.toFixed(2)).join(' ')]);
  }
  console.log(table(['case', 'cpu us/call (median)', 'runs'], rows));
}

await (values.serve ? serve() : values.direct ? direct() : drive());
