// Requests that Node's HTTP parser refuses (found by the fuzzer: a malformed request line, a header
// block over the limit, Content-Length with chunked, a bad chunk size) answer a JSON error with the
// Baton headers, like every other error, instead of Node's bare "400 Bad Request".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseRawAnswer, rawExchange, startApiServer } from './api-server.js';

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
      const result = await rawExchange(server.port, (socket) => {
        socket.write(request);
      });
      const answer = parseRawAnswer(result.text);
      assert.equal(answer.status, status, `${name}: ${result.text.slice(0, 200)}`);
      assert.equal(answer.headers['content-type'], 'application/json', name);
      assert.equal(answer.headers['baton-cell'], 'cell-test', name);
      assert.equal(JSON.parse(answer.body).error.code, code, name);
      assert.ok(result.closed, name);
    }
  } finally {
    await server.stop();
  }
});
