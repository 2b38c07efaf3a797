// A frame over the stream's payload limit ends the session with close code 1009 (found by the
// fuzzer: the session reset the socket instead, so the client saw 1006 and never learned why).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { startApiServer } from './api-server.js';

test('an oversize stream frame closes the session with 1009, not a reset', async () => {
  const server = await startApiServer();
  try {
    const ws = new WebSocket(`ws://127.0.0.1:${server.port}/v1/stream`);
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    ws.on('error', () => {});
    ws.send(JSON.stringify({ id: 1, type: 'put', key: '/big', value: 'v'.repeat(1.7 * 1024 * 1024) }));
    assert.equal(await closed, 1009);
  } finally {
    await server.stop();
  }
});
