// Issue 21.4: every refused upgrade on /v1/stream (bad or missing Sec-WebSocket-Key, a wrong
// version, Upgrade: h2c, another path) answers a JSON error with Baton-Revision and Baton-Cell,
// never text/html. Raw sockets against a real server; a good handshake still upgrades.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { parseRawAnswer, rawExchange, startApiServer } from './api-server.js';

const goodKey = 'dGhlIHNhbXBsZSBub25jZQ==';

function handshake(path: string, headers: Record<string, string>, method = 'GET'): string {
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('');
  return `${method} ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: Upgrade\r\n${lines}\r\n`;
}

test('a bad stream handshake answers JSON with the Baton headers', async () => {
  const server = await startApiServer();
  try {
    const cases: [string, string][] = [
      ['missing key', handshake('/v1/stream', { upgrade: 'websocket', 'sec-websocket-version': '13' })],
      ['invalid key', handshake('/v1/stream', { upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'short' })],
      ['wrong version', handshake('/v1/stream', { upgrade: 'websocket', 'sec-websocket-version': '12', 'sec-websocket-key': goodKey })],
      ['h2c', handshake('/v1/stream', { upgrade: 'h2c', 'http2-settings': 'AAMAAABkAAQAAP__' })],
      ['h2c elsewhere', handshake('/v1/kv/a', { upgrade: 'h2c' })],
      ['POST', handshake('/v1/stream', { upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': goodKey }, 'POST')],
      ['bad protocol', handshake('/v1/stream', { upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': goodKey, 'sec-websocket-protocol': 'a b,,' })],
      ['dot segment', handshake('/v1/x/../stream', { upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': goodKey })],
    ];
    for (const [name, request] of cases) {
      const result = await rawExchange(server.port, (socket) => {
        socket.write(request);
      });
      const answer = parseRawAnswer(result.text);
      assert.equal(answer.status, 400, `${name}: ${result.text.slice(0, 300)}`);
      assert.equal(answer.headers['content-type'], 'application/json', name);
      assert.equal(answer.headers['baton-cell'], 'cell-test', name);
      assert.match(answer.headers['baton-revision'] ?? '', /^\d+$/, name);
      const body = JSON.parse(answer.body);
      assert.equal(body.error.code, 'invalid_argument', name);
      assert.equal(typeof body.error.message, 'string');
      assert.ok(result.closed, `${name}: closed`);
      if (name === 'wrong version') assert.equal(answer.headers['sec-websocket-version'], '13, 8');
    }
    const ws = new WebSocket(`ws://127.0.0.1:${server.port}/v1/stream`);
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    ws.close();
  } finally {
    await server.stop();
  }
});
