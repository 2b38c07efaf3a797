// One Baton node with real parts: the WAL and snapshot files, the LMDB state machine, the TCP
// peer transport, the HTTP API and real timers. This is the only place that wires them; the
// driver and everything below it are written against interfaces.
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { SeededRandom } from '../base/random.js';
import { CorruptFileError } from '../base/errors.js';
import { createHttpHandler } from '../api/http/handler.js';
import { defaultApiLimits } from '../api/http/limits.js';
import { createWatchRoutes } from '../api/http/watch-routes.js';
import { createLeaseRoutes } from '../api/http/lease-routes.js';
import { EtcdGrpcServer } from '../api/grpc/server.js';
import { createMaintenanceRoutes } from '../api/http/maintenance-routes.js';
import { keepaliveFrameHandler } from '../api/stream/lease-frames.js';
import { StreamServer, WatchService } from '../api/stream/index.js';
import { MvccStore, defaultMvccLimits, type ApplyOutcome } from '../mvcc/index.js';
import { createRaftNode, defaultRaftConfig, type Snapshot, type SnapshotMeta } from '../raft/index.js';
import { SnapshotStore } from '../snap/index.js';
import { LmdbEngine } from '../storage/index.js';
import { PeerTransport } from '../transport/index.js';
import { Wal } from '../wal/index.js';
import { CellService } from '../kv/cell-service.js';
import type { NodeConfig } from './config.js';
import { NodeDriver } from '../driver/driver.js';
import { KvStateMachine } from '../driver/kv-state-machine.js';
import { DurableLogStore } from '../driver/log-store.js';
import { Gauge } from '../metrics/registry.js';
import { NodeMetrics } from '../metrics/node-metrics.js';
import { SnapshotThread } from '../snap/snapshot-thread.js';
import { SnapshotTransfers } from '../snap/snapshot-transfer.js';
import { defaultLeaseServiceOptions } from '../lease/lease-config.js';
import { ReadGate } from '../kv/read-gate.js';
import { PeerLeaseForwarder } from '../lease/forward/peer-forwarder.js';
import { LeaseService } from '../lease/lease-service.js';
import { LeaseAwareStateMachine } from '../driver/lease-state-machine.js';
import type { Timers } from '../base/timers.js';
import { createNodeLocks, type NodeLocks } from './lock-wiring.js';
import { createLockRoutes } from '../api/http/lock-routes.js';
import { createElectionRoutes } from '../api/http/election-routes.js';
import { lockFrameHandlers } from '../api/stream/lock-frames.js';
import { createMemberRoutes } from '../api/http/member-routes.js';
import { MemberDirectory } from '../membership/member-directory.js';
import { resolveIdentity } from '../membership/member-identity.js';
import { Membership } from '../membership/membership.js';
import { MembershipAwareStateMachine } from '../driver/membership-state-machine.js';

export interface RunningNode {
  readonly service: CellService;
  stop(): Promise<void>;
}

export interface NodeLogger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

const realTimers: Timers = {
  setTimeout(callback, ms) {
    const timer = setTimeout(callback, ms);
    return { cancel: () => clearTimeout(timer) };
  },
  monotonicMs: () => performance.now(),
  soon: (callback) => void setImmediate(callback),
};

export async function startNode(
  config: NodeConfig,
  log: NodeLogger,
  onFatal: (error: Error) => void,
  /** This member was removed from the cell: the caller stops it. */
  onRemoved: () => void = () => {},
): Promise<RunningNode> {
  mkdirSync(config.dataDir, { recursive: true });
  // A node that joined a running cell got its id and cluster id from the cell (member.json).
  const identity = await resolveIdentity(config, log);
  config = { ...config, memberId: identity.memberId, clusterId: identity.clusterId };
  const directory = new MemberDirectory(identity.bootstrap);
  const { wal, recovered, snapshot, snapshots } = await openDurableLog(config.dataDir, log);
  // Deferred commits: the WAL and snapshot rebuild the file after an OS crash (storage/boot-marker.ts).
  const dbDirectory = join(config.dataDir, 'db');
  const engine = LmdbEngine.open({ directory: dbDirectory, commits: 'deferred', logger: log });
  const store = new MvccStore(engine, {
    ...defaultMvccLimits,
    valueBytesMax: config.valueBytesMax,
    ...config.tuning.leaseLimits,
  });
  if (snapshot !== null && store.appliedIndex < snapshot.meta.index) {
    log.info(`restoring the state machine from snapshot ${snapshot.meta.index} (db applied ${store.appliedIndex})`);
    store.restore([snapshot.data]);
  }
  const lastIndex = recovered.entries.at(-1)?.index ?? recovered.snapshotMeta?.index ?? 0;
  if (store.appliedIndex > lastIndex) {
    throw new CorruptFileError(join(config.dataDir, 'wal'), 0,
      `the state machine applied index ${store.appliedIndex} is beyond the log's last index ${lastIndex}`);
  }
  const core = createRaftNode(
    { ...defaultRaftConfig, id: config.memberId, electionTicks: config.electionTicks },
    {
      hardState: recovered.hardState,
      snapshot,
      entries: recovered.entries,
      // A joining node starts with no configuration: the first one it applies comes from the log.
      initialConfState: {
        voters: identity.joined ? [] : config.members.map((m) => m.id),
        votersOutgoing: [],
        learners: [],
      },
      appliedIndex: store.appliedIndex,
    },
    new SeededRandom(randomBytes(8).readBigUInt64LE()),
  );
  const nodeMetrics = new NodeMetrics(core, {
    appliedIndex: () => store.appliedIndex,
    dbBytes: () => engine.diskBytes(),
    revision: () => store.revision,
  });
  let driver: NodeDriver<ApplyOutcome> | null = null;
  const transfers = new SnapshotTransfers(snapshots, {
    reportSnapshot: (to, ok) => core.reportSnapshot(to, ok),
    logger: log,
  });
  // Set once membership exists (the transport, created first, reports removals to it).
  let membershipRef: Membership | null = null;
  // The directory's live list: lease forwarding finds members added later.
  const leasePeers = new PeerLeaseForwarder(directory.live);
  const transport = await PeerTransport.start({
    memberId: config.memberId,
    clusterId: config.clusterId,
    listen: { host: config.listenPeer.hostname, port: Number(config.listenPeer.port) },
    // Membership dials the configuration's members (membership.start(), below).
    peers: new Map(),
    onMessages: (batch) => driver?.receive(batch),
    onLeaseMessage: (from, message) => leasePeers.receive(from, message),
    onSnapshot: (incoming) => transfers.receive(incoming, (message) => driver?.receive([message])),
    reportUnreachable: (to) => core.reportUnreachable(to),
    reportSnapshot: (to, ok) => core.reportSnapshot(to, ok),
    onRemovedByPeer: (peer) => membershipRef?.removedByPeer(peer),
    logger: {
      info: (fields, message) => log.info(`${message} ${JSON.stringify(fields)}`),
      warn: (fields, message) => log.warn(`${message} ${JSON.stringify(fields)}`),
    },
  });
  const snapshotThread = SnapshotThread.start({ dbDirectory, commits: engine.commits, dataDir: config.dataDir });
  const logStore = new DurableLogStore(
    wal,
    snapshots,
    (s) => nodeMetrics.walSyncSeconds.observe(s),
    (s) => nodeMetrics.snapshotSeconds.observe(s),
    snapshotThread,
  );
  let service: CellService | null = null;
  let locks: NodeLocks | null = null;
  const watches = new WatchService(store, { limits: config.tuning.watchLimits });
  const leases = new LeaseService(
    { memberId: config.memberId, store, timers: realTimers, wallMs: () => Date.now(), forwarder: leasePeers },
    { ...defaultLeaseServiceOptions, requestTimeoutMs: config.requestTimeoutMs },
  );
  leasePeers.attach(transport, leases);
  const stateMachine = new MembershipAwareStateMachine(new LeaseAwareStateMachine(new KvStateMachine(store), leases));
  const membership = new Membership(config, core, {
    get isLeader() { return driver?.isLeader ?? false; },
    get leaderId() { return driver?.leaderId ?? 0; },
    receive: (messages) => driver?.receive(messages),
  }, store, directory, transport, realTimers, log, onRemoved);
  membershipRef = membership;
  stateMachine.attach(membership);
  membership.start(identity.joined);
  // How long ready callbacks wait behind the running one: every request's latency includes it.
  // The histogram holds the intervals between its 10 ms samples: the delay is the excess.
  const loopDelayResolutionMs = 10;
  const loopDelay = monitorEventLoopDelay({ resolution: loopDelayResolutionMs });
  loopDelay.enable();
  const delaySeconds = (intervalNs: number): number => Math.max(0, intervalNs / 1e9 - loopDelayResolutionMs / 1000);
  for (const [quantile, label] of [[50, 'p50'], [99, 'p99'], [99.9, 'p999']] as const) {
    nodeMetrics.registry.add(new Gauge(`baton_event_loop_delay_${label}_seconds`,
      `Event loop delay ${label} since the node started`, () => delaySeconds(loopDelay.percentile(quantile))));
  }
  nodeMetrics.registry.add(new Gauge('baton_event_loop_delay_max_seconds', 'Longest event loop delay seen', () => delaySeconds(loopDelay.max)));
  nodeMetrics.registry.add(new Gauge('baton_wal_syncs_total', 'WAL fdatasync calls for appends (one per group commit)', () => wal.stats().syncs));
  const sentTotal = (field: 'sentMessages' | 'sentWrites'): number => {
    let total = 0;
    for (const peer of transport.stats().peers.values()) total += peer[field];
    return total;
  };
  nodeMetrics.registry.add(new Gauge('baton_peer_sent_messages_total', 'Raft messages sent to peers', () => sentTotal('sentMessages')));
  nodeMetrics.registry.add(new Gauge('baton_peer_sent_writes_total', 'Socket writes to peers (each carries the messages of one flush)', () => sentTotal('sentWrites')));
  nodeMetrics.registry.add(new Gauge('baton_apply_batches_total', 'State machine write transactions for committed entries', () => driver?.applyBatches ?? 0));
  nodeMetrics.registry.add(new Gauge('baton_leases', 'Leases in the replicated table', () => store.leaseCount()));
  nodeMetrics.registry.add(
    new Gauge('baton_leases_tracked', 'Lease deadlines tracked here (the leader only)', () => leases.trackedCount),
  );
  driver = new NodeDriver(core, logStore, stateMachine, membership.peerSender(transfers.peerSender(transport)), realTimers,
    {
      requestTimeoutMs: config.requestTimeoutMs,
      snapshotEntries: config.snapshotEntries,
      // Members 1, 2, 3 snapshot a third of the interval apart.
      snapshotPhase: Math.floor(((config.memberId % 3) * config.snapshotEntries) / 3),
      // A restarted member waits for as much log as the snapshot it restarted from, too.
      startSnapshotBytes: snapshot?.data.length ?? 0,
      readysInFlightMax: 8,
    },
    {
      onLeaderChange: (leader, role) => {
        nodeMetrics.leaderChanges.inc();
        watches.onLeaderChange(leader);
        leases.onLeaderChange();
        log.info(`leader is now ${leader === 0 ? 'unknown' : `member ${leader}`} (this node: ${role})`);
      },
      onApplied: () => {
        service?.onApplied();
        membership.onApplied();
        locks?.onApplied();
        watches.onApplied();
        leases.onApplied();
      },
      onFatal: (error) => onFatal(error),
    },
  );
  leases.attach(driver, core);
  service = new CellService(config, core, driver, store, nodeMetrics, new ReadGate(config.tuning.readGate), membership);
  locks = createNodeLocks({ cell: service, store, timers: realTimers, registry: nodeMetrics.registry });
  const ticker = setInterval(() => {
    driver?.tick();
    leases.tick();
  }, config.tickMs);
  const apiLimits = { ...defaultApiLimits, valueBytesMax: config.valueBytesMax };
  const logError = (error: unknown): void => log.error(`request failed: ${(error as Error)?.stack ?? String(error)}`);
  const handler = createHttpHandler({
    cell: service,
    limits: apiLimits,
    routeGroups: [createWatchRoutes(watches), createLeaseRoutes(leases), createLockRoutes(locks.locks), createElectionRoutes(locks.elections), createMaintenanceRoutes(store), createMemberRoutes(membership, service, driver)],
    logError,
  });
  const http = createServer((req, res) => {
    res.once('finish', () => nodeMetrics.requests.inc({ code: String(res.statusCode) }));
    handler(req, res);
  });
  http.keepAliveTimeout = 30_000;
  const stream = new StreamServer({
    cell: service,
    apiLimits,
    service: watches,
    logError,
    handlers: { keepalive: keepaliveFrameHandler(leases), ...lockFrameHandlers(locks.locks, locks.elections) },
  });
  stream.attach(http);
  await listen(http, Number(config.listenClient.port), config.listenClient.hostname);
  const grpc = config.listenGrpc === null ? null : await EtcdGrpcServer.start(
    {
      cell: service, leases, watches, logError, locks: locks.locks, elections: locks.elections,
      leaseBounds: { ttlMsMin: store.limits.leaseTtlMsMin, ttlMsMax: store.limits.leaseTtlMsMax },
      cluster: { grpcUrls: config.grpcUrls, dbBytes: () => engine.diskBytes() },
      snapshots: {
        open: () => {
          // snapshot() opens the read view synchronously: the revision read next belongs to it.
          const view = store.snapshot({ chunkBytesMax: 256 * 1024 });
          return { revision: store.revision, chunks: view.chunks };
        },
      },
    },
    config.listenGrpc.hostname,
    Number(config.listenGrpc.port),
  );
  log.info(`serving ${config.listenClient.href} (peers ${config.listenPeer.href}${grpc === null ? '' : `, etcd gRPC ${config.listenGrpc?.href}`}), member ${config.memberId}, cluster ${config.clusterId}`);
  return {
    service,
    async stop() {
      clearInterval(ticker);
      leases.stop();
      leasePeers.stop();
      driver?.stop();
      // Watch streams end cleanly (each hears `unavailable` and its last revision) before sockets go.
      await watches.stop();
      stream.close();
      await grpc?.stop();
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      });
      await transport.close();
      await snapshotThread.close();
      await wal.close();
      await engine.close();
    },
  };
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

/**
 * The WAL and the snapshot it continues from: the one its marker names, or, when that file is
 * damaged, the newest older intact one, provided the log still holds every entry after it.
 * Otherwise the node refuses to start, naming the damaged file and offset.
 */
async function openDurableLog(dataDir: string, log: NodeLogger) {
  const logger = { warn: (m: string) => log.warn(m) };
  const snapshots = new SnapshotStore(dataDir, { logger });
  await snapshots.init();
  const opened = await Wal.open(dataDir, { logger });
  try {
    const snapshot = await loadSnapshotAt(snapshots, opened.recovered.snapshotMeta);
    return { ...opened, snapshot, snapshots };
  } catch (error) {
    const marker = opened.recovered.snapshotMeta;
    if (!(error instanceof CorruptFileError) || marker === null) throw error;
    await opened.wal.close();
    for (const older of await snapshots.list()) {
      if (older.index >= marker.index) continue;
      let snapshot: Snapshot;
      try {
        snapshot = await snapshots.load(older.path);
      } catch (olderError) {
        if (olderError instanceof CorruptFileError) continue;
        throw olderError;
      }
      log.warn(`snapshot ${marker.index} is damaged (${error.message}); restoring from older snapshot ${older.index}`);
      const reopened = await Wal.open(dataDir, { logger, restoreIndex: older.index });
      return { ...reopened, snapshot, snapshots };
    }
    throw error;
  }
}

/** The snapshot the WAL's marker names (the log continues right after it). */
async function loadSnapshotAt(snapshots: SnapshotStore, meta: SnapshotMeta | null): Promise<Snapshot | null> {
  if (meta === null) return null;
  const info = (await snapshots.list()).find((f) => f.index === meta.index && f.term === meta.term);
  if (info === undefined) {
    throw new CorruptFileError(snapshots.dir, 0, `the WAL needs snapshot ${meta.index}/${meta.term}, which is missing`);
  }
  return snapshots.load(info.path);
}
