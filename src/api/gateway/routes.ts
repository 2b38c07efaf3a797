// etcd's JSON gateway routes, read from the same protos the gRPC facade serves: each RPC's
// `google.api.http` post path (and its additional bindings, e.g. /v3/kv/lease/revoke), under
// /v3/ and /v3beta/ as etcd 3.4 serves both. v3lock.proto and v3election.proto are shipped
// without annotations, so their paths (etcd's v3lock.pb.gw.go, v3election.pb.gw.go) are listed.
import protobuf from 'protobufjs';
import { protoDir } from '../grpc/proto.js';

export interface GatewayRoute {
  /** The gRPC method path the facade serves it under, e.g. /etcdserverpb.KV/Range. */
  readonly grpcPath: string;
  readonly requestType: protobuf.Type;
  readonly responseType: protobuf.Type;
  readonly requestStream: boolean;
  readonly responseStream: boolean;
}

const unannotated: Readonly<Record<string, string>> = {
  'v3lockpb.Lock.Lock': '/v3/lock/lock',
  'v3lockpb.Lock.Unlock': '/v3/lock/unlock',
  'v3electionpb.Election.Campaign': '/v3/election/campaign',
  'v3electionpb.Election.Proclaim': '/v3/election/proclaim',
  'v3electionpb.Election.Leader': '/v3/election/leader',
  'v3electionpb.Election.Observe': '/v3/election/observe',
  'v3electionpb.Election.Resign': '/v3/election/resign',
};

let loaded: ReadonlyMap<string, GatewayRoute> | null = null;

/** HTTP path (/v3/... and /v3beta/...) → route, built once per process. */
export function gatewayRoutes(): ReadonlyMap<string, GatewayRoute> {
  if (loaded !== null) return loaded;
  const dir = protoDir();
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => `${dir}/${target.split('/').pop() ?? target}`;
  root.loadSync(['rpc.proto', 'v3lock.proto', 'v3election.proto'], { keepCase: true });
  etcdEnumNames(root);
  root.resolveAll();
  const routes = new Map<string, GatewayRoute>();
  for (const service of allServices(root)) {
    const serviceName = service.fullName.replace(/^\./, '');
    for (const method of service.methodsArray) {
      const route: GatewayRoute = {
        grpcPath: `/${serviceName}/${method.name}`,
        requestType: method.resolvedRequestType as protobuf.Type,
        responseType: method.resolvedResponseType as protobuf.Type,
        requestStream: method.requestStream === true,
        responseStream: method.responseStream === true,
      };
      for (const path of httpPaths(method, `${serviceName}.${method.name}`)) {
        routes.set(path, route);
        routes.set(path.replace(/^\/v3\//, '/v3beta/'), route);
      }
    }
  }
  loaded = routes;
  return routes;
}

/**
 * The shipped protos are the etcd3 npm client's copy, which renames enum values (`NotEqual`,
 * `Nodelete`); etcd's JSON names them as its own protos do (`NOT_EQUAL`, `NODELETE`).
 */
function etcdEnumNames(namespace: protobuf.NamespaceBase): void {
  for (const nested of namespace.nestedArray) {
    if (nested instanceof protobuf.Enum) {
      for (const [name, id] of Object.entries(nested.values)) {
        const etcdName = name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase();
        if (etcdName === name) continue;
        nested.remove(name);
        nested.add(etcdName, id);
      }
    } else if (nested instanceof protobuf.Namespace || nested instanceof protobuf.Type) {
      etcdEnumNames(nested);
    }
  }
}

function allServices(namespace: protobuf.NamespaceBase): protobuf.Service[] {
  const found: protobuf.Service[] = [];
  for (const nested of namespace.nestedArray) {
    if (nested instanceof protobuf.Service) found.push(nested);
    else if (nested instanceof protobuf.Namespace) found.push(...allServices(nested));
  }
  return found;
}

function httpPaths(method: protobuf.Method, qualified: string): string[] {
  const options = method.options ?? {};
  const paths = [options['(google.api.http).post'], options['(google.api.http).additional_bindings.post']]
    .filter((p): p is string => typeof p === 'string');
  const listed = unannotated[qualified];
  if (listed !== undefined) paths.push(listed);
  return paths;
}
