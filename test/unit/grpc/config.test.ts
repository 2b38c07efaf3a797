// The etcd gRPC flags of `baton server`: off unless given, a bad URL stops the node with a
// message naming the flag, and MemberList learns each member's gRPC URL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, parseNodeConfig } from '../../../src/server/config.js';

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
