// Snapshots travel on a connection of their own in bounded chunks: while a large snapshot
// streams to a deliberately slow consumer, heartbeats on the raft connection keep arriving
// promptly; the data arrives intact; a short or refused stream is reported as failed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { crc32 } from 'node:zlib';
import type { RaftMessage } from '../../../src/raft/index.js';
import type {
  IncomingSnapshot, OutgoingSnapshot, SnapshotMessage,
} from '../../../src/transport/index.js';
import { connectAll, heartbeat, startNode, until } from './tcp-helpers.js';

const mebibyte = 1024 * 1024;
const meta = { index: 1000, term: 3, confState: { voters: [1, 2, 3], votersOutgoing: [],
  learners: [] } };

function snapshotMessage(data: Uint8Array): SnapshotMessage {
  return { type: 'snapshot', from: 1, to: 2, term: 3, snapshot: { meta, data } };
}

/** Deterministic chunks as a snapshot file reader would yield them (fresh buffers). */
async function* fileLikeChunks(totalBytes: number, chunkBytes: number): AsyncIterable<Uint8Array> {
  for (let offset = 0; offset < totalBytes; offset += chunkBytes) {
    const chunk = Buffer.alloc(Math.min(chunkBytes, totalBytes - offset), offset / chunkBytes);
    yield chunk;
  }
}

/** fileLikeChunks as a non-resumable source announcing `totalBytes` (a liar when they differ). */
function fileLike(bytes: number, chunkBytes: number, totalBytes = bytes): OutgoingSnapshot {
  return {
    totalBytes,
    checksum: 0,
    chunks(fromOffset) {
      assert.equal(fromOffset, 0, 'these handlers never resume');
      return fileLikeChunks(bytes, chunkBytes);
    },
  };
}

test('a large snapshot stream does not delay heartbeats', async (t) => {
  const totalBytes = 48 * mebibyte;
  let snapshotDone = false;
  let received = 0;
  let crc = 0;
  const onSnapshot = async (incoming: IncomingSnapshot): Promise<void> => {
    assert.deepEqual(incoming.meta, meta);
    for await (const chunk of incoming.chunks) {
      received += chunk.length;
      crc = crc32(chunk, crc);
      await new Promise((resolve) => setTimeout(resolve, 2)); // a slow disk
    }
    snapshotDone = true;
  };
  const n1 = await startNode(1);
  const n2 = await startNode(2, { onSnapshot });
  connectAll([n1, n2]);
  const sentAt = new Map<number, number>();
  const latenciesMs: number[] = [];
  const onMessages = (batch: readonly RaftMessage[]): void => {
    for (const m of batch) {
      if (m.type === 'heartbeat' && !snapshotDone && received > 0) {
        latenciesMs.push(performance.now() - (sentAt.get(m.commit) ?? 0));
      }
    }
  };
  // Watch n2's deliveries without replacing its recorder.
  const originalPush = n2.received.push.bind(n2.received);
  n2.received.push = (...items: RaftMessage[]) => (onMessages(items), originalPush(...items));
  try {
    const startedAt = performance.now();
    const sending = n1.transport.sendSnapshot(snapshotMessage(new Uint8Array(0)),
      fileLike(totalBytes, 3 * mebibyte, totalBytes));
    let commit = 0;
    const ticker = setInterval(() => {
      sentAt.set(++commit, performance.now());
      n1.transport.send([heartbeat(1, 2, commit)]);
    }, 5);
    try {
      assert.equal(await sending, true);
    } finally {
      clearInterval(ticker);
    }
    const transferMs = performance.now() - startedAt;
    assert.equal(received, totalBytes);
    let expected = 0;
    for await (const chunk of fileLikeChunks(totalBytes, 3 * mebibyte)) {
      expected = crc32(chunk, expected);
    }
    assert.equal(crc, expected, 'data intact');
    assert.deepEqual(n1.snapshotReports, [{ to: 2, ok: true }]);
    latenciesMs.sort((a, b) => a - b);
    assert.ok(latenciesMs.length >= 20, `heartbeats during the transfer: ${latenciesMs.length}`);
    const p99 = latenciesMs[Math.floor(latenciesMs.length * 0.99)] ?? Infinity;
    const max = latenciesMs[latenciesMs.length - 1] ?? Infinity;
    t.diagnostic(`${latenciesMs.length} heartbeats during a ${transferMs.toFixed(0)} ms transfer: ` +
      `p99 ${p99.toFixed(1)} ms, max ${max.toFixed(1)} ms`);
    // Queued behind the snapshot, heartbeats would wait for most of the transfer; the bound is
    // loose for busy test machines yet far below the transfer time and an election timeout.
    assert.ok(transferMs > 1000, 'the transfer lasts long enough to test anything');
    assert.ok(p99 < 250, `heartbeat p99 ${p99.toFixed(1)} ms during the snapshot`);
  } finally {
    await Promise.all([n1.transport.close(), n2.transport.close()]);
  }
});

test('snapshot messages passed to send() arrive whole through onMessages', async () => {
  const [n1, n2] = await Promise.all([startNode(1), startNode(2)]);
  connectAll([n1, n2]);
  try {
    const data = new Uint8Array(3 * mebibyte + 17).map((_, i) => i * 7);
    n1.transport.send([snapshotMessage(data), heartbeat(1, 2, 1)]);
    await until(() => n2.received.some((m) => m.type === 'snapshot'), 'snapshot delivered');
    const got = n2.received.find((m) => m.type === 'snapshot');
    assert.ok(got?.type === 'snapshot');
    assert.deepEqual(got.snapshot.meta, meta);
    assert.ok(Buffer.from(got.snapshot.data).equals(Buffer.from(data)));
    await until(() => n1.snapshotReports.length === 1, 'report');
    assert.deepEqual(n1.snapshotReports, [{ to: 2, ok: true }]);
  } finally {
    await Promise.all([n1.transport.close(), n2.transport.close()]);
  }
});

test('a stream shorter than announced, or refused by the handler, fails', async () => {
  const n1 = await startNode(1);
  const n2 = await startNode(2, { onSnapshot: async (incoming) => {
    for await (const _chunk of incoming.chunks) {
      if (incoming.meta.index === 14) throw new Error('disk full mid-stream');
    }
    if (incoming.meta.index === 13) throw new Error('disk full');
  } });
  connectAll([n1, n2]);
  try {
    const short = await n1.transport.sendSnapshot(snapshotMessage(new Uint8Array(0)),
      fileLike(1000, 100, 2000));
    assert.equal(short, false);
    const refused = await n1.transport.sendSnapshot(
      { ...snapshotMessage(new Uint8Array(10)), snapshot: { meta: { ...meta, index: 13 },
        data: new Uint8Array(10) } }, fileLike(10, 10, 10));
    assert.equal(refused, false);
    // Refused mid-stream: the sender stops at once instead of waiting out an idle timeout.
    const startedAt = performance.now();
    const midStream = await n1.transport.sendSnapshot(
      { ...snapshotMessage(new Uint8Array(0)), snapshot: { meta: { ...meta, index: 14 },
        data: new Uint8Array(0) } }, fileLike(64 * mebibyte, mebibyte, 64 * mebibyte));
    assert.equal(midStream, false);
    assert.ok(performance.now() - startedAt < 3000, 'the refusal reaches the sender promptly');
    const fine = await n1.transport.sendSnapshot(snapshotMessage(new Uint8Array(0)),
      fileLike(10, 10, 10));
    assert.equal(fine, true);
    assert.deepEqual(n1.snapshotReports.map((r) => r.ok), [false, false, false, true]);
  } finally {
    await Promise.all([n1.transport.close(), n2.transport.close()]);
  }
});
