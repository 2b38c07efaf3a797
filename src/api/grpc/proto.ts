// Loads etcd's service definitions (proto/etcd, shipped with Baton) once per process.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadPackageDefinition, type GrpcObject, type ServiceDefinition } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';

/** proto/etcd above this file, in the source tree or in dist/ alike. */
export function protoDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 8; i++) {
    const candidate = join(dir, 'proto', 'etcd');
    if (existsSync(join(candidate, 'rpc.proto'))) return candidate;
    dir = dirname(dir);
  }
  throw new Error('proto/etcd/rpc.proto not found above src/api/grpc: is the proto folder installed?');
}

export interface EtcdServices {
  readonly KV: ServiceDefinition;
  readonly Watch: ServiceDefinition;
  readonly Lease: ServiceDefinition;
  readonly Cluster: ServiceDefinition;
  readonly Maintenance: ServiceDefinition;
  readonly Lock: ServiceDefinition;
  readonly Election: ServiceDefinition;
  readonly Auth: ServiceDefinition;
}

let loaded: EtcdServices | null = null;

export function etcdServices(): EtcdServices {
  if (loaded !== null) return loaded;
  const definition = loadSync(['rpc.proto', 'v3lock.proto', 'v3election.proto'], {
    includeDirs: [protoDir()],
    keepCase: true,
    longs: String,
    enums: Number, // etcd3's copy renames enum values: numbers are the wire truth
    defaults: true,
    oneofs: true,
  });
  const root = loadPackageDefinition(definition);
  const service = (pkg: string, name: string): ServiceDefinition =>
    ((root[pkg] as GrpcObject)[name] as unknown as { service: ServiceDefinition }).service;
  loaded = {
    KV: service('etcdserverpb', 'KV'),
    Watch: service('etcdserverpb', 'Watch'),
    Lease: service('etcdserverpb', 'Lease'),
    Cluster: service('etcdserverpb', 'Cluster'),
    Maintenance: service('etcdserverpb', 'Maintenance'),
    Lock: service('v3lockpb', 'Lock'),
    Election: service('v3electionpb', 'Election'),
    Auth: service('etcdserverpb', 'Auth'),
  };
  return loaded;
}
