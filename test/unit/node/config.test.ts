// The node's configuration (src/node/config.ts): the etcd gRPC flags are off unless given, a bad
// URL stops the node with a message naming the flag, MemberList learns each member's gRPC URL,
// and the bounds tuned through the environment are read here, once, with the same errors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, parseNodeConfig, tuningFromEnv } from '../../../src/node/config.js';

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
