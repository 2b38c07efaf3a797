// One Baton node with real parts: the WAL and snapshot files, the LMDB state machine, the TCP
// peer transport, the HTTP, stream and gRPC APIs and real timers. This is the only place that
// wires them, in four steps: open the durable state, start the peers, build the services (each
// from the ones before it), start the APIs. Everything below is written against interfaces.
import { bootElectionAdvance } from './boot-election.js';
import { LedgerFileKeeper, readLedgerFile } from './ledger-file.js';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { ConfigError } from '../base/config-error.js';
import { join } from 'node:path';
import { SeededRandom } from '../base/random.js';
import { CorruptFileError } from '../base/errors.js';
import type { Timers } from '../base/timers.js';
import { WatchService } from '../api/stream/index.js';
import { currentSource, trackSources } from '../api/request-source.js';
import { MvccStore, defaultMvccLimits, type ApplyOutcome, type Command } from '../mvcc/index.js';
import { createRaftNode, defaultRaftConfig, type Entry, type MemberId, type SnapshotMeta } from '../raft/index.js';
import { currentBootId, dataFileName, LmdbEngine } from '../storage/index.js';
import {
  dataKeyId, hasRecordKeys, loadKeyring, openRecordKeys, openStoreKey, RecordRewriter, recordKeysPath, RecordSealer, SealedEngine, segmentKeysOf, storeKeyFileName,
  type Keyring, type RecordKeys, type StoreKey,
} from '../keys/index.js';
import { PeerTransport } from '../transport/index.js';
import { CellService } from '../kv/cell-service.js';
import { ReadGate } from '../kv/read-gate.js';
import { NodeDriver } from '../driver/driver.js';
import { LogProposer } from '../driver/command-proposer.js';
import { KvStateMachine } from '../driver/kv-state-machine.js';
import { DurableLogStore } from '../driver/log-store.js';
import { NodeMetrics } from '../metrics/node-metrics.js';
import { SnapshotThread } from '../snap/snapshot-thread.js';
import { SnapshotTransfers } from '../snap/snapshot-transfer.js';
import { defaultLeaseServiceOptions } from '../lease/lease-config.js';
import { LeaseService } from '../lease/lease-service.js';
import { PeerLeaseForwarder } from '../lease/forward/peer-forwarder.js';
import { MemberDirectory } from '../membership/member-directory.js';
import { resolveIdentity, type NodeIdentity } from '../membership/member-identity.js';
import { Membership, memberPeersOf } from '../membership/membership.js';
import type { MemberPeers } from '../membership/member-peers.js';
import type { NodeConfig, StoreCipher } from './config.js';
import { openDurableLog } from './durable-log.js';
import { createNodeLocks, type NodeLocks } from './lock-wiring.js';
import { addNodeGauges } from './node-gauges.js';
import { PeerInbox } from './peer-inbox.js';
import { startApis } from './apis.js';
import { startAutoCompaction } from './compactor-wiring.js';
import { StoreUpgrader } from './store-upgrade.js';
import { BackupTask } from './backup-task.js';
import { CellCanary } from './cell-canary.js';
import { checkpointEntriesMax, gracefulStopMs, readysInFlightMax, snapshotLogBytes } from '../base/limits.js';
import { assert } from '../base/assert.js';
import { PeerRttMeter, timedSender } from './peer-rtt.js';
import { addServiceMetrics } from './service-metrics.js';
import { addTenantMetrics, type TenantMetricSources } from './tenant-metrics.js';
import { TenantAdmission } from '../base/tenant-admission.js';
import { TenantWatchQuotas } from '../watch/index.js';
import { FairAdmission } from '../base/fair-admission.js';
import { SessionGate } from '../base/session-gate.js';
import type { HistogramChild } from '../metrics/registry.js';
import { lmdbMapBytes, type LateMetricSources, peerBytesOf } from './metric-sources.js';
import { Gauge } from '../metrics/registry.js';
import { AccessGuard, createAuthorizer, type Access } from '../auth/index.js';
import { AuditLog, auditRecordsOf, isAuditedCommand } from '../audit/index.js';
import { loadNodeTls, peerTlsOf, type NodeTls } from './tls-wiring.js';

export interface RunningNode {
  readonly service: CellService;
  /**
   * `graceful` (SIGTERM, SIGINT): a leader hands leadership away first, and client requests in
   * flight get up to `gracefulStopMs` to finish; otherwise (a fatal error, removal) it stops at once.
   */
  stop(options?: { graceful?: boolean }): Promise<void>;
}

/** Test-only hooks (node/testing/fault-hooks.ts); none in production. */
export interface NodeTestHooks {
  /** Given the store's directory, what to call after each durable checkpoint. */
  readonly onCheckpoint?: (dbDirectory: string) => () => void;
}

export interface NodeLogger {
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

/** Structured fields of a line (a request's id, route, status, time): JSON keys, or `k=v` in text. */
export type LogFields = Readonly<Record<string, string | number>>;

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
  hooks: NodeTestHooks = {},
): Promise<RunningNode> {
  const state = await openDurableState(config, log, hooks);
  config = state.config;
  const tls = loadNodeTls(config, log);
  const peers = await startPeers(config, state, log, onRemoved, tls);
  // Refused peer connections: foreign clusters, unknown members, and (with TLS) bad certificates and impostors.
  state.metrics.registry.add(new Gauge('baton_peer_connections_refused_total', 'Peer connections refused before any message was taken',
    () => peers.transport.stats().rejectedConnections, 'counter'));
  const audit = config.auditLog === null ? null : await AuditLog.open({
    path: config.auditLog.path, maxBytes: config.auditLog.maxBytes, keep: 5, member: config.memberId, cell: config.cellId,
  });
  if (audit !== null) trackSources();
  const services = buildServices(config, state, peers, log, onFatal, audit);
  connect(state, peers, services, log, audit);
  const apis = await startApis(config, state, services, log, tls, audit);
  const compactor = startAutoCompaction(config, { ...state, ...services }, realTimers, log);
  const upgrader = new StoreUpgrader({
    view: () => {
      const status = services.driver.status();
      const peerStats = peers.transport.stats().peers;
      return {
        self: config.memberId, role: status.role, storeFormat: state.store.storeFormat, confState: status.confState,
        acceptedVersion: (id) => peerStats.get(id)?.acceptedVersion ?? null,
      };
    },
    proposer: services.proposer, timers: realTimers, log,
  });
  if (config.storeUpgrade === 'auto') upgrader.start();
  else log.info(`store upgrade: off (the store stays at format ${state.store.storeFormat} while this member leads)`);
  const backups = config.backup === null ? null : new BackupTask(config.backup, {
    store: state.store,
    isLeader: () => services.driver.status().role === 'leader',
    identity: { clusterId: config.clusterId, cell: config.cellId, member: config.memberId },
    timers: realTimers,
    nowMs: () => Date.now(),
    log,
    keyring: state.keyring,
  });
  backups?.registerMetrics(state.metrics.registry);
  backups?.start();
  const canary = !config.canary ? null : new CellCanary({
    isLeader: () => services.driver.status().role === 'leader',
    endpoints: () => services.membership.members().map((member) => member.clientUrl).filter((url) => url !== ''),
    registry: state.metrics.registry,
    log,
    names: `canary-${config.cellId}-m${config.memberId.toString(16)}`,
    clientTls: config.clientTls,
    peerTls: config.peerTls,
  });
  canary?.start();
  state.recordRewriter?.start(onFatal);
  const advanceElection = bootElectionAdvance(config, () => [...peers.transport.stats().peers.values()].some((peer) => peer.connected));
  const ticker = setInterval(() => {
    if (advanceElection()) services.driver.advanceElectionClock();
    services.driver.tick();
    services.leases.tick();
  }, config.tickMs);
  // What peers promised this member, kept beside its log so it outlives a restart (ledger-file.ts).
  const ledgerFile = new LedgerFileKeeper(config.dataDir, state.core, (error) => log.warn(`peer ledger not saved: ${error.message}`));
  log.info(`serving ${config.listenClient.href} (peers ${config.listenPeer.href}${apis.grpc === null ? '' : `, etcd gRPC ${config.listenGrpc?.href}`}), member ${config.memberId}, cluster ${config.clusterId}`);
  return {
    service: services.cell,
    async stop(options = {}) {
      // The canary first: its probes call this node's API, which is about to hand leadership away and close.
      await canary?.stop();
      if (options.graceful === true && !services.membership.removed) {
        log.info(`stopping: ${await services.membership.leaveLeadership()}`);
      }
      clearInterval(ticker);
      compactor.stop();
      upgrader.stop();
      await backups?.stop();
      services.leases.stop();
      services.locks.stop();
      peers.leaseForwarder.stop();
      services.driver.stop();
      await ledgerFile.stop();
      // Watch streams hear `unavailable` and their last revision first (they resume elsewhere).
      await apis.stop(options.graceful === true ? gracefulStopMs : 0);
      await peers.transport.close();
      state.recordRewriter?.stop();
      await state.snapshotThread.close();
      await state.wal.close();
      await state.engine.close();
      await audit?.close();
      tls.close();
    },
  };
}

type DurableState = Awaited<ReturnType<typeof openDurableState>>;

/**
 * The store's data key: unwrapped with the configured keyring (a wrong key stops the node naming
 * the key file), created for a new store, refused for a store encrypted one way and configured
 * the other (docs/design/encryption.md).
 */
function openStoreEncryption(keyring: Keyring | null, cipher: StoreCipher, dbDirectory: string, log: NodeLogger): StoreKey | RecordKeys | null {
  mkdirSync(dbDirectory, { recursive: true });
  const keysPath = recordKeysPath(dbDirectory);
  if (hasRecordKeys(dbDirectory)) {
    if (keyring === null) throw new ConfigError(`${join(dbDirectory, dataFileName)} seals its records (${keysPath}); start with --encryption-key-file or --encryption-key-command`);
    const keys = openRecordKeys(dbDirectory, keyring, { create: false, write: true });
    log.info(`encryption at rest: the store seals its records (data key ${keys.activeNo}, key-encryption key ${keyring.active.id}, open ${keys.openNo})`);
    return keys;
  }
  const fresh = !existsSync(join(dbDirectory, dataFileName)) && !existsSync(join(dbDirectory, storeKeyFileName));
  if (keyring !== null && cipher === 'records' && fresh) {
    const keys = openRecordKeys(dbDirectory, keyring, { create: true, write: true });
    log.info(`encryption at rest: the store seals its records (new data key, key-encryption key ${keyring.active.id})`);
    return keys;
  }
  const key = openStoreKey(dbDirectory, dataFileName, keyring, cipher === 'lmdb-chacha8');
  if (key === null && keyring !== null) log.warn('encryption at rest: the WAL is encrypted, the store (db/state.mdb) is not (it was created without a key, or with --encryption-store-cipher none; docs/design/encryption.md)');
  if (key?.rewrapped === true) log.info(`${join(dbDirectory, storeKeyFileName)}: data key rewrapped under the active key-encryption key ${key.kekId}`);
  if (key !== null) log.info(`encryption at rest: the store is encrypted (key-encryption key ${key.kekId})`);
  return key;
}

/** How much the store may hold back before it commits at once (a move's import, a compaction). */
const storeWriteBehindBounds = { maxKeys: 4_096, maxBytes: 8 * 1024 * 1024 } as const;

/** Step 1: who this member is, its log and snapshots, the LMDB store at their index, the core. */
async function openDurableState(initial: NodeConfig, log: NodeLogger, hooks: NodeTestHooks) {
  mkdirSync(initial.dataDir, { recursive: true });
  // A node that joined a running cell got its id and cluster id from the cell (member.json).
  const identity: NodeIdentity = await resolveIdentity(initial, log);
  const config = { ...initial, memberId: identity.memberId, clusterId: identity.clusterId, restoredFrom: identity.restoredFrom };
  // The store first: it is the durable state, at its last checkpoint after an OS crash
  // (storage/checkpointer.ts); the WAL holds what came after.
  const dbDirectory = join(config.dataDir, 'db');
  const keyring = config.encryption === null ? null : loadKeyring(config.encryption);
  const storeEncryption = openStoreEncryption(keyring, config.storeCipher, dbDirectory, log);
  const storeKey = storeEncryption !== null && 'lmdbKey' in storeEncryption ? storeEncryption : null;
  const recordKeys = storeEncryption !== null && 'byNo' in storeEncryption ? storeEncryption : null;
  const cipher = storeKey === null ? {} : { encryptionKey: storeKey.lmdbKey };
  const engine = LmdbEngine.open({
    directory: dbDirectory, commits: 'deferred', logger: log, onCheckpoint: hooks.onCheckpoint?.(dbDirectory), ...cipher,
    ...(config.tuning.storeWriteBehindMs === 0 ? {} : { writeBehind: { delayMs: config.tuning.storeWriteBehindMs, ...storeWriteBehindBounds } }),
  });
  const sealer = recordKeys === null ? null : new RecordSealer(recordKeys, join(dbDirectory, dataFileName));
  const sealed = sealer === null ? engine : new SealedEngine(engine, sealer);
  // Records still sealed under an older data key (after `baton keys rotate --data-key`) are sealed
  // again under the active one in the background (keys/record-rewrite.ts; started with the node).
  const recordRewriter = recordKeys === null || sealer === null || recordKeys.byNo.size < 2 ? null : new RecordRewriter({
    engine, sealer, keyNos: [...recordKeys.byNo.keys()], activeKeyId: dataKeyId(recordKeys.byNo.get(recordKeys.activeNo) as Buffer),
    directory: dbDirectory, bootId: engine.commits === 'deferred' ? currentBootId() : null,
    checkpoint: () => engine.checkpoint(), timers: realTimers, log, ...config.tuning.recordRewrite,
  });
  const store = new MvccStore(sealed, { ...defaultMvccLimits, valueBytesMax: config.valueBytesMax, ...config.tuning.leaseLimits });
  // Every member decides client commands against the policy they apply on (docs/design/authorization.md).
  store.setAuthorizer(createAuthorizer());
  const { wal, recovered, snapshot, snapshots, snapshotLoaded } = await openDurableLog(config.dataDir, log, store.appliedIndex,
    keyring === null ? null : segmentKeysOf(keyring), keyring);
  if (snapshot !== null && store.appliedIndex < snapshot.meta.index) {
    assert(snapshotLoaded, 'a store behind the log start restores from the snapshot file');
    log.info(`restoring the state machine from snapshot ${snapshot.meta.index} (db applied ${store.appliedIndex})`);
    store.restore(snapshots.dataOf(snapshot.meta));
  }
  const lastIndex = recovered.entries.at(-1)?.index ?? recovered.snapshotMeta?.index ?? 0;
  if (store.appliedIndex > lastIndex) {
    throw new CorruptFileError(join(config.dataDir, 'wal'), 0,
      `the state machine applied index ${store.appliedIndex} is beyond the log's last index ${lastIndex}`);
  }
  // The live-key count (etcd_debugging_mvcc_keys_total) costs one scan of the keys: at boot, not at a scrape.
  store.liveKeys();
  const core = createRaftNode(
    // ledgerCheck: after a restart, ask the peers what this member promised them before voting or
    // acknowledging (src/raft/peer-ledger.ts): a data directory restored from an older copy is found.
    { ...defaultRaftConfig, id: config.memberId, electionTicks: config.electionTicks, ledgerCheck: true, deferCommitNotices: config.tuning.commitNoticeDelayMs > 0 },
    {
      hardState: recovered.hardState,
      snapshot,
      entries: recovered.entries,
      // A joining node starts with no configuration: the first one it applies comes from the log.
      initialConfState: { voters: identity.joined ? [] : identity.bootstrap.map((m) => m.id), votersOutgoing: [], learners: [] },
      appliedIndex: store.appliedIndex,
      ledger: readLedgerFile(config.dataDir),
    },
    new SeededRandom(randomBytes(8).readBigUInt64LE()),
  );
  const snapshotThread = SnapshotThread.start({
    dbDirectory, commits: engine.commits, dataDir: config.dataDir, ...cipher,
    ...(recordKeys === null ? {} : { recordKeys: { activeNo: recordKeys.activeNo, keys: [...recordKeys.byNo].map(([no, key]) => [no, Uint8Array.from(key)] as const) } }),
    ...(keyring === null ? {} : { keys: [keyring.active.key, ...[...keyring.byId.values()].filter((kek) => kek !== keyring.active).map((kek) => kek.key)] }),
  });
  // The transport and the driver come later (steps 2 and 3): their counters are read through `late`.
  const late: LateMetricSources = { transport: null, driver: null };
  const metrics = new NodeMetrics(core, {
    appliedIndex: () => store.appliedIndex,
    dbBytes: () => engine.diskBytes(),
    dbBytesInUse: () => engine.usedBytes(),
    dbBytesMax: () => lmdbMapBytes,
    revision: () => store.revision,
    compactRevision: () => store.compactRevision,
    keys: () => store.liveKeys(),
    walBytes: () => wal.stats().bytesWritten,
    proposalsPending: () => late.driver?.pendingProposals ?? 0,
    peerBytes: () => peerBytesOf(late.transport),
  });
  metrics.registry.addDefaultMetrics();
  const rttByPeer = new Map<MemberId, HistogramChild>();
  const rtt = new PeerRttMeter((to, seconds) => {
    let child = rttByPeer.get(to);
    if (child === undefined) rttByPeer.set(to, (child = metrics.peerRtt.child({ To: to.toString(16) })));
    child.observe(seconds);
  });
  const logStore = new DurableLogStore(wal, snapshots, {
    onSyncSeconds: (s) => metrics.walSyncSeconds.observe(s),
    onSnapshotSeconds: (s) => metrics.snapshotSeconds.observe(s),
    // The applied index read now is what the checkpoint pins (it starts synchronously).
    checkpointState: () => {
      const applied = store.appliedIndex;
      const started = performance.now();
      return engine.checkpoint().then(() => {
        metrics.checkpointSeconds.observe((performance.now() - started) / 1000);
        return applied;
      });
    },
  });
  const directory = new MemberDirectory(identity.bootstrap);
  return { config, identity, wal, snapshot, snapshots, engine, store, core, snapshotThread, metrics, late, rtt, logStore, directory, keyring, recordRewriter };
}

interface Peers {
  readonly inbox: PeerInbox;
  readonly transport: PeerTransport;
  readonly transfers: SnapshotTransfers;
  readonly memberPeers: MemberPeers;
  readonly leaseForwarder: PeerLeaseForwarder;
}

/** Step 2: the peer transport (receiving through the inbox) and what sends on it. */
async function startPeers(config: NodeConfig, state: DurableState, log: NodeLogger, onRemoved: () => void, tls: NodeTls): Promise<Peers> {
  const inbox = new PeerInbox();
  const transport = await PeerTransport.start({
    ...(tls.peer === null ? {} : { tls: peerTlsOf(tls.peer, config.cellId, (id) => state.directory.get(id)?.name) }),
    memberId: config.memberId,
    clusterId: config.clusterId,
    listen: { host: config.listenPeer.hostname, port: Number(config.listenPeer.port) },
    // Membership dials the configuration's members (membership.start(), in connect()).
    peers: new Map(),
    onMessages: (batch) => {
      state.rtt.onReceived(batch);
      inbox.onMessages(batch);
    },
    onLeaseMessage: inbox.onLeaseMessage,
    onSnapshot: inbox.onSnapshot,
    reportUnreachable: inbox.reportUnreachable,
    reportNoLedger: inbox.reportNoLedger,
    reportSnapshot: inbox.reportSnapshot,
    onRemovedByPeer: inbox.onRemovedByPeer,
    logger: {
      info: (fields, message) => log.info(`${message} ${JSON.stringify(fields)}`),
      warn: (fields, message) => log.warn(`${message} ${JSON.stringify(fields)}`),
    },
  });
  const transfers = new SnapshotTransfers(state.snapshots, { reportSnapshot: inbox.reportSnapshot, logger: log });
  state.late.transport = transport;
  const memberPeers = memberPeersOf(config, state.core.status().confState, state.store, state.directory, transport,
    realTimers, log, onRemoved);
  // The directory's live list: lease forwarding finds members added later.
  const leaseForwarder = new PeerLeaseForwarder(state.directory.live, transport);
  return { inbox, transport, transfers, memberPeers, leaseForwarder };
}

export interface NodeServices {
  readonly driver: NodeDriver<ApplyOutcome>;
  readonly leases: LeaseService;
  readonly membership: Membership;
  readonly cell: CellService;
  readonly locks: NodeLocks;
  readonly watches: WatchService;
  /** The member's authorization decisions (src/auth/guard.ts), and the policy the edges read. */
  readonly guard: AccessGuard;
  /** The member's one write path (the store upgrader proposes through it). */
  readonly proposer: LogProposer;
  /** New sessions per second on this member (#28 session storms): lease grants and stream opens. */
  readonly sessions: SessionGate | null;
  /** Tenants' use of the admission quotas on this member (metrics, GET /v1/tenants). */
  readonly tenantSources: TenantMetricSources;
}

/** Step 3: the driver and the services, each built from the ones before it. */
function buildServices(config: NodeConfig, state: DurableState, peers: Peers, log: NodeLogger, onFatal: (error: Error) => void, audit: AuditLog | null): NodeServices {
  const { store, metrics } = state;
  const stateMachine = new KvStateMachine(store, (meta) => state.snapshots.dataOf(meta));
  const driver: NodeDriver<ApplyOutcome> = new NodeDriver(state.core, state.logStore, stateMachine,
    // A follower that needs a snapshot gets one made now from a read view (snap/snapshot-transfer.ts).
    timedSender(state.rtt, peers.memberPeers.sender(peers.transfers.peerSender(peers.transport,
      async (): Promise<SnapshotMeta | null> => (await state.snapshotThread.snapshot((index) => driver.snapshotMetaAt(index)))?.meta ?? null))),
    realTimers,
    {
      requestTimeoutMs: config.requestTimeoutMs,
      // Unused: the store checkpoints (below) instead of snapshotting on a schedule.
      snapshotEntries: Number.MAX_SAFE_INTEGER,
      checkpoint: {
        everyTicks: Math.max(1, Math.round(config.checkpointMs / config.tickMs)),
        everyEntries: checkpointEntriesMax,
        keepEntries: config.logCatchupEntries,
        keepBytes: snapshotLogBytes,
      },
      readysInFlightMax,
      commitNoticeDelayMs: config.tuning.commitNoticeDelayMs,
    },
    { onFatal },
  );
  state.late.driver = driver;
  // One guard decides every request this member serves (reads, watches, administration) and
  // checks every write before it is proposed; the store's authorizer decides writes at apply.
  // With an audit log, the serving member records what it refused, audited changes wait for their
  // record to be durable before they are answered, and none is taken once the log cannot be written.
  const guard = new AccessGuard(store, audit === null ? null : (principal, denied, reason) => audit.record({
    event: 'denied', principal, address: currentSource() ?? null, result: 'permission_denied', detail: { access: describeAccess(denied), reason },
  }));
  // Tenants' admission quotas on this node (#28): rates, concurrent requests, watches; it also
  // counts every quota refusal this member answers, those decided at apply included.
  const admission = new TenantAdmission({ tenants: () => store.tenantTable(), nowMs: () => performance.now(), random: Math.random });
  const proposer = new LogProposer(driver, {
    memberId: config.memberId,
    limits: store.limits,
    wallMs: () => Date.now(),
    monotonicMs: () => performance.now(),
    onProposed: (seconds) => metrics.proposalSeconds.observe(seconds),
    onFailed: () => metrics.proposalsFailed.inc(),
    onRefused: (error) => admission.countRefusal(error),
    // Authorization, then ownership (wrong_cell / cross_cell): a refused write costs no entry. Apply
    // decides both again on the state it applies on (an ownership change may commit in between).
    // A Request-ID this cell holds a record of is not refused wrong_cell: apply answers the retry.
    admit: (origin, op, requestId) =>
      (audit?.failed === true && isAuditedCommand(op) ? audit.refusal() : guard.command(origin, op)) ?? store.refuseCommand(op, requestId),
    ...(audit === null ? {} : { beforeAnswer: (op: Command) => (isAuditedCommand(op) ? audit.flushed() : null), sourceAddress: currentSource }),
  });
  // Session storms (#28): a bounded rate of new sessions (grants, stream opens) with staggered guidance.
  const sessions = config.tuning.sessionGate === null ? null : new SessionGate(config.tuning.sessionGate, () => performance.now());
  const leases = new LeaseService(
    {
      memberId: config.memberId, store, timers: realTimers, driver, proposer, forwarder: peers.leaseForwarder, guard, sessions,
      onKeepalive: (ms, ok) => {
        metrics.keepaliveSeconds.observe(ms / 1000);
        if (!ok) metrics.keepaliveFailures.inc();
      },
      onConfirmRound: (ms, keepalives) => {
        metrics.confirmRoundSeconds.observe(ms / 1000);
        metrics.confirmRoundKeepalives.observe(keepalives);
      },
    },
    { ...defaultLeaseServiceOptions, requestTimeoutMs: config.requestTimeoutMs },
  );
  const membership = new Membership(config, driver, store, state.directory, peers.memberPeers, realTimers, log);
  // Fair queues per tenant (#28): only a cell with tenants passes through them.
  const fair = config.tuning.fairAdmission === null ? null : new FairAdmission(config.tuning.fairAdmission, realTimers);
  const cell = new CellService(config, driver, proposer, store, guard, metrics, new ReadGate(config.tuning.readGate), membership, admission, fair);
  const locks = createNodeLocks({ cell, store, guard, timers: realTimers, registry: metrics.registry, requestTimeoutMs: config.requestTimeoutMs });
  // Tenants' watch quotas on this node (#28): watches, buffered watch bytes, event rate.
  const watchQuotas = new TenantWatchQuotas({
    tenantOf: (key) => admission.tenantsOf([key])[0] ?? null,
    tenants: () => store.tenantTable(),
    nowMs: () => performance.now(),
    schedule: realTimers.setTimeout,
    refuse: (error, waitMs) => admission.refuse(error, waitMs),
  });
  // A watch of a namespace this cell does not own is refused like a read (docs/design/cells.md).
  const watches = new WatchService(store, guard, {
    limits: config.tuning.watchLimits, onEventLag: (seconds) => metrics.watchEventLagSeconds.observe(seconds),
  }, (spec) => store.refuseRead({ type: 'get', key: spec.key, prefix: spec.prefix }), watchQuotas, {
    lastChange: () => store.lastOwnershipChange(),
    bounds: (spec) => store.watchBounds(spec),
  });
  addNodeGauges(metrics, state, peers.transport, driver, leases);
  const tenantSources = { tenants: () => store.tenantTable(), usage: (name: string) => store.tenantUsage(name), admission, watchQuotas, fair, sessions };
  addTenantMetrics(metrics.registry, tenantSources);
  addServiceMetrics(metrics.registry, { leases, watches, locks: locks.locks });
  return { driver, leases, membership, cell, locks, watches, guard, proposer, sessions, tenantSources };
}

/** Step 3b: the driver's listeners, the inbox's receivers, then the first dials. */
function connect(state: DurableState, peers: Peers, services: NodeServices, log: NodeLogger, audit: AuditLog | null): void {
  const { driver, leases, membership, cell, locks, watches } = services;
  // A node starts knowing no leader, and the driver reports only changes: one that never hears
  // of a leader (booted into a partition, added but never caught up) must end its watches too
  // rather than serve a stale state for ever (found by the simulator's watchers, swarm seed 2229).
  watches.onLeaderChange(0);
  driver.start([
    // First: an audited entry's record is queued before its proposer hears the outcome.
    ...(audit === null ? [] : [{ onApplied: (entries: readonly Entry[], outcomes: readonly ApplyOutcome[]) => {
      for (const record of auditRecordsOf(entries, outcomes)) audit.record(record);
      // A restored cell's log starts at 1: every member that applies its first entry records the
      // restore once (the same record on each, as for a committed change), before anything else.
      const restoredFrom = state.identity.restoredFrom;
      if (restoredFrom !== null && entries[0]?.index === 1) {
        audit.record({ event: 'restore', principal: null, index: 1, result: 'ok', detail: { ...restoredFrom } });
      }
    } }]),
    leases,
    membership,
    cell,
    locks,
    watches,
    {
      onLeaderChange: (leader, role) => {
        state.metrics.leaderChanges.inc();
        log.info(`leader is now ${leader === 0 ? 'unknown' : `member ${leader}`} (this node: ${role})`);
      },
    },
  ]);
  peers.inbox.connect({
    driver,
    leaseFrame: (from, message) => peers.leaseForwarder.receive(from, message, leases),
    snapshot: (incoming) => peers.transfers.receive(incoming, (message) => driver.receive([message])),
    removedByPeer: (peer) => membership.removedByPeer(peer),
  });
  membership.start(state.identity.joined);
}

/** An access as the audit log shows it: the operation and the key range, as text. */
function describeAccess(access: Access): Record<string, unknown> {
  if ('clusterInfo' in access) return { op: 'read', what: 'cluster info' };
  if ('anyKey' in access) return { op: access.op, what: 'any key' };
  const text = (bytes: Uint8Array | null): string | null => (bytes === null ? null : Buffer.from(bytes).toString('utf8'));
  return { op: access.op, from: text(access.range.from), to: text(access.range.to) };
}
