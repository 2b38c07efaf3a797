// etcd's v3 JSON gateway on the facade's port of a 3-process cell: the script of
// gateway-script.ts run against Baton, each answer JSON-equal to what etcd 3.4 answered to the
// same request (test/fixtures/etcd-gateway/goldens.json, recorded by gateway-record.ts) once
// ids, revisions and sizes are masked. Then the gateway's streams are fuzzed (etcd crashed on a
// malformed gateway watch stream, etcd #19509): the node must keep serving, with nothing lost.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { connect as connectHttp2, type ClientHttp2Session } from 'node:http2';
import { connect } from 'node:net';
import { join } from 'node:path';
import { SeededRandom, pick, randomInt, type Random } from '../../src/base/random.js';
import { projectRoot } from '../unit/project-root.js';
import { comparable, gatewaySteps, runGatewayScript, type Recorded } from './gateway-script.js';
import { startTestCell, type TestCell } from './harness.js';

interface Goldens {
  readonly etcdserver: string;
  readonly answers: readonly Recorded[];
}

const goldens = JSON.parse(readFileSync(join(projectRoot(import.meta.url, 'test/fixtures/etcd-gateway'), 'test/fixtures/etcd-gateway/goldens.json'), 'utf8')) as Goldens;
let cell: TestCell;
let base: string;
let answers: Recorded[];

before(async () => {
  cell = await startTestCell({ grpc: true });
  base = `http://${cell.cell.grpcEndpoint(cell.names[0] as string)}`;
  answers = await runGatewayScript(base);
});

after(async () => {
  await cell?.close();
});

test('the golden file covers the whole script', () => {
  assert.deepEqual(goldens.answers.map((a) => a.name), gatewaySteps.map((s) => s.name));
});

for (const [i, step] of gatewaySteps.entries()) {
  test(`gateway: ${step.name} answers as etcd ${goldens.etcdserver} does`, () => {
    const golden = goldens.answers[i] as Recorded;
    const answer = answers[i] as Recorded;
    assert.deepEqual(comparable(answer, step), comparable(golden, step), `${step.path} ${typeof step.body === 'string' ? step.body : ''}`);
  });
}

test('gateway and gRPC share the port: HTTP/1.1 and HTTP/2 connections on one listener', async () => {
  const put = await fetch(`${base}/v3/kv/put`, { method: 'POST', body: JSON.stringify({ key: b64('shared'), value: b64('port') }) });
  assert.equal(put.status, 200);
  // The native API sees the gateway's write (etcd key "shared" is native "/shared").
  const native = await fetch(`${cell.cell.clientUrl(cell.names[1] as string)}/v1/kv/shared`);
  assert.equal(native.status, 200);
  const body = (await native.json()) as { kvs: { key: string; value: string }[] };
  assert.deepEqual(body.kvs.map((kv) => [kv.key, kv.value]), [['/shared', 'port']]);
});

test('the gateway over HTTP/2 (prior knowledge, as curl --http2): the same answers as etcd gave', async () => {
  const session = connectH2(base);
  try {
    // Steps whose answer the rest of the script does not change: each JSON-equal to etcd's, masked as above.
    for (const name of ['txn fails', 'range missing key', 'range without a key', 'range of a future revision', 'malformed JSON',
      'a field of the wrong type', 'GET on an RPC path', 'an unknown RPC path', 'version', 'health']) {
      const at = gatewaySteps.findIndex((step) => step.name === name);
      const step = gatewaySteps[at] as (typeof gatewaySteps)[number];
      const answer = await h2Request(session, step.method ?? 'POST', step.path, typeof step.body === 'string' ? step.body : undefined);
      const recorded: Recorded = { name, status: answer.status, contentType: answer.contentType, body: answer.contentType.startsWith('application/json') ? JSON.parse(answer.body) : answer.body };
      assert.deepEqual(comparable(recorded, step), comparable(goldens.answers[at] as Recorded, step), name);
    }
    // A stream: the watch's first line arrives at once.
    const stream = session.request({ ':method': 'POST', ':path': '/v3/watch' });
    stream.end(JSON.stringify({ create_request: { key: b64('h2w') } }));
    const first = await new Promise<string>((resolve) => {
      let text = '';
      stream.on('data', (chunk: Buffer) => {
        text += chunk.toString();
        if (text.includes('\n')) resolve(text.split('\n')[0] as string);
      });
    });
    stream.close();
    assert.equal(JSON.parse(first).result.created, true);
  } finally {
    session.close();
  }
});

test('a 64-bit integer written as a bare JSON number keeps every digit', async () => {
  const answer = await post('/v3/lease/timetolive', '{"ID":9223372036854775807}');
  assert.equal(answer.status, 200);
  assert.equal(answer.body.ID, '9223372036854775807');
  assert.equal(answer.body.TTL, '-1');
});

test('an oversized body is refused with a clear error, and the node goes on', async () => {
  const big = JSON.stringify({ key: b64('big'), value: Buffer.alloc(5 * 1024 * 1024, 1).toString('base64') });
  const answer = await post('/v3/kv/put', big).catch((error: unknown) => ({ status: 0, body: String(error) }));
  // The node answers 429 and drops the rest of the body; a client still sending may see the reset instead.
  if (answer.status !== 0) {
    assert.equal(answer.status, 429);
    assert.equal(answer.body.code, 8);
  }
  const ok = await post('/v3/kv/range', JSON.stringify({ key: b64('shared') }));
  assert.equal(ok.status, 200);
});

test('fuzzed gateway streams never stop the node, and every acknowledged put is there', async () => {
  const random = new SeededRandom(19509n);
  const acknowledged = new Map<string, string>();
  const paths = ['/v3/watch', '/v3/lease/keepalive', '/v3/election/observe', '/v3/kv/txn', '/v3/kv/range'];
  for (let round = 0; round < 60; round++) {
    const path = pick(random, paths);
    await rawRequest(path, fuzzBody(random));
    if (round % 10 === 9) {
      const key = `fuzz-${round}`;
      const put = await post('/v3/kv/put', JSON.stringify({ key: b64(key), value: b64(String(round)) }));
      assert.equal(put.status, 200, `round ${round}: ${JSON.stringify(put.body)}`);
      acknowledged.set(key, String(round));
    }
  }
  for (const name of cell.names) {
    const health = await fetch(`http://${cell.cell.grpcEndpoint(name)}/health`);
    assert.equal(health.status, 200, `${name} is healthy after the fuzz`);
  }
  for (const [key, value] of acknowledged) {
    const answer = await post('/v3/kv/range', JSON.stringify({ key: b64(key) }));
    assert.equal(Buffer.from(answer.body.kvs[0].value, 'base64').toString(), value);
  }
});

function connectH2(url: string): ClientHttp2Session {
  const session = connectHttp2(url);
  session.on('error', () => undefined);
  return session;
}

function h2Request(session: ClientHttp2Session, method: string, path: string, body?: string): Promise<{ status: number; contentType: string; body: string }> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':method': method, ':path': path });
    let status = 0;
    let contentType = '';
    let text = '';
    stream.on('response', (headers) => {
      status = Number(headers[':status']);
      contentType = String(headers['content-type'] ?? '');
    });
    stream.on('data', (chunk: Buffer) => (text += chunk.toString()));
    stream.on('end', () => resolve({ status, contentType, body: text }));
    stream.on('error', reject);
    stream.end(body);
  });
}

function b64(text: string): string {
  return Buffer.from(text).toString('base64');
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function post(path: string, body: string): Promise<{ status: number; body: any }> {
  const response = await fetch(`${base}${path}`, { method: 'POST', body });
  const text = await response.text();
  return { status: response.status, body: text.startsWith('{') ? JSON.parse(text) : text };
}

/** Malformed and odd stream bodies: torn objects, deep nesting, wrong types, huge strings, binary. */
function fuzzBody(random: Random): Buffer {
  const pieces = [
    '{"create_request":{"key":"Zm9v"}}',
    '{"create_request":{"key":"Zm9v","range_end":"AA==","start_revision":"1"}}',
    '{"cancel_request":{"watch_id":"0"}}',
    '{"progress_request":{}}',
    '{"ID":"1"}',
    '{"ID":-1}',
    '{"name":"ZQ=="}',
    '{"compare":[{"key":"Zm9v","target":"NOPE"}]}',
    '{"create_request":{"key":5}}',
    '{"create_request":{"filters":["NOPUT","X"]}}',
    '{"create_request":',
    '}}}}',
    '"\\',
    '[1,2,{"a":',
    '{"a":"\\u12"}',
    `{"key":"${'x'.repeat(70_000)}"}`,
    '{'.repeat(2000),
    'null',
    '123456789012345678901234567890',
  ];
  const parts: Buffer[] = [];
  const count = randomInt(random, 1, 6);
  for (let i = 0; i < count; i++) {
    if (randomInt(random, 0, 4) === 0) parts.push(Buffer.from(Array.from({ length: randomInt(random, 1, 64) }, () => randomInt(random, 0, 255))));
    else parts.push(Buffer.from(pick(random, pieces)));
  }
  return Buffer.concat(parts);
}

/** Sends a raw HTTP/1.1 request whose body may be cut short, and reads for a moment. */
function rawRequest(path: string, body: Buffer): Promise<void> {
  const url = new URL(base);
  return new Promise((resolve) => {
    const socket = connect(Number(url.port), url.hostname);
    const done = (): void => {
      socket.destroy();
      resolve();
    };
    socket.on('error', done);
    socket.setTimeout(300, done);
    socket.on('connect', () => {
      socket.write(`POST ${path} HTTP/1.1\r\nhost: ${url.host}\r\ntransfer-encoding: chunked\r\n\r\n`);
      socket.write(`${body.length.toString(16)}\r\n`);
      socket.write(body);
      socket.write('\r\n');
      if (body.length % 2 === 0) socket.write('0\r\n\r\n');
    });
    socket.on('data', () => undefined);
  });
}
