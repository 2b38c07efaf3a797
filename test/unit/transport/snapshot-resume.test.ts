// Snapshot transfers resume: a relay between two transports cuts (or corrupts) the stream
// mid-way, and the next attempt continues from the bytes the receiver kept, which this test's
// handler holds in memory per snapshot identity (index, term, totalBytes, checksum). Counting
// what the sender's source yields shows how little is sent again; a different snapshot starts
// over, and a corrupted chunk is refused before any of its bytes reach the handler.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { crc32 } from 'node:zlib';
import type {
  IncomingSnapshot, OutgoingSnapshot, SnapshotMessage,
} from '../../../src/transport/index.js';
import { startNode, type TestNode } from './tcp-helpers.js';
import { startRelay, type Forwarder } from './relay.js';

const mebibyte = 1024 * 1024;

function snapshotMessage(index: number): SnapshotMessage {
  const meta = { index, term: 3, confState: { voters: [1, 2], votersOutgoing: [], learners: [] } };
  return { type: 'snapshot', from: 1, to: 2, term: 3, snapshot: { meta, data: new Uint8Array(0) } };
}

function testData(bytes: number, seed: number): Buffer {
  const data = Buffer.allocUnsafe(bytes);
  for (let i = 0; i < bytes; i += 4) data.writeUInt32LE((i * 2654435761 + seed) >>> 0, i);
  return data;
}

/** An in-memory source that records where each attempt started and how much it yielded. */
class CountingSource implements OutgoingSnapshot {
  readonly totalBytes: number;
  readonly checksum: number;
  readonly starts: number[] = [];
  yieldedBytes = 0;

  constructor(private readonly data: Buffer, checksum = crc32(data)) {
    this.totalBytes = data.length;
    this.checksum = checksum;
  }

  async *chunks(fromOffset: number): AsyncIterable<Uint8Array> {
    this.starts.push(fromOffset);
    for (let offset = fromOffset; offset < this.data.length; offset += mebibyte) {
      const chunk = this.data.subarray(offset, offset + mebibyte);
      this.yieldedBytes += chunk.length;
      yield chunk;
    }
  }
}

/** The receiving side: keeps what arrived of the latest snapshot identity, like a partial file. */
function resumingHandler() {
  const state = { key: '', held: [] as Buffer[], completed: [] as Buffer[], failures: 0 };
  const onSnapshot = async (incoming: IncomingSnapshot): Promise<void> => {
    const key = [incoming.meta.index, incoming.meta.term, incoming.totalBytes,
      incoming.checksum].join('/');
    if (key !== state.key) state.held = [];
    state.key = key;
    incoming.resumeAt(state.held.reduce((sum, chunk) => sum + chunk.length, 0));
    try {
      for await (const chunk of incoming.chunks) state.held.push(Buffer.from(chunk));
    } catch (error) {
      state.failures++;
      throw error;
    }
    state.completed.push(Buffer.concat(state.held));
    state.held = [];
    state.key = '';
  };
  return { state, onSnapshot };
}

/**
 * A TCP relay to `target`: the first connection is cut after `fault.atBytes` (or has one byte
 * flipped there, when `corrupt`); later connections pass untouched.
 */
function faultyRelay(target: { host: string; port: number }, fault: { atBytes: number; corrupt: boolean }) {
  return startRelay(target, (connection): Forwarder => {
    let forwarded = 0;
    return (chunk, client, upstream) => {
      const at = fault.atBytes - forwarded;
      forwarded += chunk.length;
      if (connection !== 0 || at < 0 || at >= chunk.length) return void upstream.write(chunk);
      if (!fault.corrupt) {
        upstream.end(chunk.subarray(0, at), () => (upstream.destroy(), client.destroy()));
        return;
      }
      const copy = Buffer.from(chunk);
      copy[at] = (copy[at] ?? 0) ^ 0x40;
      upstream.write(copy);
    };
  });
}

async function withPair(
  fault: { atBytes: number; corrupt: boolean },
  body: (n1: TestNode, n2: TestNode, handler: ReturnType<typeof resumingHandler>) => Promise<void>,
): Promise<void> {
  const handler = resumingHandler();
  const n1 = await startNode(1);
  const n2 = await startNode(2, { onSnapshot: handler.onSnapshot });
  n2.transport.addPeer(1, n1.transport.address());
  const relay = await faultyRelay(n2.transport.address(), fault);
  n1.transport.addPeer(2, { host: '127.0.0.1', port: relay.port });
  try {
    await body(n1, n2, handler);
  } finally {
    await Promise.all([n1.transport.close(), n2.transport.close(), relay.close()]);
  }
}

test('a transfer cut mid-way resumes from the offset the receiver holds', async () => {
  const totalBytes = 16 * mebibyte;
  await withPair({ atBytes: 9 * mebibyte, corrupt: false }, async (n1, _n2, { state }) => {
    const source = new CountingSource(testData(totalBytes, 1));
    assert.equal(await n1.transport.sendSnapshot(snapshotMessage(10), source), false);
    const held = state.held.reduce((sum, chunk) => sum + chunk.length, 0);
    assert.ok(held >= 4 * mebibyte && held < 9 * mebibyte, `held ${held} after the cut`);
    assert.equal(await n1.transport.sendSnapshot(snapshotMessage(10), source), true);
    assert.deepEqual(source.starts, [0, held]);
    assert.equal(state.completed.length, 1);
    assert.ok(state.completed[0]?.equals(testData(totalBytes, 1)), 'data intact');
    const resentBytes = source.yieldedBytes - totalBytes;
    // Only what was in flight at the cut travels twice: far less than starting over.
    assert.ok(resentBytes <= totalBytes / 4, `resent ${resentBytes} of ${totalBytes} bytes`);
    assert.deepEqual(n1.snapshotReports.map((r) => r.ok), [false, true]);
  });
});

test('a different snapshot (index, or same index with other bytes) starts from 0', async () => {
  const totalBytes = 8 * mebibyte;
  await withPair({ atBytes: 5 * mebibyte, corrupt: false }, async (n1, _n2, { state }) => {
    const first = new CountingSource(testData(totalBytes, 1));
    assert.equal(await n1.transport.sendSnapshot(snapshotMessage(10), first), false);
    assert.ok(state.held.length > 0, 'part of the first snapshot was kept');
    // Same index, term and size, other bytes (another leader's file): the checksum differs.
    const otherBytes = new CountingSource(testData(totalBytes, 2));
    assert.equal(await n1.transport.sendSnapshot(snapshotMessage(10), otherBytes), true);
    assert.deepEqual(otherBytes.starts, [0]);
    assert.ok(state.completed[0]?.equals(testData(totalBytes, 2)));
    const newer = new CountingSource(testData(totalBytes, 1));
    assert.equal(await n1.transport.sendSnapshot(snapshotMessage(11), newer), true);
    assert.deepEqual(newer.starts, [0]);
    assert.ok(state.completed[1]?.equals(testData(totalBytes, 1)));
  });
});

test('a corrupted chunk is refused, and the retry resumes with intact data', async () => {
  const totalBytes = 8 * mebibyte;
  await withPair({ atBytes: 3 * mebibyte + 12345, corrupt: true }, async (n1, n2, { state }) => {
    const source = new CountingSource(testData(totalBytes, 3));
    assert.equal(await n1.transport.sendSnapshot(snapshotMessage(12), source), false);
    assert.equal(n2.transport.stats().corruptFrames, 1);
    assert.equal(state.failures, 1);
    assert.equal(state.completed.length, 0, 'nothing was stored from the corrupt stream');
    const held = state.held.reduce((sum, chunk) => sum + chunk.length, 0);
    assert.ok(held < 3 * mebibyte + 12345, 'the corrupt chunk never reached the handler');
    assert.equal(await n1.transport.sendSnapshot(snapshotMessage(12), source), true);
    assert.deepEqual(source.starts, [0, held]);
    assert.ok(state.completed[0]?.equals(testData(totalBytes, 3)), 'data intact');
  });
});
