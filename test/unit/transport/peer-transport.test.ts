// PeerTransport over real TCP on 127.0.0.1: messages arrive complete and in order per peer and channel,
// a restarted peer is reconnected to, foreign clusters and unknown members are refused and
// logged, a dead peer costs bounded memory (drops are counted and reported), a peer that stops
// reading is dialled again, and a corrupt stream closes only its own connection.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, createServer, type Socket } from 'node:net';
import { crc32 } from 'node:zlib';
import type { RaftMessage } from '../../../src/raft/index.js';
import { connectAll, heartbeat, startNode, until, type TestNode } from './tcp-helpers.js';

async function closeAll(nodes: readonly TestNode[]): Promise<void> {
  await Promise.all(nodes.map((node) => node.transport.close()));
}

test('messages arrive in order per peer, batched into few frames', async () => {
  const nodes = await Promise.all([1, 2, 3].map((id) => startNode(id)));
  connectAll(nodes);
  const [n1, n2, n3] = nodes as [TestNode, TestNode, TestNode];
  try {
    const perSender = 20_000;
    for (let turn = 0; turn < perSender / 500; turn++) {
      const batch1: RaftMessage[] = [];
      const batch3: RaftMessage[] = [];
      for (let i = 0; i < 500; i++) {
        const commit = turn * 500 + i;
        batch1.push(commit % 10 === 0
          ? { type: 'append', from: 1, to: 2, term: 1, prevIndex: commit, prevTerm: 1, commit,
            entries: [{ index: commit + 1, term: 1, type: 0,
              data: new Uint8Array(100).fill(commit & 0xff) }] }
          : heartbeat(1, 2, commit));
        batch3.push(heartbeat(3, 2, commit));
      }
      n1.transport.send(batch1);
      n3.transport.send(batch3);
      await new Promise((resolve) => setImmediate(resolve));
    }
    await until(() => n2.received.length === 2 * perSender, 'all messages');
    // In order per peer and channel: appends on the raft channel, heartbeats on the control one
    // (control-channel.test.ts), so the two kinds may interleave differently than sent.
    for (const from of [1, 3]) {
      for (const type of ['heartbeat', 'append']) {
        const commits = n2.received.filter((m) => m.from === from && m.type === type)
          .map((m) => (m.type === 'heartbeat' || m.type === 'append' ? m.commit : -1));
        const sent = Array.from({ length: perSender }, (_, i) => i)
          .filter((commit) => from === 3 ? type === 'heartbeat' : (commit % 10 === 0) === (type === 'append'));
        assert.deepEqual(commits, sent, `order of ${type}s from ${from}`);
      }
    }
    // Entry data are views of received socket chunks: still intact after many later reads.
    for (const m of n2.received) {
      if (m.type !== 'append') continue;
      assert.ok(m.entries[0]?.data.every((byte) => byte === (m.commit & 0xff)), 'entry data');
    }
    const stats = n1.transport.stats().peers.get(2);
    assert.equal(stats?.droppedMessages, 0);
    assert.ok((stats?.sentFrames ?? 0) <= perSender / 100, `batched: ${stats?.sentFrames} frames`);
    assert.deepEqual(n1.unreachable, []);
  } finally {
    await closeAll(nodes);
  }
});

test('a restarted peer is reconnected to; losses meanwhile are reported', async () => {
  const n1 = await startNode(1);
  let n2 = await startNode(2);
  const port = n2.transport.address().port;
  connectAll([n1, n2]);
  try {
    n1.transport.send([heartbeat(1, 2, 1)]);
    await until(() => n2.received.length === 1, 'first heartbeat');
    await n2.transport.close();
    // While it is down, sends are dropped and reported rather than queued without bound.
    await until(() => {
      n1.transport.send([heartbeat(1, 2, 2)]);
      return n1.unreachable.includes(2);
    }, 'unreachable report');
    n2 = await startNode(2, { listen: { host: '127.0.0.1', port } });
    n2.transport.addPeer(1, n1.transport.address());
    let commit = 100;
    await until(() => {
      n1.transport.send([heartbeat(1, 2, commit++)]);
      return n2.received.length > 0;
    }, 'heartbeat after restart');
    const first = n2.received[0];
    assert.ok(first?.type === 'heartbeat' && first.commit >= 100, 'only new messages arrive');
    assert.ok((n1.transport.stats().peers.get(2)?.droppedMessages ?? 0) > 0);
  } finally {
    await closeAll([n1, n2]);
  }
});

test('another cluster and unknown members are refused and logged', async () => {
  const n2 = await startNode(2);
  const foreign = await startNode(1, { clusterId: 'cluster-b' });
  const stranger = await startNode(9);
  const known = await startNode(1);
  n2.transport.addPeer(1, known.transport.address());
  for (const node of [foreign, stranger, known]) node.transport.addPeer(2, n2.transport.address());
  try {
    foreign.transport.send([heartbeat(1, 2, 1)]);
    stranger.transport.send([heartbeat(9, 2, 1)]);
    await until(() => n2.transport.stats().rejectedConnections >= 2, 'two refusals');
    await until(() => foreign.warnings.length > 0 && stranger.warnings.length > 0,
      'callers learn why');
    assert.equal(n2.received.length, 0, 'nothing from refused connections is delivered');
    assert.ok(n2.warnings.every((w) => w === 'peer connection refused'));
    known.transport.send([heartbeat(1, 2, 7)]);
    await until(() => n2.received.length === 1, 'the known member still gets through');
  } finally {
    await closeAll([n2, foreign, stranger, known]);
  }
});

test('a dead peer costs bounded memory: drops are counted and reported', async () => {
  const n1 = await startNode(1, { limits: { queueMessagesMax: 100, reconnectDelayMsBase: 10,
    reconnectDelayMsMax: 50 } });
  // Nothing listens on this port once the placeholder is closed.
  const placeholder = await startNode(2);
  const address = placeholder.transport.address();
  await placeholder.transport.close();
  n1.transport.addPeer(2, address);
  try {
    n1.transport.send(Array.from({ length: 1000 }, (_, i) => heartbeat(1, 2, i)));
    const stats = n1.transport.stats().peers.get(2);
    assert.ok(stats !== undefined && stats.queuedMessages <= 100);
    assert.ok(stats.droppedMessages >= 900);
    await until(() => n1.unreachable.includes(2), 'reportUnreachable');
    await until(() => (n1.transport.stats().peers.get(2)?.connectFailures ?? 0) >= 1, 'failure');
  } finally {
    await n1.transport.close();
  }
});

test('a silent or oversized opening is cut off before it costs memory', async () => {
  const n2 = await startNode(2, { limits: { handshakeTimeoutMs: 100 } });
  try {
    const silent = connect(n2.transport.address());
    silent.on('error', () => {});
    const closedAt = await new Promise<number>((resolve) =>
      silent.once('close', () => resolve(performance.now())));
    assert.ok(closedAt > 0 && n2.warnings.includes('peer connection without handshake: closed'));
    // A first frame claiming 1 MiB: refused on its length, before the handshake is known.
    const big = connect(n2.transport.address());
    big.on('error', () => {});
    const header = Buffer.alloc(8);
    header.writeUInt32LE(1024 * 1024, 0);
    big.write(header);
    await new Promise((resolve) => big.once('close', resolve));
    assert.equal(n2.transport.stats().corruptFrames, 1);
  } finally {
    await n2.transport.close();
  }
});

test('a corrupt stream closes its connection only, and the sender recovers', async () => {
  const [n1, n2] = await Promise.all([startNode(1), startNode(2)]);
  connectAll([n1, n2]);
  try {
    const raw = connect(n2.transport.address());
    await new Promise((resolve) => raw.once('connect', resolve));
    raw.on('error', () => {});
    raw.write(Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n')); // not a Baton peer
    await new Promise((resolve) => raw.once('close', resolve));
    assert.equal(n2.transport.stats().corruptFrames, 1);
    n1.transport.send([heartbeat(1, 2, 5)]);
    await until(() => n2.received.length === 1, 'real peers unaffected');
  } finally {
    await closeAll([n1, n2]);
  }
});

test('a peer that accepts but stops reading is abandoned and dialled again', async () => {
  // A stand-in for a SIGSTOPped peer: it answers the handshake, then never reads again.
  const accepted: Socket[] = [];
  const server = createServer((socket) => {
    accepted.push(socket);
    socket.once('data', () => {
      const payload = Buffer.from([2, 1, 0, 0]); // handshakeReply: accepted, empty reason
      const header = Buffer.alloc(8);
      header.writeUInt32LE(payload.length, 0);
      header.writeUInt32LE(crc32(payload), 4);
      socket.write(Buffer.concat([header, payload]));
      socket.pause();
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const n1 = await startNode(1, { limits: { socketBufferedBytesMax: 64 * 1024,
    writeStallTimeoutMs: 200, reconnectDelayMsBase: 10, reconnectDelayMsMax: 50 } });
  n1.transport.addPeer(2, { host: '127.0.0.1', port });
  const data = new Uint8Array(64 * 1024);
  try {
    let index = 0;
    await until(() => {
      const messages: RaftMessage[] = Array.from({ length: 20 }, () => ({
        type: 'append', from: 1, to: 2, term: 1, prevIndex: index, prevTerm: 1, commit: 0,
        entries: [{ index: ++index, term: 1, type: 0, data }] }));
      n1.transport.send(messages);
      return accepted.length >= 2;
    }, 'a second connection after the stall', 10_000);
    assert.ok(n1.warnings.includes('peer stopped reading: reconnecting'));
    assert.ok(n1.unreachable.includes(2));
  } finally {
    await n1.transport.close();
    for (const socket of accepted) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  }
});
