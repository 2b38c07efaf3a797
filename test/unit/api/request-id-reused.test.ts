// Issue 21.2: a Request-ID reused for a different mutation (another kind, key or body) answers 409
// request_id_reused naming the first request, and changes nothing; an identical retry still
// replays the first answer. Through a real server over the store's own dedup table.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { send, startApiServer } from './api-server.js';

test('a Request-ID reused for another kind of mutation is 409 request_id_reused, not 500', async () => {
  const server = await startApiServer();
  try {
    const put = await send(server.port, { method: 'PUT', path: '/v1/kv/a', headers: { 'request-id': 'rid-1' }, body: 'one' });
    assert.equal(put.status, 201);
    await send(server.port, { method: 'PUT', path: '/v1/kv/b', body: 'b' });
    const reused = await send(server.port, { method: 'DELETE', path: '/v1/kv/b', headers: { 'request-id': 'rid-1' } });
    assert.equal(reused.status, 409, reused.text);
    assert.equal(reused.json.error.code, 'request_id_reused');
    assert.equal(reused.json.error.kind, 'put');
    assert.equal(reused.json.error.key, '/a');
    assert.equal(reused.json.error.requestId, 'rid-1');
    assert.match(reused.json.error.message, /put of key \/a/);
    const b = await send(server.port, { method: 'GET', path: '/v1/kv/b' });
    assert.equal(b.status, 200, 'the delete never happened');
    const txn = await send(server.port, {
      method: 'POST', path: '/v1/txn', headers: { 'request-id': 'rid-1' },
      body: JSON.stringify({ success: [{ put: { key: '/a', value: 'one' } }] }),
    });
    assert.equal(txn.status, 409);
    assert.deepEqual(server.errors, [], 'nothing was logged as a bug');
  } finally {
    await server.stop();
  }
});

test('the same kind with another key or body is refused; an identical retry replays', async () => {
  const server = await startApiServer();
  try {
    const first = await send(server.port, { method: 'PUT', path: '/v1/kv/k', headers: { 'request-id': 'rid-2' }, body: 'v1' });
    assert.equal(first.status, 201);
    const retry = await send(server.port, { method: 'PUT', path: '/v1/kv/k', headers: { 'request-id': 'rid-2' }, body: 'v1' });
    assert.equal(retry.status, 201, 'the first answer, replayed');
    assert.equal(retry.json.revision, first.json.revision);
    const otherBody = await send(server.port, { method: 'PUT', path: '/v1/kv/k', headers: { 'request-id': 'rid-2' }, body: 'v2' });
    assert.equal(otherBody.status, 409, otherBody.text);
    assert.equal(otherBody.json.error.code, 'request_id_reused');
    const otherKey = await send(server.port, { method: 'PUT', path: '/v1/kv/k2', headers: { 'request-id': 'rid-2' }, body: 'v1' });
    assert.equal(otherKey.status, 409);
    assert.deepEqual(otherKey.json.error.attempted, { kind: 'put', key: '/k2' });
    const otherHeader = await send(server.port, {
      method: 'PUT', path: '/v1/kv/k', headers: { 'request-id': 'rid-2', 'if-version': '0' }, body: 'v1',
    });
    assert.equal(otherHeader.status, 409);
    const k = await send(server.port, { method: 'GET', path: '/v1/kv/k' });
    assert.equal(k.json.kvs[0].value, 'v1');
    assert.equal(k.json.kvs[0].version, 1);
    assert.equal((await send(server.port, { method: 'GET', path: '/v1/kv/k2' })).status, 404);
    // The refusal does not replace the record: the first request still replays.
    const again = await send(server.port, { method: 'PUT', path: '/v1/kv/k', headers: { 'request-id': 'rid-2' }, body: 'v1' });
    assert.equal(again.status, 201);
    assert.equal(again.json.revision, first.json.revision);
  } finally {
    await server.stop();
  }
});
