// Issue 21, root prefix: DELETE of prefix "/" (every key of the cell, lock and election keys
// included) needs ?confirmDeleteAll=true; without it the answer is 400 invalid_argument naming the
// parameter, and nothing is deleted. The same guard holds in a txn and on the stream.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { send, startApiServer } from './api-server.js';

test('deleting the root prefix needs an explicit confirmation', async () => {
  const server = await startApiServer();
  try {
    for (const key of ['/a', '/locks/x/000000000001', '/b/c']) {
      assert.equal((await send(server.port, { method: 'PUT', path: `/v1/kv${key}`, body: 'v' })).status, 201);
    }
    const refused = [
      { method: 'DELETE', path: '/v1/kv/?prefix=true' },
      { method: 'DELETE', path: '/v1/kv?prefix=true' },
      { method: 'DELETE', path: '/v1/kv/?prefix' },
      { method: 'POST', path: '/v1/txn', body: JSON.stringify({ success: [{ delete: { key: '/', prefix: true } }] }) },
    ];
    for (const request of refused) {
      const answer = await send(server.port, request);
      assert.equal(answer.status, 400, `${request.method} ${request.path}: ${answer.text}`);
      assert.equal(answer.json.error.code, 'invalid_argument');
      assert.equal(answer.json.error.parameter, 'confirmDeleteAll');
      assert.match(answer.json.error.message, /confirmDeleteAll/);
    }
    const ws = new WebSocket(`ws://127.0.0.1:${server.port}/v1/stream`);
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    const frame = new Promise<any>((resolve) => ws.once('message', (data) => resolve(JSON.parse(String(data)))));
    ws.send(JSON.stringify({ id: 7, type: 'delete', key: '/', prefix: true }));
    assert.equal((await frame).error.code, 'invalid_argument');
    ws.close();
    assert.equal((await send(server.port, { method: 'GET', path: '/v1/kv/?prefix=true' })).json.count, 3, 'nothing deleted');
    // A single-key delete of "/" and other prefixes need no confirmation.
    assert.equal((await send(server.port, { method: 'DELETE', path: '/v1/kv/b/?prefix=true' })).json.deleted, 1);
    const confirmed = await send(server.port, { method: 'DELETE', path: '/v1/kv/?prefix=true&confirmDeleteAll=true' });
    assert.equal(confirmed.status, 200, confirmed.text);
    assert.equal(confirmed.json.deleted, 2);
  } finally {
    await server.stop();
  }
});
