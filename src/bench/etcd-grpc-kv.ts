// etcd's v3 gRPC API from Node, for the scale bench's data path: grpc-js on etcd's own .proto
// files (proto/etcd, as src/bench/grpc-load.ts). One HTTP/2 connection per worker (a local
// subchannel pool each, as separate client processes would have), round robin over the members.
import {
  credentials, loadPackageDefinition, status as grpcStatus,
  type Client, type GrpcObject, type ServiceClientConstructor,
} from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { protoDir } from '../api/grpc/proto.js';

type Services = { KV: ServiceClientConstructor; Cluster: ServiceClientConstructor; Maintenance: ServiceClientConstructor };
let services: Services | null = null;

function etcdServices(): Services {
  if (services !== null) return services;
  const definition = loadSync(['rpc.proto'], { includeDirs: [protoDir()], keepCase: true, longs: String, defaults: true, oneofs: true });
  const pb = loadPackageDefinition(definition)['etcdserverpb'] as GrpcObject;
  services = {
    KV: pb['KV'] as ServiceClientConstructor,
    Cluster: pb['Cluster'] as ServiceClientConstructor,
    Maintenance: pb['Maintenance'] as ServiceClientConstructor,
  };
  return services;
}

export function unary<T>(client: Client, method: string, request: unknown, timeoutMs = 30_000): Promise<T> {
  return new Promise((resolve, reject) => {
    const call = (client as unknown as Record<string, (r: unknown, o: unknown, cb: (e: Error | null, a: T) => void) => void>)[method];
    if (call === undefined) throw new Error(`no gRPC method ${method}`);
    call.call(client, request, { deadline: Date.now() + timeoutMs }, (error, answer) => (error ? reject(error) : resolve(answer)));
  });
}

export interface EtcdMemberInfo {
  readonly id: string;
  readonly name: string;
  readonly isLearner: boolean;
}

export class EtcdGrpcKv {
  private readonly kv: Client[];

  /** `endpoints`: HOST:PORT of each member; `connections`: one per worker. */
  constructor(private readonly endpoints: readonly string[], connections: number) {
    const { KV } = etcdServices();
    this.kv = Array.from({ length: Math.max(1, connections) }, (_, i) =>
      new KV(endpoints[i % endpoints.length] as string, credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 }));
  }

  async txn(requestOps: readonly unknown[], worker: number): Promise<void> {
    const client = this.kv[worker % this.kv.length] as Client;
    await unary(client, 'Txn', { compare: [], success: requestOps, failure: [] });
  }

  /** The cell's revision as the answering member knows it (a linearizable range's header). */
  async revision(): Promise<number> {
    const answer = await unary<{ header: { revision: string } }>(this.kv[0] as Client, 'Range', { key: Buffer.from([0]), limit: '1', keys_only: true });
    return Number(answer.header.revision);
  }

  /** Compacts with `physical`: etcd answers once the compaction has been applied to its backend. */
  async compact(revision: number): Promise<void> {
    await unary(this.kv[0] as Client, 'Compact', { revision: String(revision), physical: true }, 30 * 60_000);
  }

  close(): void {
    for (const client of this.kv) client.close();
  }
}

/** Member ids (decimal strings, uint64), names and learner flags, from any live endpoint. */
export async function etcdMembers(endpoint: string): Promise<EtcdMemberInfo[]> {
  const client = new (etcdServices().Cluster)(endpoint, credentials.createInsecure());
  try {
    const answer = await unary<{ members: { ID: string; name: string; isLearner: boolean }[] }>(client, 'MemberList', {}, 10_000);
    return answer.members.map((m) => ({ id: m.ID, name: m.name, isLearner: m.isLearner }));
  } finally {
    client.close();
  }
}

/** The member id an endpoint answers as and the leader it knows (decimal strings). */
export async function etcdStatus(endpoint: string): Promise<{ member: string; leader: string }> {
  const client = new (etcdServices().Maintenance)(endpoint, credentials.createInsecure());
  try {
    const answer = await unary<{ header: { member_id: string }; leader: string }>(client, 'Status', {}, 5_000);
    return { member: answer.header.member_id, leader: answer.leader };
  } finally {
    client.close();
  }
}

/** gRPC failures worth a retry: overload, no leader, a connection being re-established. */
export function etcdRetryable(error: Error): string | null {
  const code = (error as { code?: unknown }).code;
  const retryable: number[] = [grpcStatus.UNAVAILABLE, grpcStatus.RESOURCE_EXHAUSTED, grpcStatus.DEADLINE_EXCEEDED];
  if (typeof code === 'number' && retryable.includes(code)) return grpcStatus[code] ?? String(code);
  // etcd's "etcdserver: too many requests" / "leader changed" come as UNKNOWN with a message.
  if (/too many requests|leader changed|no leader|timed out/.test(error.message)) return error.message.slice(0, 40);
  return null;
}

export function hexId(decimal: string): string {
  return BigInt(decimal).toString(16);
}
