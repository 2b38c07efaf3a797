// One unary call to the etcd gRPC facade: the case's message serialized with etcd's own
// definitions (or its garbage bytes sent as they are). The status must be one the facade
// documents (docs/etcd-compat.md): never UNKNOWN (an unmapped error) or the facade's INTERNAL.
import { Client, credentials, Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { etcdServices } from '../api/grpc/proto.js';
import type { FuzzCase } from './cases.js';
import type { ExchangeResult } from './http-exchange.js';

type GrpcCase = Extract<FuzzCase, { channel: 'grpc' }>;

const allowed = new Set<number>([
  status.OK, status.INVALID_ARGUMENT, status.NOT_FOUND, status.RESOURCE_EXHAUSTED, status.FAILED_PRECONDITION,
  status.OUT_OF_RANGE, status.UNIMPLEMENTED, status.UNAVAILABLE,
]);
const packages: Record<GrpcCase['service'], string> = {
  KV: 'etcdserverpb', Lease: 'etcdserverpb', Cluster: 'etcdserverpb', Maintenance: 'etcdserverpb', Lock: 'v3lockpb', Election: 'v3electionpb',
};

export function grpcClient(port: number): Client {
  return new Client(`127.0.0.1:${port}`, credentials.createInsecure());
}

export function runGrpcCase(client: Client, fuzzCase: GrpcCase, timeoutMs: number): Promise<ExchangeResult> {
  const definition = (etcdServices()[fuzzCase.service] as Record<string, { path: string; requestSerialize(value: unknown): Buffer; responseDeserialize(bytes: Buffer): unknown } | undefined>)[fuzzCase.method];
  const raw = Buffer.isBuffer(fuzzCase.request);
  const path = definition?.path ?? `/${packages[fuzzCase.service]}.${fuzzCase.service}/${fuzzCase.method}`;
  const serialize = (value: unknown): Buffer => {
    if (Buffer.isBuffer(value)) return value;
    return definition === undefined ? Buffer.alloc(0) : definition.requestSerialize(value);
  };
  return new Promise((resolve) => {
    let request: unknown = fuzzCase.request;
    try {
      if (!raw && definition !== undefined) serialize(request);
    } catch (error) {
      // The draw made a message etcd's definitions cannot encode: send its bytes as garbage.
      request = Buffer.from(String((error as Error).message));
    }
    const deadline = new Date(Date.now() + timeoutMs);
    client.makeUnaryRequest(
      path,
      (value: unknown) => (Buffer.isBuffer(value) ? value : serialize(value)),
      (bytes: Buffer) => bytes,
      request,
      new Metadata(),
      { deadline },
      (error: ServiceError | null) => {
        if (error === null) return resolve({ problem: null, status: status.OK });
        const code = error.code;
        if (code === status.DEADLINE_EXCEEDED) return resolve({ problem: `no answer within ${timeoutMs} ms (hang)`, status: code });
        // grpc-js answers a message it cannot decode itself, before the facade sees it.
        if (code === status.INTERNAL && raw && /deserializ|parse/i.test(error.details)) return resolve({ problem: null, status: code });
        if (!allowed.has(code)) return resolve({ problem: `status ${status[code] ?? code}: ${error.details.slice(0, 200)}`, status: code });
        resolve({ problem: null, status: code });
      },
    );
  });
}
