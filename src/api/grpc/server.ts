// The etcd v3 gRPC facade of one node (issue 12, docs/etcd-compat.md): etcd's KV, Watch, Lease,
// Cluster, Maintenance, Lock and Election services over the node's own interfaces (CellApi,
// LeaseApi, the watch service, LockApi, ElectionApi): no second state machine.
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { status, type UntypedServiceImplementation } from '@grpc/grpc-js';
import { createGatewayHandler } from '../gateway/gateway.js';
import { serveH2Gateway } from '../gateway/h2-exchange.js';
import type { ElectionApi, LockApi } from '../../lock/api.js';
import type { LeaseApi } from '../../lease/api.js';
import type { WatchService } from '../stream/watch-service.js';
import type { HealthChecks } from '../health.js';
import type { CellApi, EdgeAudit } from '../types.js';
import { ClusterFacade, type ClusterInfo } from './cluster-service.js';
import { GrpcStatusError, toGrpcError } from './errors.js';
import { HeaderSource } from './header.js';
import { withKvCodecs } from './kv-codec.js';
import { KvFacade } from './kv-service.js';
import { LeaseFacade, type LeaseBounds } from './lease-service.js';
import { MaintenanceFacade } from './maintenance-service.js';
import { MemberFacade } from './member-service.js';
import { ElectionFacade, LockFacade } from './lock-service.js';
import { GrpcServer, type GrpcServerOptions, type GrpcTls } from './h2/grpc-server.js';
import { etcdServices } from './proto.js';
import { serveSnapshot, type SnapshotSource } from './snapshot-stream.js';
import { serveWatchStream, type WatchCall } from './watch-stream.js';
import { AuthFacade } from './auth-service.js';
import type { AuthTokens } from '../auth-tokens.js';
import { currentSource } from '../request-source.js';

export interface GrpcDeps {
  readonly cell: CellApi;
  readonly leases: LeaseApi;
  readonly leaseBounds: LeaseBounds;
  readonly watches: WatchService;
  readonly cluster: ClusterInfo;
  /** The lock and election services are served only when the node has them. */
  readonly locks?: LockApi;
  readonly elections?: ElectionApi;
  /** Maintenance.Snapshot is served only when given. */
  readonly snapshots?: SnapshotSource;
  readonly logError: (error: unknown) => void;
  /** Users' passwords and tokens (etcd's Auth service; a call's token names its principal). */
  readonly tokens: AuthTokens;
  /** The audit log, for what the facade decides itself (Maintenance.Snapshot); null: none. */
  readonly audit?: EdgeAudit | null;
  /** TLS on the facade's port (HTTP/2 by ALPN, the gateway on HTTP/1.1): the node's client material. */
  readonly tls?: GrpcTls;
  /** The gateway's /livez and /readyz checks (src/api/health.ts); without them, the plain answers. */
  readonly health?: HealthChecks;
  /** The node's per-method gRPC counters (src/metrics/grpc-metrics.ts); without it, none. */
  readonly meterOf?: GrpcServerOptions['meterOf'];
}

/** etcd: --max-request-bytes (1.5 MiB) plus gRPC's overhead; bigger messages are refused by gRPC. */
const receiveBytesMax = 2 * 1024 * 1024;
/** A gateway JSON body: base64 makes a 1.5 MiB request about 2 MiB of JSON. */
const gatewayBodyBytesMax = 4 * 1024 * 1024;
/** Keepalive requests queued on one stream before it is closed (a client not reading answers). */
const keepalivesQueuedMax = 1024;

interface Unary {
  request: unknown;
  /** Who calls (src/api/principal.ts), or the user of the call's etcd token. */
  principal: string;
  readonly token: string | null;
  getDeadline(): Date | number;
  on(event: 'cancelled', listener: () => void): unknown;
}
type Handler = (call: Unary) => Promise<unknown> | unknown;

export class EtcdGrpcServer {
  private constructor(
    private readonly server: GrpcServer,
    private readonly gateway: HttpServer,
    readonly port: number,
  ) {}

  static async start(deps: GrpcDeps, host: string, port: number): Promise<EtcdGrpcServer> {
    // The facade's own HTTP/2 and gRPC server (h2/): grpc-js's Server and Node's HTTP/2 cost ~8x
    // its CPU per call. grpc-js stays for the service definitions' types and status codes.
    // etcd's JSON gateway shares the port: HTTP/1.1 connections go to it, and it runs these handlers.
    const serveGateway = createGatewayHandler({
      grpcRoute: (path) => server.route(path),
      node: deps.cell,
      ...(deps.health !== undefined ? { health: deps.health } : {}),
      bodyBytesMax: gatewayBodyBytesMax,
      logError: deps.logError,
    });
    const gateway = createHttpServer(serveGateway);
    const server = new GrpcServer({
      receiveBytesMax,
      logError: deps.logError,
      otherProtocol: (socket) => gateway.emit('connection', socket),
      otherStream: (stream, headers, endStream) => serveH2Gateway(stream, headers, endStream, serveGateway),
      ...(deps.meterOf === undefined ? {} : { meterOf: deps.meterOf }),
    });
    const services = etcdServices();
    const headers = new HeaderSource(deps.cell);
    const kv = new KvFacade(deps.cell, headers);
    const leases = new LeaseFacade(deps.leases, headers, deps.leaseBounds);
    const cluster = new ClusterFacade(deps.cell, headers, deps.cluster);
    const unary = (handler: Handler) => (call: Unary, callback: (error: unknown, value?: unknown) => void) => {
      const failed = (error: unknown): void => callback(toGrpcError(error, deps.logError));
      let answer: Promise<unknown> | unknown;
      try {
        answer = handler(call);
      } catch (error) {
        return failed(error);
      }
      if (!(answer instanceof Promise)) return callback(null, answer);
      answer.then((value) => callback(null, value), failed);
    };
    const req = <T>(call: Unary): T => call.request as T;
    // etcd's token (metadata `token`, the gateway's Authorization header) names the caller: checked
    // here, before any handler, on every call but Authenticate (a client with an expired token
    // must be able to get a new one). An invalid token is UNAUTHENTICATED, as etcd answers it.
    const addService = (definition: Parameters<GrpcServer['addService']>[0], implementation: UntypedServiceImplementation): void => {
      const checked: Record<string, unknown> = {};
      for (const [method, handler] of Object.entries(implementation as unknown as Record<string, (call: Unary, callback?: (error: unknown) => void) => void>)) {
        checked[method] = method === 'Authenticate' ? handler : (call: Unary & { principal: string; token: string | null }, callback?: (error: unknown) => void): void => {
          if (call.token !== null) {
            try {
              call.principal = deps.tokens.verify(call.token);
            } catch (error) {
              const failed = toGrpcError(error, deps.logError);
              if (handler.length >= 2 && callback !== undefined) return callback(failed);
              return void (call as unknown as WatchCall).emit('error', failed);
            }
          }
          handler(call, callback);
        };
      }
      server.addService(definition, checked as UntypedServiceImplementation);
    };
    // Membership, maintenance and the snapshot are the cell's administration; its member list and
    // status are for any known principal. Everything else is decided inside the services.
    const guardedBy = (check: (principal: string) => void) => <T>(body: (call: Unary) => T) => (call: Unary): T => {
      check(call.principal);
      return body(call);
    };
    const admin = guardedBy((principal) => deps.cell.checkAdmin(principal));
    const clusterInfo = guardedBy((principal) => deps.cell.checkClusterInfo(principal));

    addService(withKvCodecs(services.KV), {
      Range: unary((call) => kv.range(req(call), call.principal)),
      Put: unary((call) => kv.put(req(call), call.principal)),
      DeleteRange: unary((call) => kv.deleteRange(req(call), call.principal)),
      Txn: unary((call) => kv.txn(req(call), call.principal)),
      Compact: unary((call) => kv.compact(req(call), call.principal)),
    } as unknown as UntypedServiceImplementation);
    addService(services.Watch, {
      Watch: (call: WatchCall) => serveWatchStream(call, deps.watches, headers, deps.logError),
    } as unknown as UntypedServiceImplementation);
    addService(services.Lease, {
      LeaseGrant: unary((call) => leases.grant(req(call), call.principal)),
      LeaseRevoke: unary((call) => leases.revoke(req(call), call.principal)),
      LeaseTimeToLive: unary((call) => leases.timeToLive(req(call), call.principal)),
      LeaseLeases: unary((call) => leases.list(call.principal)),
      LeaseKeepAlive: (call: WatchCall) => serveKeepalives(call, leases, deps.logError),
    } as unknown as UntypedServiceImplementation);
    const members = deps.cluster.members === undefined ? null : new MemberFacade(deps.cluster.members, headers, deps.cluster.grpcUrls);
    addService(services.Cluster, {
      MemberList: unary(clusterInfo(() => cluster.memberList())),
      ...(members !== null
        ? {
            MemberAdd: unary(admin((call) => members.add(req(call)))),
            MemberPromote: unary(admin((call) => members.promote(req(call)))),
            MemberRemove: unary(admin((call) => members.remove(req(call)))),
            MemberUpdate: unary(admin((call) => members.update(req(call)))),
          }
        : {}),
    } as unknown as UntypedServiceImplementation);
    const maintenance = deps.cluster.maintenance === undefined ? null : new MaintenanceFacade(deps.cluster.maintenance, headers);
    addService(services.Maintenance, {
      Status: unary(clusterInfo(() => cluster.status(maintenance?.alarmErrors()))),
      ...(maintenance !== null
        ? {
            Alarm: unary(admin((call) => maintenance.alarm(req(call)))),
            MoveLeader: unary(admin((call) => maintenance.moveLeader(req(call)))),
            Hash: unary(admin(() => maintenance.hash())),
            HashKV: unary(admin((call) => maintenance.hashKv(req(call)))),
            Defragment: unary(admin(() => maintenance.defragment())),
          }
        : { Alarm: unary(admin(() => ({ alarms: [] }))) }), // etcd answers Alarm without a header
      ...(deps.snapshots !== undefined
        ? {
            Snapshot: (call: WatchCall) => {
              try {
                deps.cell.checkAdmin(call.principal);
              } catch (error) {
                return void call.emit('error', toGrpcError(error, deps.logError));
              }
              const audit = deps.audit ?? null;
              if (audit === null) return void serveSnapshot(call, deps.snapshots as SnapshotSource, headers, deps.logError);
              // Audited: the record is durable before the first byte leaves.
              audit.record({ event: 'snapshot-save', principal: call.principal, address: currentSource() ?? null, result: 'ok', detail: { via: 'grpc' } });
              audit.flushed().then(
                () => void serveSnapshot(call, deps.snapshots as SnapshotSource, headers, deps.logError),
                (error: unknown) => void call.emit('error', toGrpcError(error, deps.logError)),
              );
            },
          }
        : {}),
    } as unknown as UntypedServiceImplementation);
    if (deps.locks !== undefined) {
      const locks = new LockFacade(deps.locks, headers);
      addService(services.Lock, {
        Lock: unary((call) => waiting(call, (signal, deadline) => locks.lock(req(call), signal, deadline, call.principal))),
        Unlock: unary((call) => locks.unlock(req(call), call.principal)),
      } as unknown as UntypedServiceImplementation);
    }
    if (deps.elections !== undefined) {
      const elections = new ElectionFacade(deps.elections, headers);
      addService(services.Election, {
        Campaign: unary((call) => waiting(call, (signal, deadline) => elections.campaign(req(call), signal, deadline, call.principal))),
        Proclaim: unary((call) => elections.proclaim(req(call), call.principal)),
        Resign: unary((call) => elections.resign(req(call), call.principal)),
        Leader: unary((call) => elections.leader(req(call), call.principal)),
        Observe: (call: WatchCall & { request: { name: Buffer } }) => {
          const abort = new AbortController();
          call.on('cancelled', () => abort.abort());
          elections.observe(call.request.name, (message) => call.write(message), abort.signal, call.principal).then(
            () => call.end(),
            (error: unknown) => {
              if (!abort.signal.aborted) call.emit('error', toGrpcError(error, deps.logError));
            },
          );
        },
      } as unknown as UntypedServiceImplementation);
    }
    const auth = new AuthFacade(deps.cell, headers, deps.tokens);
    addService(services.Auth, {
      AuthEnable: unary((call) => auth.authEnable(call.principal)),
      AuthDisable: unary((call) => auth.authDisable(call.principal)),
      AuthStatus: unary(() => auth.authStatus()),
      Authenticate: unary((call) => auth.authenticate(req(call))),
      UserAdd: unary((call) => auth.userAdd(req(call), call.principal)),
      UserGet: unary((call) => auth.userGet(req(call), call.principal)),
      UserList: unary((call) => auth.userList(call.principal)),
      UserDelete: unary((call) => auth.userDelete(req(call), call.principal)),
      UserChangePassword: unary((call) => auth.userChangePassword(req(call), call.principal)),
      UserGrantRole: unary((call) => auth.userGrantRole(req(call), call.principal)),
      UserRevokeRole: unary((call) => auth.userRevokeRole(req(call), call.principal)),
      RoleAdd: unary((call) => auth.roleAdd(req(call), call.principal)),
      RoleGet: unary((call) => auth.roleGet(req(call), call.principal)),
      RoleList: unary((call) => auth.roleList(call.principal)),
      RoleDelete: unary((call) => auth.roleDelete(req(call), call.principal)),
      RoleGrantPermission: unary((call) => auth.roleGrantPermission(req(call), call.principal)),
      RoleRevokePermission: unary((call) => auth.roleRevokePermission(req(call), call.principal)),
    } as unknown as UntypedServiceImplementation);
    const bound = await server.listen(host, port, deps.tls);
    return new EtcdGrpcServer(server, gateway, bound);
  }

  /** Stops accepting calls; calls still open after a short grace are cut. */
  async stop(graceMs = 500): Promise<void> {
    this.gateway.closeIdleConnections();
    await this.server.close(graceMs);
    this.gateway.closeAllConnections();
  }
}

/** A waiting call (Lock, Campaign): aborted when the client goes away, bounded by its deadline. */
function waiting<T>(call: Unary, body: (signal: AbortSignal, deadlineMs: number) => Promise<T>): Promise<T> {
  const abort = new AbortController();
  call.on('cancelled', () => abort.abort());
  const deadline = call.getDeadline();
  const deadlineMs = deadline instanceof Date ? deadline.getTime() : Number.isFinite(deadline) ? deadline : Number.POSITIVE_INFINITY;
  return body(abort.signal, deadlineMs);
}

/** LeaseKeepAlive: answers in request order, one renewal at a time per stream. */
function serveKeepalives(call: WatchCall, leases: LeaseFacade, logError: (error: unknown) => void): void {
  let chain: Promise<void> = Promise.resolve();
  let queued = 0;
  let ended = false;
  const end = (error: unknown): void => {
    if (ended) return;
    ended = true;
    if (error === null) call.end();
    else call.emit('error', toGrpcError(error, logError));
  };
  call.on('data', (request: unknown) => {
    if (ended) return;
    if (++queued > keepalivesQueuedMax) {
      return end(new GrpcStatusError(status.RESOURCE_EXHAUSTED, 'etcdserver: too many keepalives queued on this stream'));
    }
    chain = chain.then(async () => {
      queued--;
      if (ended) return;
      try {
        const answer = await leases.keepalive(request as { ID: string }, call.principal);
        if (!ended) call.write(answer);
      } catch (error) {
        end(error);
      }
    });
  });
  call.on('end', () => void chain.then(() => end(null)));
  call.on('cancelled', () => {
    ended = true;
  });
  call.on('error', () => {
    ended = true;
  });
}
