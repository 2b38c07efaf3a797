// Election.observe() over a local SSE server that drops the connection mid-stream: the observer
// reconnects, the server starts again from the current leadership (already delivered), and the
// caller sees every change once, in order, with its term; cancel() ends the loop, and
// client.close() ends an observer still running.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { BatonClient, type LeadershipChange } from '../../../src/client/index.js';

const leaderA = { key: '/elections/x/000000000005', value: 'a1', term: 5, lease: 81 };
const leaderB = { key: '/elections/x/000000000009', value: 'b1', term: 9, lease: 82 };

// Connection 1: A, A's new value, then the connection drops. Connection 2: the current state
// (A with a2, already seen), nobody, then B. Connection 3+: B, held open.
const scripts = [
  [{ revision: 5, leader: leaderA }, { revision: 6, leader: { ...leaderA, value: 'a2' } }],
  [{ revision: 7, leader: { ...leaderA, value: 'a2' } }, { revision: 8, leader: null }, { revision: 9, leader: leaderB }],
];

test('observe: reconnects after a drop without repeating a change; terms passed along; cancel ends it', async () => {
  let connections = 0;
  const server = createServer((req, res) => {
    assert.equal(req.url, '/v1/elections/x/observe');
    const script = scripts[connections++];
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const frame of script ?? [{ revision: 9, leader: leaderB }]) res.write(`data: ${JSON.stringify(frame)}\n\n`);
    if (script !== undefined && connections === 1) setTimeout(() => res.destroy(), 50);
    else if (script !== undefined) setTimeout(() => res.end(), 50);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const client = new BatonClient({ endpoints: [url], discover: false });
  try {
    const observer = client.election(null, 'x').observe();
    const seen: LeadershipChange[] = [];
    for await (const change of observer) {
      seen.push(change);
      if (change.leader?.term === 9) break; // break cancels the observer
    }
    assert.deepEqual(
      seen.map((c) => [c.revision, c.leader?.value ?? null, c.leader?.term ?? null]),
      [[5, 'a1', 5], [6, 'a2', 5], [8, null, null], [9, 'b1', 9]],
    );
    assert.ok(observer.connections >= 2);

    const running = client.election(null, 'x').observe();
    const ended = (async () => {
      let count = 0;
      for await (const _change of running) count++;
      return count;
    })();
    await new Promise((resolve) => setTimeout(resolve, 200));
    await client.close();
    assert.ok((await ended) >= 1, 'client.close() ended the loop');
  } finally {
    await client.close();
    server.closeAllConnections();
    server.close();
  }
});

test('observe: a silent stream (a node cut off from its quorum) is corrected by the periodic leader read', async () => {
  let observeConnections = 0;
  let silentClosed = false;
  const server = createServer((req, res) => {
    if (req.url === '/v1/elections/x/leader') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ revision: 9, leader: leaderB }));
      return;
    }
    observeConnections++;
    if (observeConnections === 1) res.once('close', () => (silentClosed = true));
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    // The first node is stale and silent forever; the next one knows B.
    const frame = observeConnections === 1 ? { revision: 5, leader: leaderA } : { revision: 9, leader: leaderB };
    res.write(`data: ${JSON.stringify(frame)}\n\n`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const client = new BatonClient({ endpoints: [url], discover: false });
  try {
    const observer = client.election(null, 'x').observe({ verifyMs: 200 });
    const seen: (string | null)[] = [];
    for await (const change of observer) {
      seen.push(change.leader?.value ?? null);
      if (change.leader?.term === 9) break;
    }
    assert.deepEqual(seen, ['a1', 'b1']);
    assert.equal(observer.corrections, 1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.ok(silentClosed, 'the stream left the silent node');
  } finally {
    await client.close();
    server.closeAllConnections();
    server.close();
  }
});
