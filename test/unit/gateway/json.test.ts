// The gateway's pure parts: the streamed-body splitter (torn objects, strings with braces, bounds,
// garbage), exact 64-bit integers, and etcd's JSON for requests and answers (declared and
// lowerCamel names, etcd's enum names, defaults left out, bytes as base64).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GatewayInputError } from '../../../src/api/gateway/errors.js';
import { answerJson, requestBytes } from '../../../src/api/gateway/json-codec.js';
import { JsonObjectStream, parseBody } from '../../../src/api/gateway/json-stream.js';
import { gatewayRoutes } from '../../../src/api/gateway/routes.js';
import { SeededRandom, randomInt } from '../../../src/base/random.js';

test('objects split however the bytes arrive, braces inside strings included', () => {
  const text = '{"a":"}{\\"x"} {"b":[{"c":1}]}\n{"d":"\\\\"}';
  const whole = new JsonObjectStream(1024).push(Buffer.from(text));
  assert.deepEqual(whole, [{ a: '}{"x' }, { b: [{ c: 1 }] }, { d: '\\' }]);
  const random = new SeededRandom(7n);
  for (let round = 0; round < 200; round++) {
    const stream = new JsonObjectStream(1024);
    const found: unknown[] = [];
    let at = 0;
    while (at < text.length) {
      const step = randomInt(random, 1, 5);
      found.push(...stream.push(Buffer.from(text.slice(at, at + step))));
      at += step;
    }
    assert.deepEqual(found, whole, `round ${round}`);
  }
});

test('something other than an object, or an object over the bound, ends the stream with an input error', () => {
  assert.throws(() => new JsonObjectStream(1024).push(Buffer.from('[1]')), GatewayInputError);
  assert.throws(() => new JsonObjectStream(1024).push(Buffer.from('{"a":1} null')), GatewayInputError);
  const bounded = new JsonObjectStream(16);
  assert.throws(() => bounded.push(Buffer.from(`{"a":"${'x'.repeat(32)}"}`)), /larger than 16 bytes/);
  assert.deepEqual(bounded.push(Buffer.from('{}')), [], 'a failed stream yields nothing more');
  assert.throws(() => new JsonObjectStream(1024).push(Buffer.from('{"a":}')), GatewayInputError);
});

test('64-bit integers written as bare numbers keep every digit; shorter numbers and strings are untouched', () => {
  assert.deepEqual(parseBody(Buffer.from('{"ID":7587899353417248537,"TTL":60,"s":"12345678901234567890"}')), {
    ID: '7587899353417248537', TTL: 60, s: '12345678901234567890',
  });
  assert.deepEqual(parseBody(Buffer.from('{"x":-9223372036854775808,"f":1.2345678901234567890}')), {
    x: '-9223372036854775808', f: 1.2345678901234567,
  });
  assert.throws(() => parseBody(Buffer.from('{"a":')), GatewayInputError);
});

test("requests take declared or lowerCamel names and etcd's enum names; unknown fields are ignored", () => {
  const range = gatewayRoutes().get('/v3/kv/range');
  assert.ok(range !== undefined);
  const decoded = range.requestType.decode(requestBytes(range.requestType, {
    key: Buffer.from('a').toString('base64'), rangeEnd: 'Yg==', sort_order: 'DESCEND', sortTarget: 'MOD', limit: '5', nope: 1,
  })) as unknown as Record<string, unknown>;
  assert.deepEqual({ ...decoded, limit: String(decoded['limit']) }, { key: Buffer.from('a'), range_end: Buffer.from('b'), sort_order: 2, sort_target: 3, limit: '5' });
  assert.throws(() => requestBytes(range.requestType, { key: 5 }), GatewayInputError);
  assert.throws(() => requestBytes(range.requestType, []), GatewayInputError);
  assert.throws(() => requestBytes(range.requestType, { sort_order: 'SIDEWAYS' }), GatewayInputError);
});

test('answers leave defaults out (a put event has no type) and name enums as etcd does', () => {
  const watch = gatewayRoutes().get('/v3/watch');
  assert.ok(watch !== undefined);
  const encoded = watch.responseType.encode(watch.responseType.fromObject({
    watch_id: 0,
    created: false,
    events: [{ type: 0, kv: { key: Buffer.from('k'), version: 1 } }, { type: 1, kv: { key: Buffer.from('k') } }],
  })).finish();
  assert.deepEqual(answerJson(watch.responseType, encoded), {
    events: [{ kv: { key: 'aw==', version: '1' } }, { type: 'DELETE', kv: { key: 'aw==' } }],
  });
});

test('every gRPC method of rpc.proto, v3lock.proto and v3election.proto has a gateway path, under /v3 and /v3beta', () => {
  const routes = gatewayRoutes();
  const methods = new Set([...routes.values()].map((route) => route.grpcPath));
  for (const path of ['/v3/kv/range', '/v3/kv/lease/revoke', '/v3/lease/keepalive', '/v3/watch', '/v3/cluster/member/add',
    '/v3/maintenance/snapshot', '/v3/auth/authenticate', '/v3/lock/lock', '/v3/election/observe', '/v3beta/kv/put']) {
    assert.ok(routes.has(path), path);
  }
  // KV 5, Watch 1, Lease 5, Cluster 5, Maintenance 8+, Auth 16+, Lock 2, Election 5.
  assert.ok(methods.size >= 45, `${methods.size} methods`);
});

test("answers straight from the handler's value equal the answers through its encoder", async () => {
  const { etcdServices } = await import('../../../src/api/grpc/proto.js');
  const { withKvCodecs } = await import('../../../src/api/grpc/kv-codec.js');
  const { valueJson } = await import('../../../src/api/gateway/json-codec.js');
  const services = etcdServices();
  const kv = withKvCodecs(services.KV);
  const header = { cluster_id: '9535188731427007531', member_id: 1, revision: 12345, raft_term: 2 };
  const kvMsg = { key: Buffer.from('k'), value: Buffer.from('v'), create_revision: 5, mod_revision: 9, version: 3, lease: 0 };
  const cases: [string, { responseSerialize: (value: unknown) => Buffer }, unknown][] = [
    ['/v3/kv/put', kv['Put'] as never, { header, prev_kv: null }],
    ['/v3/kv/put', kv['Put'] as never, { header, prev_kv: kvMsg }],
    ['/v3/kv/range', kv['Range'] as never, { header, kvs: [kvMsg, { ...kvMsg, lease: '7587899353417248537' }], more: true, count: 2 }],
    ['/v3/kv/range', kv['Range'] as never, { header, kvs: [], more: false, count: 0 }],
    ['/v3/kv/txn', kv['Txn'] as never, { header, succeeded: false, responses: [{ response_range: { header: { revision: 3 }, kvs: [kvMsg], count: '1' } }, { response_put: { header: { revision: 3 } } }] }],
    ['/v3/watch', services.Watch['Watch'] as never, { header, watch_id: '0', created: false, events: [{ type: 0, kv: kvMsg }, { type: 1, kv: { key: Buffer.from('k') }, prev_kv: kvMsg }] }],
    ['/v3/lease/grant', services.Lease['LeaseGrant'] as never, { header, ID: '7', TTL: '60', error: '' }],
    ['/v3/cluster/member/list', services.Cluster['MemberList'] as never, { header: { ...header, revision: 0 }, members: [{ ID: '1', name: 'n1', peerURLs: ['http://a:1'], clientURLs: [], isLearner: false }] }],
  ];
  for (const [path, method, value] of cases) {
    const route = gatewayRoutes().get(path);
    assert.ok(route !== undefined, path);
    assert.deepEqual(valueJson(route.responseType, value as Record<string, unknown>), answerJson(route.responseType, method.responseSerialize(value)), path);
  }
});
