// The node's configuration (src/node/config.ts): the etcd gRPC flags are off unless given, a bad
// URL stops the node with a message naming the flag, MemberList learns each member's gRPC URL,
// the bounds tuned through the environment are read here, once, with the same errors, and etcd's
// auto compaction flags keep etcd's meanings (a retention alone is periodic; a bare number, hours).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, describeNodeConfig, parseNodeConfig, tuningFromEnv } from '../../../src/node/config.js';

const base = [
  '--name', 'n1', '--data-dir', '/tmp/x', '--listen-client', 'http://127.0.0.1:7001',
  '--listen-peer', 'http://127.0.0.1:7101', '--initial-cluster', 'n1=http://127.0.0.1:7101,n2=http://127.0.0.1:7102',
];

test('--listen-grpc: off by default, on when given (flag or BATON_LISTEN_GRPC), validated', () => {
  assert.equal(parseNodeConfig(base, {}).listenGrpc, null);
  const on = parseNodeConfig([...base, '--listen-grpc', 'http://127.0.0.1:7201'], {});
  assert.equal(on.listenGrpc?.port, '7201');
  assert.deepEqual([...on.grpcUrls], [['n1', 'http://127.0.0.1:7201']]);
  assert.equal(parseNodeConfig(base, { BATON_LISTEN_GRPC: 'http://127.0.0.1:7209' }).listenGrpc?.port, '7209');
  assert.throws(() => parseNodeConfig([...base, '--listen-grpc', '127.0.0.1:7201'], {}), (e: Error) => e instanceof ConfigError && /--listen-grpc/.test(e.message));
  const all = parseNodeConfig([...base, '--initial-cluster-grpc', 'n1=http://127.0.0.1:7201,n2=http://127.0.0.1:7202'], {});
  assert.equal(all.grpcUrls.get('n2'), 'http://127.0.0.1:7202');
  assert.throws(() => parseNodeConfig([...base, '--initial-cluster-grpc', 'n2=nope'], {}), /initial-cluster-grpc/);
});

test('tuning from the environment: read budgets (lists never above reads), lease and watch bounds', () => {
  const tuned = parseNodeConfig(base, {
    BATON_READS_IN_FLIGHT_MAX: '8', BATON_LISTS_IN_FLIGHT_MAX: '20',
    BATON_LEASE_TTL_MS_MIN: '2000', BATON_WATCH_BUFFERED_BYTES_MAX: '4096',
  }).tuning;
  assert.deepEqual(tuned.readGate, { readsInFlightMax: 8, listsInFlightMax: 8 });
  assert.equal(tuned.leaseLimits.leaseTtlMsMin, 2000);
  assert.equal(tuned.watchLimits.bufferedBytesMax, 4096);
  assert.deepEqual(tuningFromEnv({}).readGate, { readsInFlightMax: 1024, listsInFlightMax: 64 });
});

test('a bad tuning value stops the node with a message naming the variable', () => {
  for (const [name, value] of [['BATON_READS_IN_FLIGHT_MAX', '0'], ['BATON_WATCH_PER_NODE_MAX', 'many'], ['BATON_LEASE_TTL_MS_MIN', '10']]) {
    assert.throws(() => tuningFromEnv({ [name as string]: value }), (e: Error) => e instanceof ConfigError && e.message.includes(name as string));
  }
  // The longest TTL may not be below the shortest.
  assert.throws(() => tuningFromEnv({ BATON_LEASE_TTL_MS_MIN: '5000', BATON_LEASE_TTL_MS_MAX: '4000' }), /BATON_LEASE_TTL_MS_MAX/);
});

test('auto compaction: etcd\'s flags with etcd\'s meanings; by default the last 100,000 revisions', () => {
  const policy = (args: string[], env: NodeJS.ProcessEnv = {}) => parseNodeConfig([...base, ...args], env).autoCompaction;
  assert.deepEqual(policy([]), { mode: 'revision', retentionRevisions: 100_000 });
  // A retention alone is periodic, as in etcd, and a bare number is hours.
  assert.deepEqual(policy(['--auto-compaction-retention', '1']), { mode: 'periodic', retentionMs: 3_600_000 });
  assert.deepEqual(policy(['--auto-compaction-retention', '0']), { mode: 'off' });
  assert.deepEqual(policy(['--auto-compaction-mode', 'periodic', '--auto-compaction-retention', '30m']), { mode: 'periodic', retentionMs: 1_800_000 });
  assert.deepEqual(policy(['--auto-compaction-retention', '90s']), { mode: 'periodic', retentionMs: 90_000 });
  assert.deepEqual(policy(['--auto-compaction-retention', '1h30m']), { mode: 'periodic', retentionMs: 5_400_000 });
  assert.deepEqual(policy(['--auto-compaction-retention', '1.5h']), { mode: 'periodic', retentionMs: 5_400_000 });
  assert.deepEqual(policy(['--auto-compaction-retention', '1500ms']), { mode: 'periodic', retentionMs: 1_500 });
  assert.deepEqual(policy(['--auto-compaction-mode', 'periodic']), { mode: 'periodic', retentionMs: 3_600_000 });
  assert.deepEqual(policy(['--auto-compaction-mode', 'revision', '--auto-compaction-retention', '1000']), { mode: 'revision', retentionRevisions: 1000 });
  assert.deepEqual(policy(['--auto-compaction-mode', 'revision', '--auto-compaction-retention', '0']), { mode: 'off' });
  // The environment and the check interval of revision mode (etcd: 5 minutes).
  assert.deepEqual(policy([], { BATON_AUTO_COMPACTION_MODE: 'revision', BATON_AUTO_COMPACTION_RETENTION: '50' }), { mode: 'revision', retentionRevisions: 50 });
  assert.equal(tuningFromEnv({}).autoCompactionCheckMs, 300_000);
  assert.equal(tuningFromEnv({ BATON_AUTO_COMPACTION_CHECK_MS: '200' }).autoCompactionCheckMs, 200);
  assert.deepEqual(tuningFromEnv({}).recordRewrite, { sliceRecords: 256, pauseMs: 20 });
  assert.deepEqual(tuningFromEnv({ BATON_REWRITE_SLICE_RECORDS: '8', BATON_REWRITE_PAUSE_MS: '100' }).recordRewrite, { sliceRecords: 8, pauseMs: 100 });
  assert.throws(() => tuningFromEnv({ BATON_REWRITE_SLICE_RECORDS: '0' }), /BATON_REWRITE_SLICE_RECORDS/);
});

test('a bad auto compaction value stops the node with a message naming the flag', () => {
  const bad: string[][] = [
    ['--auto-compaction-mode', 'hourly'],
    ['--auto-compaction-retention', '1d'],
    ['--auto-compaction-retention', '1.5'],
    ['--auto-compaction-retention', '500ms'],
    ['--auto-compaction-retention', 'h'],
    ['--auto-compaction-mode', 'revision', '--auto-compaction-retention', '10m'],
    ['--auto-compaction-mode', 'revision', '--auto-compaction-retention', '1e3'],
  ];
  for (const args of bad) {
    const flag = args.at(-2) as string;
    assert.throws(() => parseNodeConfig([...base, ...args], {}), (e: Error) => e instanceof ConfigError && e.message.startsWith(flag), args.join(' '));
  }
  assert.throws(() => parseNodeConfig(base, { BATON_AUTO_COMPACTION_RETENTION: '-1' }), /^ConfigError: --auto-compaction-retention: "-1"/);
  assert.throws(() => tuningFromEnv({ BATON_AUTO_COMPACTION_CHECK_MS: '0' }), /BATON_AUTO_COMPACTION_CHECK_MS/);
});

test('TLS flags: etcd names, from flags, BATON_* or a config file; a half-configured node says what is missing', () => {
  assert.equal(parseNodeConfig(base, {}).clientTls, null);
  assert.equal(parseNodeConfig(base, {}).peerTls, null);
  const secure = [
    '--name', 'n1', '--data-dir', '/tmp/x', '--listen-client', 'https://127.0.0.1:7001',
    '--listen-peer', 'https://127.0.0.1:7101', '--initial-cluster', 'n1=https://127.0.0.1:7101,n2=https://127.0.0.1:7102',
  ];
  const client = ['--cert-file', 'c.pem', '--key-file', 'k.pem', '--trusted-ca-file', 'ca.pem'];
  const peer = ['--peer-cert-file', 'c.pem', '--peer-key-file', 'k.pem', '--peer-trusted-ca-file', 'ca.pem'];
  const on = parseNodeConfig([...secure, ...client, '--client-cert-auth', ...peer], {});
  assert.deepEqual(on.clientTls, { certFile: 'c.pem', keyFile: 'k.pem', caFile: 'ca.pem', clientCertAuth: true, crlFile: undefined });
  assert.deepEqual(on.peerTls, { certFile: 'c.pem', keyFile: 'k.pem', caFile: 'ca.pem', crlFile: undefined });
  const lists = parseNodeConfig([...secure, ...client, ...peer, '--client-crl-file', 'crl.pem'], { BATON_PEER_CRL_FILE: 'peer-crl.pem' });
  assert.equal(lists.clientTls?.crlFile, 'crl.pem');
  assert.equal(lists.peerTls?.crlFile, 'peer-crl.pem');
  const fromEnv = parseNodeConfig([...secure, ...peer], { BATON_CERT_FILE: 'e.pem', BATON_KEY_FILE: 'ek.pem', BATON_TRUSTED_CA_FILE: 'ca.pem', BATON_CLIENT_CERT_AUTH: 'true' });
  assert.equal(fromEnv.clientTls?.certFile, 'e.pem');
  assert.equal(fromEnv.clientTls?.clientCertAuth, true);
  const refused = (args: string[], pattern: RegExp): void => {
    assert.throws(() => parseNodeConfig(args, {}), (e: Error) => e instanceof ConfigError && pattern.test(e.message), args.join(' '));
  };
  refused([...secure, ...peer], /https:\/\/ client listener needs --cert-file/);
  refused([...base, ...client], /every client listener is TLS/);
  refused([...secure, '--cert-file', 'c.pem', ...peer], /--cert-file and --key-file go together/);
  refused([...secure, '--cert-file', 'c.pem', '--key-file', 'k.pem', '--client-cert-auth', ...peer], /--client-cert-auth needs --trusted-ca-file/);
  refused([...secure, ...client, '--peer-cert-file', 'c.pem', '--peer-key-file', 'k.pem'], /all of --peer-cert-file, --peer-key-file and --peer-trusted-ca-file/);
  refused([...base, ...peer], /--listen-peer and every peer URL/);
  refused([...secure, '--cert-file', 'c.pem', '--key-file', 'k.pem', '--client-crl-file', 'crl.pem', ...peer], /--client-crl-file needs --trusted-ca-file/);
  refused([...base, '--peer-crl-file', 'crl.pem'], /--peer-crl-file needs peer TLS/);
  refused([...secure, ...client], /https:\/\/ peer URLs need --peer-cert-file/);
  assert.doesNotThrow(() => parseNodeConfig([...secure, ...client, ...peer], {}), 'server TLS without client certificates is allowed');
});

test('--print-config: each setting with its source, the effective values, and settings that work as a --config file', () => {
  const argv = ['--name', 'n1', '--data-dir', '/tmp/x', '--listen-client', 'http://127.0.0.1:7001', '--listen-peer', 'http://127.0.0.1:7101',
    '--initial-cluster', 'n1=http://127.0.0.1:7101,n2=http://127.0.0.1:7102', '--print-config'];
  const described = describeNodeConfig(argv, { BATON_TICK_MS: '50' }) as {
    settings: Record<string, string>; from: Record<string, string>; effective: Record<string, unknown>;
  };
  assert.equal(described.from['tick-ms'], 'env');
  assert.equal(described.from['name'], 'flag');
  assert.equal(described.settings['print-config'], undefined);
  assert.equal(described.effective['tickMs'], 50);
  assert.equal(described.effective['electionTicks'], 10, 'defaults are shown');
  assert.equal(described.effective['listenClient'], 'http://127.0.0.1:7001/');
  const dir = mkdtempSync(join(tmpdir(), 'baton-print-config-'));
  try {
    const file = join(dir, 'node.json');
    writeFileSync(file, JSON.stringify(described.settings));
    const again = describeNodeConfig(['--config', file], {}) as { effective: Record<string, unknown>; from: Record<string, string> };
    assert.deepEqual(again.effective, described.effective);
    assert.equal(again.from['name'], 'file');
    writeFileSync(file, JSON.stringify({ ...described.settings, 'print-config': true }));
    assert.throws(() => parseNodeConfig(['--config', file], {}), /unknown setting "print-config"/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('--backup-dir: off by default; every 1h and keep 24 unless given; bad values name the flag', () => {
  assert.equal(parseNodeConfig(base, {}).backup, null);
  assert.deepEqual(parseNodeConfig([...base, '--backup-dir', '/b'], {}).backup, { dir: '/b', everyMs: 3_600_000, keep: 24 });
  assert.deepEqual(parseNodeConfig([...base, '--backup-dir', '/b', '--backup-every', '90s', '--backup-keep', '3'], {}).backup, { dir: '/b', everyMs: 90_000, keep: 3 });
  assert.deepEqual(parseNodeConfig(base, { BATON_BACKUP_DIR: '/e', BATON_BACKUP_EVERY: '2h' }).backup, { dir: '/e', everyMs: 7_200_000, keep: 24 });
  assert.throws(() => parseNodeConfig([...base, '--backup-every', '1h'], {}), /need --backup-dir/);
  assert.throws(() => parseNodeConfig([...base, '--backup-dir', '/b', '--backup-every', 'soon'], {}), /--backup-every/);
  assert.throws(() => parseNodeConfig([...base, '--backup-dir', '/b', '--backup-every', '10ms'], {}), /at least 1s/);
  assert.throws(() => parseNodeConfig([...base, '--backup-dir', '/b', '--backup-keep', '0'], {}), /--backup-keep/);
});

test('--canary: off by default; on from the flag, BATON_CANARY or the config file; a bad value names the flag', () => {
  assert.equal(parseNodeConfig(base, {}).canary, false);
  assert.equal(parseNodeConfig([...base, '--canary'], {}).canary, true);
  assert.equal(parseNodeConfig(base, { BATON_CANARY: 'true' }).canary, true);
  assert.equal(parseNodeConfig(base, { BATON_CANARY: 'false' }).canary, false);
  const dir = mkdtempSync(join(tmpdir(), 'baton-config-'));
  try {
    const file = join(dir, 'c.json');
    writeFileSync(file, JSON.stringify({ canary: true }));
    assert.equal(parseNodeConfig([...base, '--config', file], {}).canary, true);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  assert.throws(() => parseNodeConfig(base, { BATON_CANARY: 'maybe' }), (e: Error) => e instanceof ConfigError && /--canary/.test(e.message));
});

test('--store-upgrade: auto unless off is given (flag or BATON_STORE_UPGRADE); anything else stops the node', () => {
  assert.equal(parseNodeConfig(base, {}).storeUpgrade, 'auto');
  assert.equal(parseNodeConfig([...base, '--store-upgrade', 'off'], {}).storeUpgrade, 'off');
  assert.equal(parseNodeConfig(base, { BATON_STORE_UPGRADE: 'off' }).storeUpgrade, 'off');
  assert.throws(() => parseNodeConfig([...base, '--store-upgrade', 'later'], {}), (e: Error) => e instanceof ConfigError && /--store-upgrade/.test(e.message));
});

test('--initial-election-tick-advance: on by default, as in etcd; true/false from a flag or the environment; anything else refused', () => {
  assert.equal(parseNodeConfig(base, {}).initialElectionTickAdvance, true);
  assert.equal(parseNodeConfig([...base, '--initial-election-tick-advance', 'false'], {}).initialElectionTickAdvance, false);
  assert.equal(parseNodeConfig(base, { BATON_INITIAL_ELECTION_TICK_ADVANCE: 'false' }).initialElectionTickAdvance, false);
  assert.throws(() => parseNodeConfig([...base, '--initial-election-tick-advance', 'soon'], {}),
    (e: Error) => e instanceof ConfigError && /--initial-election-tick-advance/.test(e.message));
});
