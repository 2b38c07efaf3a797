// The control channel (protocol version 6): between two members of this build, heartbeats and
// other small messages travel on a connection of their own, so a heartbeat sent behind megabytes
// of appends reaches a busy receiver long before those appends are through; appends keep to the
// raft channel. A member of an older build never sees the channel (protocol-versions.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { RaftMessage } from '../../../src/raft/index.js';
import { connectAll, heartbeat, startNode, until } from './tcp-helpers.js';

/** Spins for `ms` (a receiver busy applying what it reads, as a leader under a write flood). */
function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) { /* the event loop is held, as by real work */ }
}

test('a heartbeat sent behind megabytes of appends reaches a busy receiver first', async () => {
  const arrivals: string[] = [];
  const n1 = await startNode(1);
  const n2 = await startNode(2, {
    onMessages: (batch) => {
      for (const m of batch) {
        arrivals.push(m.type);
        if (m.type === 'append') busy(1);
      }
    },
  });
  connectAll([n1, n2]);
  try {
    // Warm up: the raft channel's listener accepts version 6, then the control channel opens.
    for (let i = 0; i < 200 && n1.transport.stats().peers.get(2)?.controlConnected !== true; i++) {
      n1.transport.send([heartbeat(1, 2, i)]);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.equal(n1.transport.stats().peers.get(2)?.controlConnected, true, 'control channel up');
    await until(() => arrivals.length > 0, 'warm-up heartbeats');
    arrivals.length = 0;

    const appends = 400; // 16 KiB each: 6.4 MB, ~0.4 s of the receiver's time at 1 ms each
    const flood: RaftMessage[] = Array.from({ length: appends }, (_, i) => ({
      type: 'append', from: 1, to: 2, term: 1, prevIndex: i, prevTerm: 1, commit: i,
      entries: [{ index: i + 1, term: 1, type: 0, data: new Uint8Array(16 * 1024).fill(i & 0xff) }],
    }));
    n1.transport.send(flood);
    // The flood is written this turn; the heartbeat in a later one, behind it on the wire.
    await new Promise((resolve) => setTimeout(resolve, 5));
    n1.transport.send([heartbeat(1, 2, 1_000_000)]);
    await until(() => arrivals.filter((type) => type === 'append').length === appends, 'the flood');
    const before = arrivals.indexOf('heartbeat');
    assert.ok(before >= 0, 'the heartbeat arrived');
    // On one shared connection it would come after all 400 appends.
    assert.ok(before < appends / 2, `heartbeat after ${before} of ${appends} appends`);
    assert.equal(n1.transport.stats().peers.get(2)?.droppedMessages, 0);
  } finally {
    await n1.transport.close();
    await n2.transport.close();
  }
});

test('each channel keeps its own order, and a restarted peer gets both channels back', async () => {
  const n1 = await startNode(1);
  let n2 = await startNode(2);
  connectAll([n1, n2]);
  try {
    await until(() => {
      n1.transport.send([heartbeat(1, 2, 0)]);
      return n1.transport.stats().peers.get(2)?.controlConnected === true;
    }, 'control channel up');
    const port = n2.transport.address().port;
    await n2.transport.close();
    await until(() => n1.transport.stats().peers.get(2)?.controlConnected === false, 'control channel down');
    n2 = await startNode(2, { listen: { host: '127.0.0.1', port } });
    n2.transport.addPeer(1, n1.transport.address());
    const sent: RaftMessage[] = [];
    await until(() => {
      const i = sent.length;
      const batch: RaftMessage[] = [heartbeat(1, 2, i), {
        type: 'append', from: 1, to: 2, term: 1, prevIndex: i, prevTerm: 1, commit: i, entries: [],
      }];
      sent.push(...batch);
      n1.transport.send(batch);
      return n1.transport.stats().peers.get(2)?.controlConnected === true && n2.received.length > 10;
    }, 'both channels back', 10_000);
    for (const type of ['heartbeat', 'append']) {
      const commits = n2.received.filter((m) => m.type === type)
        .map((m) => (m.type === 'heartbeat' || m.type === 'append' ? m.commit : -1));
      assert.deepEqual(commits, [...commits].sort((a, b) => a - b), `${type}s in order`);
    }
  } finally {
    await n1.transport.close();
    await n2.transport.close();
  }
});
