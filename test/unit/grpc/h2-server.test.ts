// The facade's HTTP/2 + gRPC server (src/api/grpc/h2) against real peers: Node's HTTP/2 client
// (its HPACK encoder, Huffman and the dynamic table, flow control) and grpc-js's client (unary,
// server-streaming and bidi calls, statuses, deadlines, cancellation, message bounds), plus raw
// sockets for what no well-behaved client sends: a bad preface, an oversized frame, a PING flood.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect as h2connect, constants as h2 } from 'node:http2';
import { connect as tcpConnect, createServer, type AddressInfo } from 'node:net';
import { Client, credentials, Metadata, status, type ServiceDefinition, type ServiceError } from '@grpc/grpc-js';
import { H2Connection } from '../../../src/api/grpc/h2/connection.js';
import { FrameType, H2Error, clientPreface, frame, settingsFrame } from '../../../src/api/grpc/h2/frames.js';
import { GrpcServer, timeoutMs } from '../../../src/api/grpc/h2/grpc-server.js';
import type { GrpcCall } from '../../../src/api/grpc/h2/grpc-call.js';
import { encodeHeaders, HpackDecoder, huffmanDecode } from '../../../src/api/grpc/h2/hpack.js';
import { huffmanCodes, huffmanLengths } from '../../../src/api/grpc/h2/huffman-table.js';

const identity = (value: unknown): Buffer => value as Buffer;
const method = (name: string, requestStream: boolean, responseStream: boolean) => ({
  path: `/test.Echo/${name}`, requestStream, responseStream, originalName: name,
  requestSerialize: identity, requestDeserialize: identity, responseSerialize: identity, responseDeserialize: identity,
});
const echoService = {
  Unary: method('Unary', false, false),
  Stream: method('Stream', false, true),
  Bidi: method('Bidi', true, true),
  Missing: method('Missing', false, false),
} as unknown as ServiceDefinition;

async function withServer(
  implementation: Record<string, unknown>,
  body: (port: number, client: Client) => Promise<void>,
  receiveBytesMax = 1024 * 1024,
): Promise<void> {
  const errors: unknown[] = [];
  const server = new GrpcServer({ receiveBytesMax, logError: (error) => errors.push(error) });
  server.addService(echoService, implementation);
  const port = await server.listen('127.0.0.1', 0);
  const client = new Client(`127.0.0.1:${port}`, credentials.createInsecure());
  try {
    await body(port, client);
  } finally {
    client.close();
    await server.close(200);
  }
  assert.deepEqual(errors, [], 'no handler failed');
}

function unary(client: Client, name: string, request: Buffer, deadlineMs = 5000): Promise<{ error: ServiceError | null; value: Buffer | undefined }> {
  return new Promise((resolve) => {
    client.makeUnaryRequest(`/test.Echo/${name}`, identity, identity, request, new Metadata(), { deadline: Date.now() + deadlineMs },
      (error, value) => resolve({ error, value: value as Buffer | undefined }));
  });
}

test('huffman: every byte value decodes from its code, and bad padding or EOS is refused', () => {
  for (let symbol = 0; symbol < 256; symbol++) {
    // One symbol, padded with one bits to a byte boundary.
    const bits = huffmanLengths[symbol] as number;
    const total = Math.ceil(bits / 8) * 8;
    let value = BigInt(huffmanCodes[symbol] as number) << BigInt(total - bits);
    value |= (1n << BigInt(total - bits)) - 1n;
    const bytes = Buffer.alloc(total / 8);
    for (let i = bytes.length - 1; i >= 0; i--, value >>= 8n) bytes[i] = Number(value & 0xffn);
    assert.equal(huffmanDecode(bytes, 0, bytes.length), String.fromCharCode(symbol), `symbol ${symbol}`);
  }
  assert.throws(() => huffmanDecode(Buffer.from([0xff, 0xff, 0xff, 0xff]), 0, 4)); // EOS (30 ones)
  assert.throws(() => huffmanDecode(Buffer.from([0x00]), 0, 1)); // '0' (00000) then zero padding
});

test('hpack: the decoder reads what our encoder writes, and keeps a client table across blocks', () => {
  const decoder = new HpackDecoder({ tableBytesMax: 4096, listBytesMax: 16 * 1024 });
  const block = encodeHeaders(200, [['content-type', 'application/grpc'], ['grpc-message', 'a%20b'], ['x-long', 'y'.repeat(300)]]);
  assert.deepEqual(decoder.decode(block), [[':status', '200'], ['content-type', 'application/grpc'], ['grpc-message', 'a%20b'], ['x-long', 'y'.repeat(300)]]);
  // Literal with incremental indexing (0x40, new name), then a reference to it (index 62).
  const indexed = Buffer.from([0x40, 3, ...Buffer.from('abc'), 2, ...Buffer.from('xy'), 0x80 | 62]);
  assert.deepEqual(decoder.decode(indexed), [['abc', 'xy'], ['abc', 'xy']]);
  assert.deepEqual(decoder.decode(Buffer.from([0x80 | 62])), [['abc', 'xy']]);
  assert.throws(() => decoder.decode(Buffer.from([0x80 | 70])), /beyond the table/);
  assert.throws(() => decoder.decode(Buffer.from([0x3f, 0xe2, 0x1f])), /above the advertised size/);
});

test("node's HTTP/2 client: headers (Huffman, indexed) arrive intact on request after request", async () => {
  const seen: [string, string][][] = [];
  const listener = createServer((socket) => {
    new H2Connection(socket, {
      onStream(stream, headers) {
        seen.push(headers);
        stream.respond(encodeHeaders(200, [['content-type', 'text/plain']]));
        stream.write(Buffer.from('ok'));
        stream.end(encodeHeaders(null, [['x-trailer', 'done']]));
      },
    });
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const session = h2connect(`http://127.0.0.1:${(listener.address() as AddressInfo).port}`);
  const printable = Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i)).join('').trim();
  try {
    for (let i = 0; i < 5; i++) {
      const request = session.request({ ':method': 'POST', ':path': `/p/${i}`, 'x-printable': printable, 'x-same': 'the same value each time' });
      request.end(Buffer.alloc(100_000, i)); // beyond the default stream window: flow control both ways
      const body = await new Promise<string>((resolve, reject) => {
        let text = '';
        request.setEncoding('utf8');
        request.on('data', (chunk: string) => (text += chunk));
        request.on('end', () => resolve(text));
        request.on('error', reject);
      });
      assert.equal(body, 'ok');
    }
  } finally {
    session.close();
    listener.close();
  }
  assert.equal(seen.length, 5);
  for (const [i, headers] of seen.entries()) {
    const map = new Map(headers);
    assert.equal(map.get(':path'), `/p/${i}`);
    assert.equal(map.get(':method'), 'POST');
    assert.equal(map.get('x-printable'), printable);
    assert.equal(map.get('x-same'), 'the same value each time');
  }
});

test('grpc-js client: unary answers, statuses with their messages, unknown methods, oversize requests', async () => {
  await withServer({
    Unary: (call: GrpcCall, callback: (error: unknown, value?: Buffer) => void) => {
      const request = call.request as Buffer;
      if (request.toString() === 'fail') return callback({ code: status.FAILED_PRECONDITION, details: 'etcdserver: naïve 100% "fail"' });
      if (request.toString() === 'later') return void setTimeout(() => callback(null, Buffer.from('late')), 20);
      callback(null, Buffer.concat([Buffer.from('echo:'), request]));
    },
  }, async (_port, client) => {
    const ok = await unary(client, 'Unary', Buffer.from('hi'));
    assert.equal(ok.error, null);
    assert.equal(ok.value?.toString(), 'echo:hi');
    const many = await Promise.all(Array.from({ length: 200 }, (_, i) => unary(client, 'Unary', Buffer.from(`m${i}`))));
    many.forEach((answer, i) => assert.equal(answer.value?.toString(), `echo:m${i}`));
    assert.equal((await unary(client, 'Unary', Buffer.from('later'))).value?.toString(), 'late');
    const empty = await unary(client, 'Unary', Buffer.alloc(0));
    assert.equal(empty.value?.toString(), 'echo:');
    const failed = await unary(client, 'Unary', Buffer.from('fail'));
    assert.equal(failed.error?.code, status.FAILED_PRECONDITION);
    assert.equal(failed.error?.details, 'etcdserver: naïve 100% "fail"');
    const missing = await unary(client, 'Missing', Buffer.from('x'));
    assert.equal(missing.error?.code, status.UNIMPLEMENTED);
    const big = await unary(client, 'Unary', Buffer.alloc(2 * 1024 * 1024));
    assert.equal(big.error?.code, status.RESOURCE_EXHAUSTED);
    // The connection still serves.
    assert.equal((await unary(client, 'Unary', Buffer.from('again'))).value?.toString(), 'echo:again');
  });
});

test('grpc-js client: a deadline cancels the call on the server; a large answer crosses the windows', async () => {
  let cancelled = 0;
  await withServer({
    Unary: (call: GrpcCall, callback: (error: unknown, value?: Buffer) => void) => {
      const request = call.request as Buffer;
      if (request.toString() === 'hang') {
        assert.ok(call.getDeadline() instanceof Date);
        call.on('cancelled', () => cancelled++);
        return;
      }
      callback(null, Buffer.alloc(Number(request.toString()), 7));
    },
  }, async (_port, client) => {
    const hung = await unary(client, 'Unary', Buffer.from('hang'), 200);
    assert.equal(hung.error?.code, status.DEADLINE_EXCEEDED);
    const large = await unary(client, 'Unary', Buffer.from(String(900_000)));
    assert.equal(large.value?.length, 900_000);
    assert.ok(large.value?.every((b) => b === 7));
  });
  assert.equal(cancelled, 1);
});

test('grpc-js client: server streaming with backpressure, bidi with end and errors', async () => {
  await withServer({
    Stream: (call: GrpcCall) => {
      const count = Number((call.request as Buffer).toString());
      let sent = 0;
      const more = (): void => {
        while (sent < count) {
          if (!call.write(Buffer.alloc(64 * 1024, sent++ % 256))) return void call.once('drain', more);
        }
        call.end();
      };
      more();
    },
    Bidi: (call: GrpcCall) => {
      call.on('data', (message: Buffer) => {
        if (message.toString() === 'stop') call.emit('error', { code: status.OUT_OF_RANGE, details: 'stopped' });
        else call.write(Buffer.concat([Buffer.from('re:'), message]));
      });
      call.on('end', () => call.end());
    },
  }, async (_port, client) => {
    const chunks = await new Promise<Buffer[]>((resolve, reject) => {
      const got: Buffer[] = [];
      const stream = client.makeServerStreamRequest('/test.Echo/Stream', identity, identity, Buffer.from('40'), new Metadata(), {});
      stream.on('data', (chunk: Buffer) => got.push(chunk));
      stream.on('end', () => resolve(got));
      stream.on('error', reject);
    });
    assert.equal(chunks.length, 40);
    chunks.forEach((chunk, i) => assert.equal(chunk[0], i));
    const bidi = (messages: string[]): Promise<{ got: string[]; error: ServiceError | null }> => new Promise((resolve) => {
      const got: string[] = [];
      const stream = client.makeBidiStreamRequest('/test.Echo/Bidi', identity, identity, new Metadata(), {});
      stream.on('data', (chunk: Buffer) => got.push(chunk.toString()));
      stream.on('error', (error: ServiceError) => resolve({ got, error }));
      stream.on('end', () => resolve({ got, error: null }));
      for (const message of messages) stream.write(Buffer.from(message));
      stream.end();
    });
    assert.deepEqual(await bidi(['a', 'b', 'c']), { got: ['re:a', 're:b', 're:c'], error: null });
    const stopped = await bidi(['a', 'stop', 'c']);
    assert.deepEqual(stopped.got, ['re:a']);
    assert.equal(stopped.error?.code, status.OUT_OF_RANGE);
  });
});

test('raw sockets: a bad preface, an oversized frame and a PING flood each end the connection with GOAWAY', async () => {
  await withServer({}, async (port) => {
    const exchange = (bytes: Buffer): Promise<Buffer> => new Promise((resolve) => {
      const socket = tcpConnect(port, '127.0.0.1');
      const got: Buffer[] = [];
      socket.on('data', (chunk) => got.push(chunk));
      socket.on('close', () => resolve(Buffer.concat(got)));
      socket.on('error', () => {});
      socket.write(bytes);
      setTimeout(() => socket.destroy(), 3000).unref();
    });
    const goawayCode = (received: Buffer): number | null => {
      for (let at = 0; at + 9 <= received.length;) {
        const length = received.readUIntBE(at, 3);
        if (received[at + 3] === FrameType.goaway) return received.readUInt32BE(at + 9 + 4);
        at += 9 + length;
      }
      return null;
    };
    assert.equal(goawayCode(await exchange(Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'))), H2Error.protocol);
    const settings = settingsFrame([]);
    const oversized = Buffer.concat([clientPreface, settings, frame(FrameType.ping, 0, 0, Buffer.alloc(20_000))]);
    assert.equal(goawayCode(await exchange(oversized)), H2Error.frameSize);
    const pings = Array.from({ length: 20_000 }, () => frame(FrameType.ping, 0, 0, Buffer.alloc(8)));
    assert.equal(goawayCode(await exchange(Buffer.concat([clientPreface, settings, ...pings]))), H2Error.enhanceYourCalm);
    const pushPromise = frame(FrameType.pushPromise, 0x4, 1, Buffer.alloc(4));
    assert.equal(goawayCode(await exchange(Buffer.concat([clientPreface, settings, pushPromise]))), H2Error.protocol);
  });
});

test('grpc-timeout units', () => {
  assert.equal(timeoutMs('100m'), 100);
  assert.equal(timeoutMs('2S'), 2000);
  assert.equal(timeoutMs('1H'), 3_600_000);
  assert.equal(timeoutMs('5000u'), 5);
  assert.equal(timeoutMs('123456789S'), null); // at most 8 digits
  assert.equal(timeoutMs('10x'), null);
  assert.equal(timeoutMs(''), null);
  assert.equal(h2.HTTP2_HEADER_STATUS, ':status'); // node:http2 is only a peer here
});
