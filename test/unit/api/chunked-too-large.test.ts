// Issue 21.3: an over-size body gets 413 too_large with the JSON body and then the connection
// closes, chunked (counted while read) as well as with a Content-Length, on every POST/PUT; the
// client reads the whole answer before the close (no reset first). Raw sockets, a real server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { parseRawAnswer, rawExchange, send, startApiServer } from './api-server.js';

/** Writes `total` bytes as 64 KiB chunks, waiting for drain; stops quietly once the server closes. */
async function writeChunked(socket: Socket, head: string, total: number): Promise<void> {
  socket.write(head);
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  for (let sent = 0; sent < total && !socket.destroyed && socket.writable; sent += chunk.length) {
    const ok = socket.write(`${chunk.length.toString(16)}\r\n`) && socket.write(chunk) && socket.write('\r\n');
    if (!ok) await new Promise((resolve) => { socket.once('drain', resolve); socket.once('close', resolve); });
  }
  if (socket.writable) socket.write('0\r\n\r\n');
}

for (const [method, path] of [['PUT', '/v1/kv/big'], ['POST', '/v1/txn'], ['POST', '/v1/maintenance/compact']] as const) {
  test(`a chunked ${method} ${path} over the limit answers 413 too_large, then closes`, async () => {
    const server = await startApiServer();
    try {
      for (const mib of [2, 10]) {
        const head = `${method} ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\ntransfer-encoding: chunked\r\ncontent-type: application/json\r\n\r\n`;
        const result = await rawExchange(server.port, (socket) => writeChunked(socket, head, mib * 1024 * 1024));
        const answer = parseRawAnswer(result.text);
        assert.equal(answer.status, 413, `${mib} MiB: ${result.text.slice(0, 300)} (socket error ${result.error})`);
        assert.equal(answer.headers['content-type'], 'application/json');
        assert.equal(answer.headers['connection'], 'close');
        assert.ok(answer.headers['baton-revision'] !== undefined);
        const body = JSON.parse(answer.body);
        assert.equal(body.error.code, 'too_large');
        assert.equal(typeof body.error.limit, 'number');
        assert.ok(result.closed, 'the server closed the connection');
      }
      const after = await send(server.port, { method: 'PUT', path: '/v1/kv/small', body: 'ok' });
      assert.equal(after.status, 201, 'the node still serves');
      assert.deepEqual(server.errors, []);
    } finally {
      await server.stop();
    }
  });
}

test('a declared over-limit Content-Length answers 413 and closes without reading the body', async () => {
  const server = await startApiServer();
  try {
    const result = await rawExchange(server.port, (socket) => {
      socket.write(`PUT /v1/kv/big HTTP/1.1\r\nhost: x\r\ncontent-length: ${20 * 1024 * 1024}\r\n\r\n`);
      socket.write(Buffer.alloc(256 * 1024, 0x62));
    });
    const answer = parseRawAnswer(result.text);
    assert.equal(answer.status, 413);
    assert.equal(JSON.parse(answer.body).error.code, 'too_large');
    assert.ok(result.closed);
  } finally {
    await server.stop();
  }
});
