// Election.observe() over a scripted /v1/stream server that drops the connection mid-observation
// and ends an observation with an error: the observer opens it again (on the new connection, or
// under a new id), the server starts again from the current leadership (already delivered), and
// the caller sees every change once, in order, with its term; cancel() ends the loop, and
// client.close() ends an observer still running. A silent observation is corrected by the
// periodic leader read, and reopened.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { LeadershipChange } from '../../../src/client/index.js';
import { FakeStreamServer, result, type Received } from './fake-stream-server.js';

const leaderA = { key: '/elections/x/000000000005', value: 'a1', term: 5, lease: 81 };
const leaderB = { key: '/elections/x/000000000009', value: 'b1', term: 9, lease: 82 };

function push(received: Received, change: { revision: number; leader: unknown }): void {
  received.socket.send(JSON.stringify({ id: received.frame['id'], type: 'leadership', ...change }));
}

test('observe: reopens after a drop and after an end without repeating a change; terms passed along; cancel ends it', async () => {
  let observations = 0;
  const server = await FakeStreamServer.start((received) => {
    if (received.frame['type'] !== 'observe') return;
    assert.equal(received.frame['name'], 'x');
    const n = observations++;
    if (n === 0) {
      // A, A's new value, then the connection drops.
      push(received, { revision: 5, leader: leaderA });
      push(received, { revision: 6, leader: { ...leaderA, value: 'a2' } });
      setTimeout(() => received.socket.terminate(), 50);
    } else if (n === 1) {
      // The current state (A with a2, already seen), nobody, then the node ends the observation.
      push(received, { revision: 7, leader: { ...leaderA, value: 'a2' } });
      push(received, { revision: 8, leader: null });
      received.socket.send(JSON.stringify({ id: received.frame['id'], type: 'error', error: { code: 'unavailable', message: 'no leader' } }));
    } else {
      push(received, { revision: 9, leader: leaderB });
    }
  });
  const client = server.client();
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
    assert.equal(observer.connections, 3);
    const ids = server.frames('observe').map((f) => f['id']);
    assert.equal(ids[0], ids[1], 'the same observation opened again on the new connection');
    assert.notEqual(ids[1], ids[2], 'a new id after the server ended it');

    const running = client.election(null, 'x').observe();
    const ended = (async () => {
      let count = 0;
      for await (const _change of running) count++;
      return count;
    })();
    await new Promise((resolve) => setTimeout(resolve, 200));
    await client.close();
    assert.ok((await ended) >= 1, 'client.close() ended the loop');
    assert.equal(server.connections, 2, 'observers share the client stream');
  } finally {
    await client.close();
    await server.close();
  }
});

test('observe: a silent observation (a node cut off from its quorum) is corrected by the periodic leader read', async () => {
  let observations = 0;
  const server = await FakeStreamServer.start((received) => {
    if (received.frame['type'] === 'leader') return result(received, { revision: 9, leader: leaderB });
    if (received.frame['type'] !== 'observe') return;
    // The first observation is stale and silent forever; the next one knows B.
    push(received, observations++ === 0 ? { revision: 5, leader: leaderA } : { revision: 9, leader: leaderB });
  });
  const client = server.client();
  try {
    const observer = client.election(null, 'x').observe({ verifyMs: 200 });
    const seen: (string | null)[] = [];
    for await (const change of observer) {
      seen.push(change.leader?.value ?? null);
      if (change.leader?.term === 9) break;
    }
    assert.deepEqual(seen, ['a1', 'b1']);
    assert.equal(observer.corrections, 1);
    const first = server.frames('observe')[0]?.['id'];
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.ok(server.frames('observeCancel').some((f) => f['id'] === first), 'the silent observation was canceled');
    assert.equal(server.frames('observe').length, 2, 'and opened again');
  } finally {
    await client.close();
    await server.close();
  }
});
