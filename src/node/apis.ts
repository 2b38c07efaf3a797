// Step 4 of a node's start: the client APIs over the built services. HTTP/JSON and the WebSocket
// stream share one listener; the etcd v3 gRPC facade has its own (only with --listen-grpc).
import type { EdgeAudit } from '../api/types.js';
import { KeyNotFoundError } from '../base/errors.js';
import { AuthTokens } from '../api/auth-tokens.js';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { createHttpHandler } from '../api/http/handler.js';
import { defaultApiLimits } from '../api/http/limits.js';
import { createWatchRoutes } from '../api/http/watch-routes.js';
import { createLeaseRoutes } from '../api/http/lease-routes.js';
import { createMaintenanceRoutes } from '../api/http/maintenance-routes.js';
import { createLockRoutes } from '../api/http/lock-routes.js';
import { createElectionRoutes } from '../api/http/election-routes.js';
import { createMemberRoutes } from '../api/http/member-routes.js';
import { createAuthRoutes } from '../api/http/auth-routes.js';
import { createHealthRoutes } from '../api/http/health-routes.js';
import { createOwnershipRoutes } from '../api/http/ownership-routes.js';
import { createTenantRoutes } from '../api/http/tenant-routes.js';
import { tenantNodeUse } from './tenant-metrics.js';
import { createConsoleRoutes } from '../api/http/console-routes.js';
import { loadConsoleFiles } from '../console/console-files.js';
import { ControlService } from '../control/control-service.js';
import { Mover } from '../control/mover.js';
import { isOpen } from '../control/moves.js';
import { addMoveMetrics } from './move-metrics.js';
import { createControlRoutes } from '../control/control-routes.js';
import { healthChecks } from '../api/health.js';
// The facade (grpc-js, the protos, the JSON gateway: a fifth of a node's start-up) is loaded only
// when it is served (below).
import type { EtcdGrpcServer } from '../api/grpc/server.js';
import { keepaliveFrameHandler } from '../api/stream/lease-frames.js';
import { lockFrameHandlers } from '../api/stream/lock-frames.js';
import { StreamServer } from '../api/stream/index.js';
import type { MvccStore } from '../mvcc/index.js';
import { AlarmTable, alarmType } from '../api/alarms.js';
import { hashKvPaced } from '../api/hash-kv.js';
import { CorruptionCheck } from './corruption-check.js';
import type { NodeConfig } from './config.js';
import type { NodeLogger, NodeServices } from './node.js';
import { grpcSnapshotChunkBytes, httpKeepAliveMs } from '../base/limits.js';
import type { GrpcMetrics } from '../metrics/grpc-metrics.js';
import type { Registry } from '../metrics/registry.js';
import type { TlsMaterial } from '../security/tls-files.js';
import type { NodeTls } from './tls-wiring.js';


export interface RunningApis {
  readonly grpc: EtcdGrpcServer | null;
  /**
   * Ends watch streams cleanly (each hears `unavailable` and its last revision), takes no new
   * connection, gives requests in flight up to `graceMs` to be answered, then closes the sockets.
   */
  stop(graceMs: number): Promise<void>;
}

export async function startApis(
  config: NodeConfig,
  state: { readonly store: MvccStore; readonly engine: { diskBytes(): number; usedBytes?(): number }; readonly metrics: { requests: { inc(labels: Record<string, string>): void }; readonly grpc: GrpcMetrics; readonly registry: Registry } },
  services: NodeServices,
  log: NodeLogger,
  tls: NodeTls,
  /** The node's audit log (src/audit), for what the edges decide themselves; null: none. */
  audit: EdgeAudit | null = null,
): Promise<RunningApis> {
  const { cell, leases, locks, watches, membership, driver } = services;
  const { store } = state;
  const apiLimits = { ...defaultApiLimits, valueBytesMax: config.valueBytesMax };
  const tokens = new AuthTokens(() => services.guard.policy());
  const logError = (error: unknown): void => log.error(`request failed: ${(error as Error)?.stack ?? String(error)}`);
  const alarms = new AlarmTable();
  const health = healthChecks({
    serializableRead: () => healthRead(cell, 'serializable'),
    // A removed member would only wait out the bound (the leader no longer answers it): say why.
    linearizableRead: () => membership.removed ? Promise.reject(new Error('removed from the cell')) : healthRead(cell, 'linearizable'),
    linearizableReadMs: config.requestTimeoutMs,
    isLearner: () => driver.status().confState.learners.includes(config.memberId),
    alarms,
  });
  // The control plane (docs/design/cells.md): the cell map in this cell, pushed to the data cells;
  // the leader reconciles every second until each data cell holds the map's epoch.
  const control = config.controlPlane ? new ControlService(cell, { warn: (message) => log.warn(message) }) : null;
  let reconciling = false;
  const reconciler = control === null ? null : setInterval(() => {
    if (!driver.isLeader || reconciling) return;
    reconciling = true;
    control.reconcile().catch((error: unknown) => log.warn(`ownership reconcile: ${(error as Error).message}`)).finally(() => (reconciling = false));
  }, 1_000);
  reconciler?.unref();
  // Namespace moves (src/control/mover.ts): driven by the leader from the durable move records.
  const mover = control === null ? null : new Mover(control, { nowMs: () => Date.now() }, {
    warn: (message) => log.warn(message), info: (message) => log.info(message),
  }, addMoveMetrics(state.metrics.registry, () => (control.localMap().moves ?? []).filter(isOpen)));
  let moving = false;
  const moverTimer = mover === null ? null : setInterval(() => {
    if (!driver.isLeader || moving) return;
    moving = true;
    mover.step().catch((error: unknown) => log.warn(`mover: ${(error as Error).message}`)).finally(() => (moving = false));
  }, 100);
  moverTimer?.unref();
  // Renewals of moved keys' leases, carried from source to destination (src/control/lease-followers.ts).
  let following = false;
  const followTimer = mover === null ? null : setInterval(() => {
    if (following) return;
    following = true;
    mover.leaseFollowers.round(driver.isLeader).catch((error: unknown) => log.warn(`lease follower: ${(error as Error).message}`)).finally(() => (following = false));
  }, 500);
  followTimer?.unref();
  // The web console's files (dist/ui, beside dist/src), read once: docs/console.md.
  const consoleFiles = loadConsoleFiles();
  const handler = createHttpHandler({
    slowRequestMs: config.logSlowRequestMs,
    logSlow: (slow) => log.warn(`slow request: ${slow.method} ${slow.route} answered ${slow.status} after ${slow.ms} ms`, { ...slow }),
    cell,
    limits: apiLimits,
    routeGroups: [
      createWatchRoutes(watches), createLeaseRoutes(leases), createLockRoutes(locks.locks), createElectionRoutes(locks.elections),
      createMaintenanceRoutes(store, cell, audit, state.engine.usedBytes === undefined ? null : () => (state.engine.usedBytes as () => number)()), createMemberRoutes(membership, cell, driver), createAuthRoutes(cell, tokens),
      createHealthRoutes(health), createOwnershipRoutes(cell), createTenantRoutes(cell, (name) => tenantNodeUse(services.tenantSources, name)), createConsoleRoutes(consoleFiles),
      ...(control === null ? [] : [createControlRoutes(control, cell)]),
    ],
    logError,
    tokens,
  });
  // One label object per status code and one shared listener: no allocation per request.
  const codeLabels = new Map<number, { code: string }>();
  function countAnswer(this: ServerResponse): void {
    let labels = codeLabels.get(this.statusCode);
    if (labels === undefined) codeLabels.set(this.statusCode, (labels = { code: String(this.statusCode) }));
    state.metrics.requests.inc(labels);
  }
  // Requests being answered, for a graceful stop (watch streams are ended before it waits).
  const inFlight = { count: 0 };
  const answered = (): void => void inFlight.count--;
  const serve = (req: IncomingMessage, res: ServerResponse): void => {
    res.on('finish', countAnswer);
    inFlight.count++;
    res.once('close', answered);
    handler(req, res);
  };
  const http = tls.client === null ? createServer(serve) : secureServer(tls.client, tls.clientCertAuth, serve);
  http.keepAliveTimeout = httpKeepAliveMs;
  const stream = new StreamServer({
    cell,
    apiLimits,
    service: watches,
    logError,
    handlers: { keepalive: keepaliveFrameHandler(leases), ...lockFrameHandlers(locks.locks, locks.elections) },
    tokens,
    sessions: services.sessions,
  });
  stream.attach(http);
  await listen(http, Number(config.listenClient.port), config.listenClient.hostname);
  const corruptionCheck = new CorruptionCheck({
    everyMs: config.corruptCheckMs,
    memberId: config.memberId,
    isLeader: () => driver.isLeader,
    members: () => membership.members(),
    store,
    alarms,
    log,
  });
  corruptionCheck.start();
  const regressionWatch = watchForRegression(config, driver, alarms, log);
  const grpc = config.listenGrpc === null ? null : await (await import('../api/grpc/server.js')).EtcdGrpcServer.start(
    {
      cell, leases, watches, logError, locks: locks.locks, elections: locks.elections, tokens, health, audit,
      meterOf: (service, method, kind) => state.metrics.grpc.meterOf(service, method, kind),
      leaseBounds: { ttlMsMin: store.limits.leaseTtlMsMin, ttlMsMax: store.limits.leaseTtlMsMax },
      cluster: {
        grpcUrls: config.grpcUrls,
        dbBytes: () => state.engine.diskBytes(),
        ...(state.engine.usedBytes !== undefined ? { dbBytesInUse: () => (state.engine.usedBytes as () => number)() } : {}),
        members: { membership, linearizableRead: () => driver.linearizableRead() },
        maintenance: {
          memberId: config.memberId,
          isLeader: () => driver.isLeader,
          transferLeadership: (to) => membership.transferLeadership(to),
          hashKv: (revision) => hashKvPaced(store, revision),
          hashAll: () => hash32(store.hash()),
          alarms,
        },
      },
      ...(tls.client === null ? {} : { tls: { material: tls.client, clientCertAuth: tls.clientCertAuth } }),
      snapshots: {
        open: () => {
          // snapshot() opens the read view synchronously: the revision read next belongs to it.
          const view = store.snapshot({ chunkBytesMax: grpcSnapshotChunkBytes });
          return { revision: store.revision, chunks: view.chunks };
        },
      },
    },
    config.listenGrpc.hostname,
    Number(config.listenGrpc.port),
  );
  return {
    grpc,
    async stop(graceMs) {
      corruptionCheck.stop();
      clearInterval(regressionWatch);
      if (reconciler !== null) clearInterval(reconciler);
      if (moverTimer !== null) clearInterval(moverTimer);
      if (followTimer !== null) clearInterval(followTimer);
      await watches.stop();
      stream.close();
      const closed = new Promise<void>((resolve) => http.close(() => resolve()));
      http.closeIdleConnections();
      await Promise.all([grpc?.stop(graceMs > 0 ? graceMs : undefined), waitForAnswers(inFlight, graceMs)]);
      http.closeAllConnections();
      await closed;
    },
  };
}

/**
 * A member whose peers showed it promised more than its disk holds (src/raft/peer-ledger.ts: a
 * data directory restored from an older copy) no longer votes or acknowledges; here it also says
 * so where operators look: an error in the log naming the directory, and a CORRUPT alarm on
 * itself (`/readyz` fails, `etcdctl alarm list` shows it). Serializable reads are refused in
 * the cell service; watches end as on any member without a leader.
 */
function watchForRegression(
  config: NodeConfig,
  driver: { regressed(): string | null },
  alarms: AlarmTable,
  log: NodeLogger,
): NodeJS.Timeout {
  let said = false;
  const timer = setInterval(() => {
    const reason = driver.regressed();
    if (reason === null || said) return;
    said = true;
    log.error(`this member's data directory ${config.dataDir} went back in time (restored from an older copy?): ` +
      `${reason}. It no longer votes or acknowledges entries; replace it (docs/deploy.md, "A member whose data went back in time")`);
    alarms.activate(String(config.memberId), alarmType.corrupt);
  }, 250);
  timer.unref();
  return timer;
}

/** Resolves once no request is in flight, or after `graceMs`. */
async function waitForAnswers(inFlight: { readonly count: number }, graceMs: number): Promise<void> {
  const deadline = performance.now() + graceMs;
  while (inFlight.count > 0 && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
}

/** The one key the health checks read, keys only (etcd reads its empty key the same way): an
 *  answer, "not found" included, is a read that worked. */
async function healthRead(cell: NodeServices['cell'], consistency: 'serializable' | 'linearizable'): Promise<void> {
  // The node's own read (not a client's: no principal, no authorization), through the same paths.
  const request = { type: 'get' as const, key: '/health', keysOnly: true };
  try {
    if (consistency === 'linearizable') await cell.linearizableRange(request);
    else cell.localRange(request);
  } catch (error) {
    if (!(error instanceof KeyNotFoundError)) throw error;
  }
}

/** A 64-bit hex content digest folded to etcd's uint32 Hash. */
function hash32(digest: string): number {
  return (Number.parseInt(digest.slice(0, 8), 16) ^ Number.parseInt(digest.slice(8, 16), 16)) >>> 0;
}

/** The HTTPS listener: etcd's --cert-file/--key-file, with --client-cert-auth a certificate from the CA. */
function secureServer(material: TlsMaterial, clientCertAuth: boolean, serve: (req: IncomingMessage, res: ServerResponse) => void): HttpsServer {
  // With a trusted CA a certificate is asked for even without --client-cert-auth: one that verifies
  // names the principal (src/api/principal.ts); without one the caller is anonymous.
  const requestCert = clientCertAuth || material.material().ca !== undefined;
  const server = createHttpsServer({ ...material.material(), requestCert, rejectUnauthorized: clientCertAuth }, serve);
  // Before the HTTP server's own listener: a revoked certificate's connection is cut unread.
  server.prependListener('secureConnection', (socket: TLSSocket) => material.admit(socket));
  material.onReload(() => server.setSecureContext({ ...material.material() }));
  return server;
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}
