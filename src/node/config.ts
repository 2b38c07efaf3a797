// A node's configuration from flags, BATON_* environment variables and an optional JSON config
// file (flags win over the environment, which wins over the file). Validated here, at the edge:
// a bad value stops the node with a message naming the setting, never a crash later on. This is
// the one place that reads them: the services get plain values.
import { defaultFairAdmissionOptions, type FairAdmissionOptions } from '../base/fair-admission.js';
import { defaultSessionGateOptions, type SessionGateOptions } from '../base/session-gate.js';
import { clientTlsConfig, peerTlsConfig, type ClientTlsConfig, type PeerTlsConfig } from './tls-config.js';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { createHash } from 'node:crypto';
import { ConfigError } from '../base/config-error.js';
import type { KeySource } from '../keys/index.js';
import * as limits from '../base/limits.js';
import type { AutoCompactionPolicy } from '../compactor/index.js';
import { revisionCheckMsDefault } from '../compactor/index.js';
import type { MemberInfo } from '../membership/member-directory.js';
import { defaultMvccLimits, type MvccLimits } from '../mvcc/index.js';
import { defaultReadGateOptions, type ReadGateOptions } from '../kv/read-gate.js';
import { defaultWatchLimits, type WatchLimits } from '../watch/index.js';

/** A member as the flags name it (--initial-cluster and its client URLs). */
export type MemberConfig = MemberInfo;

export interface NodeConfig {
  readonly name: string;
  readonly memberId: number;
  readonly dataDir: string;
  readonly listenClient: URL;
  readonly listenPeer: URL;
  /** The etcd v3 gRPC facade's address (docs/etcd-compat.md); null = not served. */
  readonly listenGrpc: URL | null;
  /** Member name -> gRPC URL, from --initial-cluster-grpc (etcd's MemberList clientURLs). */
  readonly grpcUrls: ReadonlyMap<string, string>;
  readonly members: readonly MemberConfig[];
  /**
   * `new`: bootstrap a cell from --initial-cluster (ids follow the list). `existing`: join a
   * running cell that registered this node (`baton member add`); id and cluster id come from it.
   * Either way, once the data directory has an identity (member.json), that identity decides.
   */
  readonly initialClusterState: 'new' | 'existing';
  /** Where to dial a peer when it differs from its peer URL (NAT, or a test's fault proxy). */
  readonly peerDial: ReadonlyMap<string, { host: string; port: number }>;
  readonly cellId: string;
  /** Derived from the initial cluster and token, so members started apart agree on it. */
  readonly clusterId: string;
  readonly tickMs: number;
  readonly electionTicks: number;
  /**
   * At boot, once a peer is connected, move the election clock forward so that a starting cell
   * elects its first leader within the timeout's random part (etcd's --initial-election-tick-advance,
   * on by default there too).
   */
  readonly initialElectionTickAdvance: boolean;
  /** How often the store checkpoints (makes its deferred commits durable) while it applies entries. */
  readonly checkpointMs: number;
  /** The leader's corruption check interval (node/corruption-check.ts); 0 = off. */
  readonly corruptCheckMs: number;
  /** --control-plane: this cell holds the cell map and serves /v1/control (docs/design/cells.md). */
  readonly controlPlane: boolean;
  /** --canary (BATON_CANARY=true): the leader runs the canary's probes against its own cell (node/cell-canary.ts). */
  readonly canary: boolean;
  /** --backup-dir/--backup-every/--backup-keep (node/backup-task.ts): the leader's scheduled backups; null = off. */
  readonly backup: { readonly dir: string; readonly everyMs: number; readonly keep: number } | null;
  /** --audit-log FILE (src/audit): JSON lines, durable before an audited operation is answered; null = off. */
  readonly auditLog: { readonly path: string; readonly maxBytes: number } | null;
  /**
   * Encryption at rest (docs/design/encryption.md): where the key-encryption keys come from
   * (--encryption-key-file or --encryption-key-command); null = off.
   */
  readonly encryption: KeySource | null;
  /**
   * --encryption-store-cipher, for a store created with a key: `records` (the default: Baton seals
   * every record's value with AES-256-GCM, src/keys/sealed-engine.ts), `none` (the store stays
   * plaintext; the WAL, snapshots and backups are still encrypted) or `lmdb-chacha8` (EXPERIMENTAL:
   * LMDB's page cipher; corrupted the store in the fault run, docs/design/encryption.md). A store
   * keeps the cipher it was created with, whatever the flag says later.
   */
  readonly storeCipher: StoreCipher;
  /** Entries of log kept below the checkpoint so a lagging follower needs no snapshot (etcd: 5,000). */
  readonly logCatchupEntries: number;
  readonly requestTimeoutMs: number;
  readonly valueBytesMax: number;
  readonly logLevel: 'debug' | 'info' | 'warn' | 'error';
  /** text: `[name] message` lines (baton dev); json: one object per line with time, level, cell, member. */
  readonly logFormat: 'text' | 'json';
  /** HTTP requests at least this slow are logged with their Request-ID (0: all); etcd warns from 100 ms. */
  readonly logSlowRequestMs: number;
  /** --auto-compaction-mode and --auto-compaction-retention (etcd's flags; README "Flags"). */
  readonly autoCompaction: AutoCompactionPolicy;
  /**
   * --store-upgrade: 'auto' (default): while leading, move the store to the newest format once
   * every member's build applies it (store-upgrade.ts); 'off': never propose it (a roll that may
   * be undone keeps the format the previous build reads).
   */
  readonly storeUpgrade: 'auto' | 'off';
  /** TLS on the client listeners (tls-config.ts); null: plain HTTP. */
  readonly clientTls: ClientTlsConfig | null;
  /** Mutual TLS with node identity between members; null: plain TCP. */
  readonly peerTls: PeerTlsConfig | null;
  /** Bounds tuned through the environment only (BATON_LEASE_*, BATON_READS_*, BATON_WATCH_*). */
  readonly tuning: NodeTuning;
}

export interface NodeTuning {
  /** The replicated lease limits: equal on every member of a cell, or members disagree on apply. */
  readonly leaseLimits: Pick<MvccLimits, 'leaseTtlMsMin' | 'leaseTtlMsMax' | 'leasesMax' | 'leaseKeysMax'>;
  readonly readGate: ReadGateOptions;
  readonly watchLimits: WatchLimits;
  /** Revision-mode auto compaction checks this often (BATON_AUTO_COMPACTION_CHECK_MS; etcd: 5 min). */
  readonly autoCompactionCheckMs: number;
  /**
   * The store holds applied writes this long (ms) and commits them to LMDB together
   * (BATON_STORE_WRITE_BEHIND_MS, default 30; 0: a commit per apply). storage/write-behind.ts.
   */
  readonly storeWriteBehindMs: number;
  /**
   * A leader's commit notice that no follower's client waits for waits up to this long (ms) for
   * the next append to carry it (BATON_COMMIT_NOTICE_DELAY_MS, default 2; 0: sent at once, as
   * etcd does). driver.ts DriverOptions.commitNoticeDelayMs.
   */
  readonly commitNoticeDelayMs: number;
  /**
   * The pace of the rewrite that retires an old data key (keys/record-rewrite.ts): records per
   * transaction (BATON_REWRITE_SLICE_RECORDS, default 256) and the least pause between two
   * (BATON_REWRITE_PAUSE_MS, default 20).
   */
  readonly recordRewrite: { readonly sliceRecords: number; readonly pauseMs: number };
  /** Fair admission of a cell with tenants (BATON_FAIR_*, #28); null: off (BATON_FAIR_ADMISSION=off). */
  readonly fairAdmission: FairAdmissionOptions | null;
  /** New sessions per second per node (BATON_NEW_SESSIONS_PER_SECOND, 0: none), #28 session storms. */
  readonly sessionGate: SessionGateOptions | null;
}

export { ConfigError };
export type { ClientTlsConfig, PeerTlsConfig };

const options = {
  name: { type: 'string' },
  'data-dir': { type: 'string' },
  'listen-client': { type: 'string' },
  'listen-peer': { type: 'string' },
  'listen-grpc': { type: 'string' },
  'initial-cluster-grpc': { type: 'string' },
  'initial-cluster': { type: 'string' },
  'initial-cluster-clients': { type: 'string' },
  'initial-cluster-token': { type: 'string' },
  'initial-cluster-state': { type: 'string' },
  'peer-dial': { type: 'string' },
  cell: { type: 'string' },
  'tick-ms': { type: 'string' },
  'election-ticks': { type: 'string' },
  'initial-election-tick-advance': { type: 'string' },
  'checkpoint-ms': { type: 'string' },
  'corrupt-check-ms': { type: 'string' },
  'audit-log': { type: 'string' },
  'backup-dir': { type: 'string' },
  'backup-every': { type: 'string' },
  'backup-keep': { type: 'string' },
  'audit-log-max-bytes': { type: 'string' },
  'encryption-key-file': { type: 'string' },
  'encryption-key-command': { type: 'string' },
  'encryption-store-cipher': { type: 'string' },
  'log-catchup-entries': { type: 'string' },
  'request-timeout-ms': { type: 'string' },
  'value-bytes-max': { type: 'string' },
  'log-level': { type: 'string' },
  'log-format': { type: 'string' },
  'log-slow-request-ms': { type: 'string' },
  'auto-compaction-mode': { type: 'string' },
  'auto-compaction-retention': { type: 'string' },
  'store-upgrade': { type: 'string' },
  config: { type: 'string' },
  'cert-file': { type: 'string' },
  'key-file': { type: 'string' },
  'trusted-ca-file': { type: 'string' },
  // A boolean flag (etcd's); from the environment or a config file "true" / "false".
  'client-cert-auth': { type: 'boolean' },
  'control-plane': { type: 'boolean' },
  // The canary's probes inside the cell, run by the leader (node/cell-canary.ts).
  canary: { type: 'boolean' },
  'peer-cert-file': { type: 'string' },
  'peer-key-file': { type: 'string' },
  'peer-trusted-ca-file': { type: 'string' },
  'client-crl-file': { type: 'string' },
  'peer-crl-file': { type: 'string' },
  // Not a setting: prints the effective configuration and exits (server-command.ts).
  'print-config': { type: 'boolean' },
} as const;

/** Every flag `baton server` takes (shell completion lists them). */
export const nodeFlags: readonly string[] = Object.keys(options);

type Raw = Partial<Record<keyof typeof options, string>>;

export function parseNodeConfig(argv: readonly string[], env: NodeJS.ProcessEnv): NodeConfig {
  const sources = settingSources(argv, env);
  return { ...resolve(Object.fromEntries(Object.entries(sources).map(([flag, { value }]) => [flag, value])) as Raw), tuning: tuningFromEnv(env) };
}

type Source = 'flag' | 'env' | 'file';

/** Every setting given, from the flags over BATON_* over the --config file, with where it came from. */
function settingSources(argv: readonly string[], env: NodeJS.ProcessEnv): Record<string, { value: string; from: Source }> {
  let parsed: Raw;
  try {
    parsed = parseArgs({ args: [...argv], options, strict: true, allowPositionals: false }).values as Raw;
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  delete (parsed as Record<string, unknown>)['print-config'];
  const fromEnv: Raw = {};
  for (const flag of Object.keys(options) as (keyof typeof options)[]) {
    if (flag === 'print-config') continue;
    const value = env[`BATON_${flag.toUpperCase().replaceAll('-', '_')}`];
    if (value !== undefined && value !== '') fromEnv[flag] = value;
  }
  const configPath = parsed.config ?? fromEnv.config;
  const fromFile = configPath === undefined ? {} : readConfigFile(configPath);
  const sources: Record<string, { value: string; from: Source }> = {};
  for (const [raw, from] of [[fromFile, 'file'], [fromEnv, 'env'], [parsed, 'flag']] as const) {
    for (const [flag, value] of Object.entries(raw)) if (value !== undefined) sources[flag] = { value: String(value), from };
  }
  return sources;
}

/**
 * `baton server --print-config`: the settings given (each with its source: flag, env or file) and
 * the effective configuration they resolve to, defaults included, as JSON. The `settings` values
 * are a valid --config file.
 */
export function describeNodeConfig(argv: readonly string[], env: NodeJS.ProcessEnv): object {
  const sources = settingSources(argv, env);
  const config = parseNodeConfig(argv, env);
  const plain = (value: unknown): unknown => {
    if (value instanceof URL) return value.href;
    if (value instanceof Map) return Object.fromEntries([...value].map(([k, v]) => [String(k), plain(v)]));
    if (Array.isArray(value)) return value.map(plain);
    if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
    return value;
  };
  return {
    settings: Object.fromEntries(Object.entries(sources).filter(([flag]) => flag !== 'config').map(([flag, { value }]) => [flag, value])),
    from: Object.fromEntries(Object.entries(sources).map(([flag, { from }]) => [flag, from])),
    effective: plain(config),
  };
}

export function tuningFromEnv(env: Readonly<Record<string, string | undefined>>): NodeTuning {
  const leaseTtlMsMin = envInteger(env, 'BATON_LEASE_TTL_MS_MIN', defaultMvccLimits.leaseTtlMsMin, 1_000);
  const readsInFlightMax = envInteger(env, 'BATON_READS_IN_FLIGHT_MAX', defaultReadGateOptions.readsInFlightMax, 1);
  const watch = (name: string, field: keyof WatchLimits): number => envInteger(env, name, defaultWatchLimits[field], 1);
  return {
    leaseLimits: {
      leaseTtlMsMin,
      leaseTtlMsMax: envInteger(env, 'BATON_LEASE_TTL_MS_MAX', defaultMvccLimits.leaseTtlMsMax, leaseTtlMsMin),
      leasesMax: envInteger(env, 'BATON_LEASES_MAX', defaultMvccLimits.leasesMax, 1),
      leaseKeysMax: envInteger(env, 'BATON_LEASE_KEYS_MAX', defaultMvccLimits.leaseKeysMax, 1),
    },
    readGate: {
      readsInFlightMax,
      // Lists are a share of reads: a larger list budget is cut to the read budget.
      listsInFlightMax: Math.min(readsInFlightMax, envInteger(env, 'BATON_LISTS_IN_FLIGHT_MAX', defaultReadGateOptions.listsInFlightMax, 1)),
    },
    watchLimits: {
      bufferedEventsMax: watch('BATON_WATCH_BUFFERED_EVENTS_MAX', 'bufferedEventsMax'),
      bufferedBytesMax: watch('BATON_WATCH_BUFFERED_BYTES_MAX', 'bufferedBytesMax'),
      watchersPerConnectionMax: watch('BATON_WATCH_PER_CONNECTION_MAX', 'watchersPerConnectionMax'),
      watchersPerNodeMax: watch('BATON_WATCH_PER_NODE_MAX', 'watchersPerNodeMax'),
      readEventsMax: defaultWatchLimits.readEventsMax,
      catchUpReadsPerStepMax: defaultWatchLimits.catchUpReadsPerStepMax,
    },
    autoCompactionCheckMs: envInteger(env, 'BATON_AUTO_COMPACTION_CHECK_MS', revisionCheckMsDefault, 10),
    storeWriteBehindMs: Math.min(1_000, envInteger(env, 'BATON_STORE_WRITE_BEHIND_MS', 30, 0)),
    commitNoticeDelayMs: Math.min(50, envInteger(env, 'BATON_COMMIT_NOTICE_DELAY_MS', 2, 0)),
    recordRewrite: {
      sliceRecords: envInteger(env, 'BATON_REWRITE_SLICE_RECORDS', 256, 1),
      pauseMs: envInteger(env, 'BATON_REWRITE_PAUSE_MS', 20, 1),
    },
    fairAdmission: fairAdmissionFromEnv(env),
    sessionGate: sessionGateFromEnv(env),
  };
}

/** The session gate's rate; 0 turns it off. */
function sessionGateFromEnv(env: Readonly<Record<string, string | undefined>>): SessionGateOptions | null {
  const perSecond = envInteger(env, 'BATON_NEW_SESSIONS_PER_SECOND', defaultSessionGateOptions.perSecond, 0);
  return perSecond === 0 ? null : { ...defaultSessionGateOptions, perSecond };
}

/** The fair queues' bounds (docs/api/tenants.md "Fair admission"); BATON_FAIR_ADMISSION=off turns them off. */
function fairAdmissionFromEnv(env: Readonly<Record<string, string | undefined>>): FairAdmissionOptions | null {
  const switched = env['BATON_FAIR_ADMISSION'] ?? 'on';
  if (switched !== 'on' && switched !== 'off') throw new ConfigError(`BATON_FAIR_ADMISSION: "${switched}" must be on or off`);
  if (switched === 'off') return null;
  const defaults = defaultFairAdmissionOptions;
  const queueLengthMax = envInteger(env, 'BATON_FAIR_QUEUE_LENGTH_MAX', defaults.small.queueLengthMax, 1);
  return {
    small: { ...defaults.small, seats: envInteger(env, 'BATON_FAIR_SEATS', defaults.small.seats, 1), queueLengthMax },
    lists: { ...defaults.lists, seats: envInteger(env, 'BATON_FAIR_LIST_SEATS', defaults.lists.seats, 1), queueLengthMax },
    queueWaitMs: envInteger(env, 'BATON_FAIR_QUEUE_WAIT_MS', defaults.queueWaitMs, 1),
    keysPerSeat: defaults.keysPerSeat,
  };
}

function envInteger(env: Readonly<Record<string, string | undefined>>, name: string, fallback: number, min: number): number {
  const text = env[name];
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < min) throw new ConfigError(`${name}: "${text}" must be an integer >= ${min}`);
  return value;
}

function readConfigFile(path: string): Raw {
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ConfigError(`config file ${path}: ${(error as Error).message}`);
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new ConfigError(`config file ${path}: expected a JSON object of flag names to values`);
  }
  const raw: Raw = {};
  for (const [key, value] of Object.entries(data)) {
    if (!(key in options) || key === 'print-config') throw new ConfigError(`config file ${path}: unknown setting "${key}"`);
    raw[key as keyof typeof options] = String(value);
  }
  return raw;
}

function resolve(raw: Raw): Omit<NodeConfig, 'tuning'> {
  const name = required(raw, 'name');
  if (!/^[a-zA-Z0-9_-]{1,64}$/.test(name)) throw new ConfigError(`--name "${name}": use letters, digits, - and _`);
  const listenClient = url(required(raw, 'listen-client'), 'listen-client');
  const listenPeer = url(required(raw, 'listen-peer'), 'listen-peer');
  const members = parseMembers(raw, name, listenClient);
  const listenGrpc = raw['listen-grpc'] === undefined ? null : url(raw['listen-grpc'], 'listen-grpc');
  const grpcUrls = new Map(pairs(raw['initial-cluster-grpc'] ?? '', 'initial-cluster-grpc'));
  for (const grpcUrl of grpcUrls.values()) url(grpcUrl, 'initial-cluster-grpc');
  if (listenGrpc !== null && !grpcUrls.has(name)) grpcUrls.set(name, listenGrpc.href.replace(/\/$/, ''));
  const self = members.find((member) => member.name === name);
  if (self === undefined) throw new ConfigError(`--initial-cluster does not name this node (${name})`);
  const token = raw['initial-cluster-token'] ?? 'baton';
  const identity = members.map((m) => `${m.name}=${m.peerUrl}`).join(',') + `|${token}`;
  return {
    name,
    memberId: self.id,
    dataDir: required(raw, 'data-dir'),
    listenClient,
    listenPeer,
    listenGrpc,
    grpcUrls,
    members,
    initialClusterState: clusterState(raw['initial-cluster-state'] ?? 'new'),
    peerDial: parsePeerDial(raw['peer-dial'] ?? '', members),
    cellId: raw.cell ?? 'cell-1',
    clusterId: createHash('sha256').update(identity).digest('hex').slice(0, 16),
    tickMs: integer(raw, 'tick-ms', 100, 10, 10_000),
    electionTicks: integer(raw, 'election-ticks', 10, 3, 1000),
    initialElectionTickAdvance: raw['initial-election-tick-advance'] === undefined
      ? true : booleanFlag(raw['initial-election-tick-advance'], 'initial-election-tick-advance'),
    // One fdatasync of the store's file per interval, off the event loop: it bounds the log an OS
    // crash replays and how long freed pages wait for reuse (storage/checkpointer.ts).
    checkpointMs: integer(raw, 'checkpoint-ms', 100, 10, 60_000),
    // Off by default, as etcd's --experimental-corrupt-check-time: a round reads every member's key space.
    corruptCheckMs: integer(raw, 'corrupt-check-ms', 0, 0, 86_400_000),
    controlPlane: booleanFlag(raw['control-plane'], 'control-plane'),
    canary: booleanFlag(raw['canary'], 'canary'),
    backup: backupSchedule(raw),
    auditLog: raw['audit-log'] === undefined || raw['audit-log'] === ''
      ? null
      : { path: raw['audit-log'], maxBytes: integer(raw, 'audit-log-max-bytes', 64 * 1024 * 1024, 4096, 1024 * 1024 * 1024 * 16) },
    encryption: encryptionSource(raw['encryption-key-file'], raw['encryption-key-command']),
    storeCipher: storeCipher(raw['encryption-store-cipher']),
    // etcd's SnapshotCatchUpEntries; the log's bytes bound it as well (64 MiB).
    logCatchupEntries: integer(raw, 'log-catchup-entries', 5_000, 0, 10_000_000),
    requestTimeoutMs: integer(raw, 'request-timeout-ms', 5_000, 100, 600_000),
    valueBytesMax: integer(raw, 'value-bytes-max', limits.valueBytesMax, 1, limits.valueBytesMax),
    logLevel: logLevel(raw['log-level'] ?? 'info'),
    logFormat: logFormat(raw['log-format'] ?? 'text'),
    logSlowRequestMs: integer(raw, 'log-slow-request-ms', 1_000, 0, 3_600_000),
    clientTls: clientTlsConfig(raw, { listenClient, listenGrpc, listenPeer, peerUrls: members.map((m) => m.peerUrl) }),
    peerTls: peerTlsConfig(raw, { listenClient, listenGrpc, listenPeer, peerUrls: members.map((m) => m.peerUrl) }),
    autoCompaction: autoCompaction(raw['auto-compaction-mode'], raw['auto-compaction-retention']),
    storeUpgrade: storeUpgrade(raw['store-upgrade'] ?? 'auto'),
  };
}

function storeUpgrade(value: string): 'auto' | 'off' {
  if (value !== 'auto' && value !== 'off') throw new ConfigError(`--store-upgrade must be auto or off, got ${JSON.stringify(value)}`);
  return value;
}

/** Neither flag given: history is bounded by a count of revisions, so the store tracks live data. */
const autoCompactionRevisionsDefault = 100_000;
/** `--auto-compaction-mode periodic` without a retention. */
const autoCompactionPeriodMsDefault = 3_600_000;
/** A shorter period would sample more than ten times a second. */
const autoCompactionPeriodMsMin = 1_000;

/**
 * etcd's flags with etcd's meanings: a retention given alone is periodic (etcd's default mode),
 * a bare number of hours or a duration (`1h`, `30m`, `90s`, `1h30m`); in revision mode a count of
 * revisions; 0 turns compaction off (etcd's default). Given neither, Baton keeps the last 100,000
 * revisions (README "Flags" says why).
 */
export type StoreCipher = 'records' | 'none' | 'lmdb-chacha8';

function storeCipher(text: string | undefined): StoreCipher {
  if (text === undefined || text === '' || text === 'records') return 'records';
  if (text === 'none' || text === 'lmdb-chacha8') return text;
  throw new ConfigError(`--encryption-store-cipher: expected records, none or lmdb-chacha8, got ${JSON.stringify(text)}`);
}

function encryptionSource(file: string | undefined, command: string | undefined): KeySource | null {
  const given = (text: string | undefined): text is string => text !== undefined && text !== '';
  if (given(file) && given(command)) throw new ConfigError('--encryption-key-file and --encryption-key-command: give one, not both');
  if (given(file)) return { file };
  if (given(command)) return { command };
  return null;
}

function autoCompaction(modeText: string | undefined, retentionText: string | undefined): AutoCompactionPolicy {
  const mode = modeText ?? (retentionText === undefined ? 'revision' : 'periodic');
  if (mode !== 'periodic' && mode !== 'revision') {
    throw new ConfigError(`--auto-compaction-mode: "${mode}" must be periodic or revision`);
  }
  if (mode === 'revision') {
    if (retentionText === undefined) return { mode, retentionRevisions: autoCompactionRevisionsDefault };
    const count = Number(retentionText);
    if (!/^\d+$/.test(retentionText) || !Number.isSafeInteger(count)) {
      throw new ConfigError(`--auto-compaction-retention: "${retentionText}" must be a count of revisions in revision mode`);
    }
    return count === 0 ? { mode: 'off' } : { mode, retentionRevisions: count };
  }
  const retentionMs = retentionText === undefined ? autoCompactionPeriodMsDefault : durationMs(retentionText);
  if (retentionMs === 0) return { mode: 'off' };
  if (retentionMs < autoCompactionPeriodMsMin) {
    throw new ConfigError(`--auto-compaction-retention: "${retentionText}" must be 0 (off) or at least 1s`);
  }
  return { mode, retentionMs };
}

const durationUnitMs: Readonly<Record<string, number>> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1 };

function backupSchedule(raw: Raw): NodeConfig['backup'] {
  const dir = raw['backup-dir'];
  if (dir === undefined || dir === '') {
    if (raw['backup-every'] !== undefined || raw['backup-keep'] !== undefined) throw new ConfigError('--backup-every and --backup-keep need --backup-dir');
    return null;
  }
  const everyMs = durationMs(raw['backup-every'] ?? '1h', 'backup-every');
  if (everyMs < 1_000) throw new ConfigError(`--backup-every: "${raw['backup-every']}" must be at least 1s`);
  return { dir, everyMs, keep: integer(raw, 'backup-keep', 24, 1, 10_000) };
}

/** A bare integer is hours (etcd); else Go's duration syntax with h, m, s and ms: `1h30m`, `1.5h`. */
function durationMs(text: string, flag = 'auto-compaction-retention'): number {
  // `5` is `5h`: etcd reads a bare retention as hours.
  const spelled = /^\d+$/.test(text) ? `${text}h` : text;
  if (!/^(\d+(\.\d+)?(h|ms|m|s))+$/.test(spelled)) {
    throw new ConfigError(`--${flag}: "${text}" must be hours (a bare integer) or a duration like 1h, 30m, 90s, 1h30m`);
  }
  let ms = 0;
  for (const match of spelled.matchAll(/(\d+(?:\.\d+)?)(h|ms|m|s)/g)) {
    ms += Number(match[1]) * (durationUnitMs[match[2] as string] as number);
  }
  const rounded = Math.round(ms);
  if (!Number.isSafeInteger(rounded)) throw new ConfigError(`--${flag}: "${text}" is too long`);
  return rounded;
}

/**
 * `--initial-cluster n1=http://127.0.0.1:7101,...` gives the peer URLs; member ids follow the
 * list's order (1, 2, ...). Client URLs come from `--initial-cluster-clients` in the same form,
 * or for this node from --listen-client; followers use them to point clients at the leader.
 */
function parseMembers(raw: Raw, name: string, listenClient: URL): MemberConfig[] {
  const peers = pairs(required(raw, 'initial-cluster'), 'initial-cluster');
  const clients = new Map(pairs(raw['initial-cluster-clients'] ?? '', 'initial-cluster-clients'));
  const seen = new Set<string>();
  return peers.map(([memberName, peerUrl], i) => {
    if (seen.has(memberName)) throw new ConfigError(`--initial-cluster names ${memberName} twice`);
    seen.add(memberName);
    url(peerUrl, 'initial-cluster');
    const clientUrl = clients.get(memberName) ?? (memberName === name ? listenClient.href : '');
    return { id: i + 1, name: memberName, peerUrl, clientUrl: clientUrl.replace(/\/$/, '') };
  });
}

function parsePeerDial(text: string, members: readonly MemberConfig[]): Map<string, { host: string; port: number }> {
  const dial = new Map<string, { host: string; port: number }>();
  for (const [memberName, address] of pairs(text, 'peer-dial')) {
    if (!members.some((m) => m.name === memberName)) throw new ConfigError(`--peer-dial: unknown member ${memberName}`);
    const match = /^([^:]+):(\d{1,5})$/.exec(address);
    if (match === null) throw new ConfigError(`--peer-dial: expected name=HOST:PORT, got "${memberName}=${address}"`);
    dial.set(memberName, { host: match[1] as string, port: Number(match[2]) });
  }
  return dial;
}

function pairs(text: string, flag: string): [string, string][] {
  if (text.trim() === '') return [];
  return text.split(',').map((item) => {
    const at = item.indexOf('=');
    if (at <= 0) throw new ConfigError(`--${flag}: expected name=URL, got "${item}"`);
    return [item.slice(0, at).trim(), item.slice(at + 1).trim()];
  });
}

function required(raw: Raw, flag: keyof typeof options): string {
  const value = raw[flag];
  if (value === undefined || value === '') {
    throw new ConfigError(`--${flag} is required (or BATON_${flag.toUpperCase().replaceAll('-', '_')})`);
  }
  return value;
}

function url(text: string, flag: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(text);
  } catch {
    throw new ConfigError(`--${flag}: "${text}" is not a URL`);
  }
  if ((parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || parsed.port === '') {
    throw new ConfigError(`--${flag}: "${text}" must be http://HOST:PORT (https:// with TLS)`);
  }
  return parsed;
}

function integer(raw: Raw, flag: keyof typeof options, fallback: number, min: number, max: number): number {
  const text = raw[flag];
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`--${flag}: "${text}" must be an integer from ${min} to ${max}`);
  }
  return value;
}

function clusterState(text: string): NodeConfig['initialClusterState'] {
  if (text === 'new' || text === 'existing') return text;
  throw new ConfigError(`--initial-cluster-state: "${text}" must be new or existing`);
}

function logFormat(text: string): NodeConfig['logFormat'] {
  if (text === 'text' || text === 'json') return text;
  throw new ConfigError(`--log-format: "${text}" must be text or json`);
}

function logLevel(text: string): NodeConfig['logLevel'] {
  if (text === 'debug' || text === 'info' || text === 'warn' || text === 'error') return text;
  throw new ConfigError(`--log-level: "${text}" must be debug, info, warn or error`);
}

function booleanFlag(value: string | boolean | undefined, flag: string): boolean {
  if (value === undefined || value === false || value === 'false' || value === '0') return false;
  if (value === true || value === 'true' || value === '1' || value === '') return true;
  throw new ConfigError(`--${flag}: "${String(value)}" is not true or false`);
}
