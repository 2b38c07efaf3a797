// Closed-loop load through etcd's v3 gRPC API with one client implementation (grpc-js on etcd's
// own .proto files), so Baton's etcd facade and a real etcd are measured like for like (issue 12).
// Each logical client has its own HTTP/2 connection to one member (round robin over the members)
// and keeps one request in flight; latency is per request, in microseconds.
import { credentials, loadPackageDefinition, type Client, type GrpcObject, type ServiceClientConstructor } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { protoDir } from '../api/grpc/proto.js';
import { LatencyHistogram } from './histogram.js';

export type GrpcOp = 'put' | 'get';

export interface GrpcLoadOptions {
  /** HOST:PORT of each member's gRPC endpoint. */
  readonly endpoints: readonly string[];
  readonly op: GrpcOp;
  readonly clients: number;
  readonly durationMs: number;
  readonly valueBytes: number;
  /** Key prefix, so runs never read each other's keys. */
  readonly prefix: string;
}

export interface GrpcLoadResult {
  readonly op: GrpcOp;
  readonly clients: number;
  readonly ops: number;
  readonly errors: number;
  readonly opsPerSecond: number;
  readonly histogram: LatencyHistogram;
}

let kvConstructor: ServiceClientConstructor | null = null;

function kvClientClass(): ServiceClientConstructor {
  if (kvConstructor !== null) return kvConstructor;
  const definition = loadSync(['rpc.proto'], { includeDirs: [protoDir()], keepCase: true, longs: String, defaults: true, oneofs: true });
  kvConstructor = ((loadPackageDefinition(definition)['etcdserverpb'] as GrpcObject)['KV'] as ServiceClientConstructor);
  return kvConstructor;
}

function unary(client: Client, method: string, request: unknown): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const fn = (client as unknown as Record<string, (r: unknown, o: unknown, cb: (e: unknown, a: unknown) => void) => void>)[method];
    fn?.call(client, request, { deadline: Date.now() + 10_000 }, (error, answer) => (error ? reject(error) : resolve(answer)));
  });
}

export async function runGrpcLoad(options: GrpcLoadOptions): Promise<GrpcLoadResult> {
  const Kv = kvClientClass();
  const value = Buffer.alloc(options.valueBytes, 0x61);
  const clients = Array.from({ length: options.clients }, (_, i) =>
    // A local subchannel pool: every logical client gets its own connection, as separate processes would.
    new Kv(options.endpoints[i % options.endpoints.length] as string, credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 }),
  );
  const keyOf = (client: number, n: number): Buffer => Buffer.from(`${options.prefix}/${client}/${options.op === 'get' ? 0 : n % 1000}`);
  try {
    // Warm-up: connect every client, and create the keys a get reads.
    await Promise.all(clients.map((client, i) => unary(client, 'Put', { key: keyOf(i, 0), value })));
    const histogram = new LatencyHistogram();
    let ops = 0;
    let errors = 0;
    const started = performance.now();
    const deadline = started + options.durationMs;
    await Promise.all(
      clients.map(async (client, i) => {
        for (let n = 0; performance.now() < deadline; n++) {
          const sent = performance.now();
          try {
            if (options.op === 'put') await unary(client, 'Put', { key: keyOf(i, n), value });
            else await unary(client, 'Range', { key: keyOf(i, 0) });
            histogram.record(Math.round((performance.now() - sent) * 1000));
            ops++;
          } catch {
            errors++;
          }
        }
      }),
    );
    const elapsedS = (performance.now() - started) / 1000;
    return { op: options.op, clients: options.clients, ops, errors, opsPerSecond: ops / elapsedS, histogram };
  } finally {
    for (const client of clients) client.close();
  }
}
