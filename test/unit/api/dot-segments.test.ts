// Issue 21.1: a key is never resolved like a path. `.`/`..` segments, literal or percent-encoded,
// are refused with 400 invalid_argument by every entry point (URL path, txn body, stream frame,
// gRPC facade, client), so no request can name one key and write another. Through a real server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { keyNameProblem } from '../../../src/base/key-name.js';
import { batonKey } from '../../../src/api/grpc/keys.js';
import { kvPath } from '../../../src/client/client.js';
import { send, startApiServer } from './api-server.js';

const target = '/alias-t/target';

test('dot segments in a URL path are refused and never reach another key', async () => {
  const server = await startApiServer();
  try {
    const put = await send(server.port, { method: 'PUT', path: `/v1/kv${target}`, body: 'original' });
    assert.equal(put.status, 201);
    const aliases = [
      '/v1/kv/alias-s/../alias-t/target',
      '/v1/kv/alias-s/%2E%2E/alias-t/target',
      '/v1/kv/alias-s/%2e./alias-t/target',
      '/v1/kv/alias-s/.%2E/alias-t/target',
      '/v1/kv/./alias-t/target',
      '/v1/kv/alias-t/%2e/target',
      '/v1/kv/x/../../v1/kv/alias-t/target',
    ];
    for (const path of aliases) {
      for (const method of ['PUT', 'DELETE', 'GET']) {
        const answer = await send(server.port, { method, path, ...(method === 'PUT' ? { body: 'via-dotdot' } : {}) });
        assert.equal(answer.status, 400, `${method} ${path}: ${answer.text}`);
        assert.equal(answer.json?.error?.code, 'invalid_argument', `${method} ${path}`);
        assert.equal(answer.headers['baton-cell'], 'cell-test');
      }
    }
    // Other routes are not resolved either: /v1/locks/../kv/... is not /v1/kv/....
    const other = await send(server.port, { method: 'GET', path: '/v1/watch/../kv/alias-t/target' });
    assert.equal(other.status, 400);
    const read = await send(server.port, { method: 'GET', path: `/v1/kv${target}` });
    assert.equal(read.status, 200);
    assert.equal(read.json.kvs[0].value, 'original');
    assert.equal(read.json.kvs[0].version, 1);
    // A dot inside a segment is an ordinary character.
    const dotted = await send(server.port, { method: 'PUT', path: '/v1/kv/a/.hidden/..x/x..', body: 'v' });
    assert.equal(dotted.status, 201, dotted.text);
    assert.deepEqual(server.errors, []);
  } finally {
    await server.stop();
  }
});

test('the same key string in a txn body, a watch and a stream frame is refused too', async () => {
  const server = await startApiServer();
  try {
    const key = '/alias-s/../alias-t/target';
    const txn = await send(server.port, {
      method: 'POST',
      path: '/v1/txn',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ success: [{ put: { key, value: 'literal' } }] }),
    });
    assert.equal(txn.status, 400, txn.text);
    assert.equal(txn.json.error.code, 'invalid_argument');
    const base64 = await send(server.port, {
      method: 'POST',
      path: '/v1/txn?encoding=base64',
      body: JSON.stringify({ success: [{ put: { key: Buffer.from('/a/.').toString('base64'), value: '' } }] }),
    });
    assert.equal(base64.status, 400, base64.text);
    const watch = await send(server.port, { method: 'GET', path: `/v1/watch?key=${encodeURIComponent(key)}` });
    assert.equal(watch.status, 400, watch.text);
    const ws = new WebSocket(`ws://127.0.0.1:${server.port}/v1/stream`);
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    const answer = new Promise<any>((resolve) => ws.once('message', (data) => resolve(JSON.parse(String(data)))));
    ws.send(JSON.stringify({ id: 1, type: 'put', key, value: 'frame' }));
    const frame = await answer;
    assert.equal(frame.type, 'error');
    assert.equal(frame.error.code, 'invalid_argument');
    ws.close();
    const all = await send(server.port, { method: 'GET', path: '/v1/kv/?prefix=true' });
    assert.equal(all.json.count, 0, 'nothing was stored');
  } finally {
    await server.stop();
  }
});

test('one key rule: the gRPC facade, the client and the rule itself agree', () => {
  for (const key of ['/a/..', '/..', '/.', '/a/./b', '/a/../b']) assert.notEqual(keyNameProblem(key), null, key);
  for (const key of ['/', '/a', '/a/.b', '/a..', '/a/...', '/a//b', '/%2e%2e']) assert.equal(keyNameProblem(key), null, key);
  assert.throws(() => batonKey(Buffer.from('a/../b')), /segment/);
  assert.throws(() => batonKey(Buffer.from('..')), /segment/);
  assert.equal(batonKey(Buffer.from('a/.b')), '/a/.b');
  assert.throws(() => kvPath('/alias-s/../alias-t/target'), { name: 'InvalidArgumentError' });
  assert.equal(kvPath('/a/%2e%2e'), '/v1/kv/a/%252e%252e');
});
