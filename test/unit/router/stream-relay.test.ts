// The router's stream relay (src/router/stream-relay.ts) against fake cells on loopback (no Raft):
// the paths the cluster test (test/cluster/router-stream.test.ts) cannot set up on purpose:
// backpressure (a client that stops reading stops the router reading its upstream, and nothing is
// lost when it reads again), a cell refusing the upgrade (its 429 and Retry-After reach every
// waiting frame), the pending bound (`overloaded`), a refused upstream tried at the next member.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import WebSocket, { WebSocketServer } from 'ws';
import { StreamRelay, type StreamRelayLimits } from '../../../src/router/stream-relay.js';
import { RouterMetrics } from '../../../src/router/router-metrics.js';

interface Harness {
  readonly relayUrl: string;
  readonly relay: StreamRelay;
  close(): Promise<void>;
}

async function listen(server: Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  return `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;
}

/** A relay on its own HTTP server, routing every frame to one cell `c` at `endpoints`. */
async function relayTo(endpoints: string[], limits: Partial<StreamRelayLimits> = {}): Promise<Harness> {
  const relay = new StreamRelay({
    routing: {
      choose: () => ({ namespace: { prefix: '/', cell: 'c', epoch: 3, state: 'active' }, endpoints }),
      order: (_cell, list) => [...list],
      unreachable: () => {},
      correct: () => false,
      epoch: () => 3,
    },
    metrics: new RouterMetrics(() => 0),
    limits,
  });
  const server = createServer((_req, res) => res.end());
  server.on('upgrade', (req, socket, head) => relay.upgrade(req, socket, head));
  const relayUrl = await listen(server);
  return {
    relayUrl,
    relay,
    close: async () => {
      relay.stop();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A fake cell: a WebSocket server answering each frame with `answer(frame, ws)`. */
async function fakeCell(answer: (frame: { id: number; type: string }, ws: WebSocket) => void): Promise<{ url: string; sockets: WebSocket[]; close(): Promise<void> }> {
  const server = createServer();
  const wss = new WebSocketServer({ server, perMessageDeflate: false });
  const sockets: WebSocket[] = [];
  wss.on('connection', (ws) => {
    sockets.push(ws);
    ws.on('message', (data) => answer(JSON.parse(String(data)) as { id: number; type: string }, ws));
  });
  const url = await listen(server);
  return {
    url,
    sockets,
    close: async () => {
      for (const ws of wss.clients) ws.terminate();
      wss.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function openClient(url: string): Promise<{ ws: WebSocket; frames: any[]; next(count: number, timeoutMs?: number): Promise<any[]> }> {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/v1/stream`, { perMessageDeflate: false });
  const frames: any[] = [];
  let wake: (() => void) | null = null;
  ws.on('message', (data) => {
    frames.push(JSON.parse(String(data)));
    wake?.();
  });
  await once(ws, 'open');
  return {
    ws,
    frames,
    async next(count, timeoutMs = 10_000) {
      const until = Date.now() + timeoutMs;
      while (frames.length < count) {
        if (Date.now() > until) assert.fail(`${frames.length} of ${count} frames: ${JSON.stringify(frames).slice(0, 300)}`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 100);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
      return frames.splice(0, count);
    },
  };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

test('a client that stops reading stops the router reading its upstream; nothing is lost when it reads again', async () => {
  const batch = 'x'.repeat(64 * 1024);
  const batches = 400; // 25 MiB: more than the loopback buffers on both hops hold
  const cell = await fakeCell((frame, ws) => {
    ws.send(JSON.stringify({ id: frame.id, type: 'created', startRevision: 1, revision: 0 }));
    for (let i = 1; i <= batches; i++) ws.send(`{"id":${frame.id},"type":"events","revision":${i},"events":[],"pad":"${batch}"}`);
  });
  const harness = await relayTo([cell.url], { bufferedBytesHigh: 256 * 1024 });
  const client = await openClient(harness.relayUrl);
  try {
    client.ws.pause(); // the client stops reading
    client.ws.send(JSON.stringify({ id: 'w', type: 'watch', key: '/a' }));
    await sleep(1_500);
    const upstream = cell.sockets[0] as WebSocket;
    assert.ok(upstream.bufferedAmount > 0, 'the cell cannot write: the router stopped reading it');
    client.ws.resume();
    const frames = await client.next(batches + 1, 30_000);
    assert.deepEqual(frames[0], { id: 'w', type: 'created', startRevision: 1, revision: 0 });
    assert.deepEqual(frames.slice(1).map((f) => f.revision), Array.from({ length: batches }, (_, i) => i + 1), 'every batch, in order');
    assert.ok(frames.every((f) => f.id === 'w'), 'mapped back to the client\'s id');
  } finally {
    client.ws.terminate();
    await harness.close();
    await cell.close();
  }
});

test('a cell that refuses the upgrade: its refusal answers every waiting frame; a refused connection tries the next member', async () => {
  const refusing = createServer((_req, res) => res.end());
  refusing.on('upgrade', (_req, socket) => {
    const body = JSON.stringify({ error: { code: 'overloaded', message: 'too many new sessions this second', reason: 'session_rate' } });
    socket.end(`HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\nretry-after: 2\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`);
  });
  const refusingUrl = await listen(refusing);
  const harness = await relayTo([refusingUrl]);
  const client = await openClient(harness.relayUrl);
  try {
    client.ws.send(JSON.stringify({ id: 1, type: 'get', key: '/a' }));
    client.ws.send(JSON.stringify({ id: 2, type: 'get', key: '/b' }));
    const answers = await client.next(2);
    for (const answer of answers) {
      assert.equal(answer.type, 'error');
      assert.equal(answer.error.code, 'overloaded');
      assert.equal(answer.error.reason, 'session_rate');
      assert.equal(answer.error.retryAfterSeconds, 2);
    }
    assert.deepEqual(answers.map((a) => a.id).sort(), [1, 2]);
  } finally {
    client.ws.terminate();
    await harness.close();
    refusing.closeAllConnections();
    await new Promise<void>((resolve) => refusing.close(() => resolve()));
  }

  // The first member refuses connections (nothing listens there): the frame reaches the second.
  const closed = createServer();
  const closedUrl = await listen(closed);
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  const cell = await fakeCell((frame, ws) => ws.send(JSON.stringify({ id: frame.id, type: 'result', result: { ok: true } })));
  const second = await relayTo([closedUrl, cell.url]);
  const other = await openClient(second.relayUrl);
  try {
    other.ws.send(JSON.stringify({ id: 'same', type: 'get', key: '/a' }));
    assert.deepEqual(await other.next(1), [{ id: 'same', type: 'result', result: { ok: true } }]);
    assert.deepEqual(second.relay.upstreamEndpoints(), [{ cell: 'c', endpoint: cell.url }]);
  } finally {
    other.ws.terminate();
    await second.close();
    await cell.close();
  }
});

test('frames pending past the bound are refused overloaded; a stopping router ends what is pending', async () => {
  const cell = await fakeCell(() => {}); // never answers
  const harness = await relayTo([cell.url], { pendingMax: 2 });
  const client = await openClient(harness.relayUrl);
  try {
    for (const id of [1, 2, 3]) client.ws.send(JSON.stringify({ id, type: 'get', key: '/a' }));
    const [third] = await client.next(1);
    assert.equal(third.id, 3);
    assert.equal(third.error.code, 'overloaded');
    harness.relay.stop();
    const ended = await client.next(2);
    assert.deepEqual(ended.map((f) => [f.id, f.error.code]).sort(), [[1, 'unavailable'], [2, 'unavailable']]);
  } finally {
    client.ws.terminate();
    await harness.close();
    await cell.close();
  }
});
