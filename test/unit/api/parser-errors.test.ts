// Requests that Node's HTTP parser refuses (found by the fuzzer: a malformed request line, a header
// block over the limit, Content-Length with chunked, a bad chunk size) answer a JSON error with the
// Baton headers, like every other error, instead of Node's bare "400 Bad Request".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseRawAnswer, rawExchange, startApiServer } from './api-server.js';

/** Sends `request` as raw bytes; the answer must be `status` with error `code` as JSON, from this cell. */
async function expectJsonError(port: number, name: string, request: string, status: number, code: string): Promise<{ closed: boolean }> {
  const result = await rawExchange(port, (socket) => {
    socket.write(request);
  });
  const answer = parseRawAnswer(result.text);
  assert.equal(answer.status, status, `${name}: ${result.text.slice(0, 200)}`);
  assert.equal(answer.headers['content-type'], 'application/json', name);
  assert.equal(answer.headers['baton-cell'], 'cell-test', name);
  assert.equal(JSON.parse(answer.body).error.code, code, name);
  return result;
}

test('parser-level refusals are JSON errors with the Baton headers', async () => {
  const server = await startApiServer();
  try {
    const cases: [string, string, number, string][] = [
      ['bad request line', 'GET /v1/kv/a b c HTTP/1.1\r\nhost: x\r\n\r\n', 400, 'invalid_argument'],
      ['control character', 'GET /v1/kv/\x01 HTTP/1.1\r\nhost: x\r\n\r\n', 400, 'invalid_argument'],
      ['header overflow', `GET /v1/kv/a HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`, 413, 'too_large'],
      ['length and chunked', 'PUT /v1/kv/a HTTP/1.1\r\nhost: x\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n', 400, 'invalid_argument'],
      ['bad chunk size', 'PUT /v1/kv/a HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n', 400, 'invalid_argument'],
      ['not HTTP', 'hello there\r\n\r\n', 400, 'invalid_argument'],
    ];
    for (const [name, request, status, code] of cases) {
      const result = await expectJsonError(server.port, name, request, status, code);
      assert.ok(result.closed, name);
    }
  } finally {
    await server.stop();
  }
});

test('a missing Host, a CONNECT and an unknown Expect answer JSON; a refused request with a big body is read, not reset', async () => {
  const server = await startApiServer();
  try {
    const cases: [string, string, number][] = [
      ['no host', 'GET /v1/kv/a HTTP/1.1\r\nconnection: close\r\n\r\n', 400],
      ['connect', 'CONNECT 127.0.0.1:80 HTTP/1.1\r\nhost: 127.0.0.1:80\r\n\r\n', 400],
      ['expect', 'PUT /v1/kv/a HTTP/1.1\r\nhost: x\r\nexpect: garbage\r\ncontent-length: 1\r\nconnection: close\r\n\r\nv', 400],
    ];
    for (const [name, request, status] of cases) await expectJsonError(server.port, name, request, status, 'invalid_argument');
    // A method the parser refuses, followed by 4 MiB of body the client keeps sending.
    const result = await rawExchange(server.port, async (socket) => {
      socket.write('get /v1/kv/a HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n');
      const chunk = Buffer.concat([Buffer.from('10000\r\n'), Buffer.alloc(0x10000, 0x61), Buffer.from('\r\n')]);
      for (let i = 0; i < 64 && socket.writable; i++) {
        if (!socket.write(chunk)) await new Promise((resolve) => { socket.once('drain', resolve); socket.once('close', resolve); });
      }
    });
    const answer = parseRawAnswer(result.text);
    assert.equal(answer.status, 400, `${result.text.slice(0, 200)} (socket error ${result.error})`);
    assert.equal(JSON.parse(answer.body).error.code, 'invalid_argument');
  } finally {
    await server.stop();
  }
});
