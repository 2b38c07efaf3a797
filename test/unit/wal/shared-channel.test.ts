// The shared-memory request format between the WAL and its sync thread: every op kind comes back
// as it went in, and batches too big for the area are cut into requests that put the same bytes
// in the same places.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createSharedChannel, decodeRequest, encodeRequest, splitForChannel } from '../../../src/wal/shared-channel.js';
import type { WalOp } from '../../../src/wal/types.js';

const ops: WalOp[] = [
  { type: 'create', seq: 3, path: '/w/0003.wal', tmpPath: '/w/0003.wal.tmp', sizeBytes: 67108864, sparePath: null, prefix: Uint8Array.of(1, 2, 3) },
  { type: 'create', seq: 4, path: '/w/0004.wal', tmpPath: '/w/0004.wal.tmp', sizeBytes: 4096, sparePath: '/w/spare', prefix: new Uint8Array(0) },
  { type: 'open', seq: 2, path: '/w/ü/0002.wal' },
  { type: 'write', seq: 2, offset: 2 ** 40 + 7, data: Uint8Array.of(9, 8, 7) },
  { type: 'sync', seq: 2 },
  { type: 'close', seq: 2 },
  { type: 'unlink', dir: '/w', paths: ['/w/0000.wal', '/w/0001.wal'] },
];

function plain(list: readonly WalOp[]): unknown[] {
  return list.map((op) => ('data' in op ? { ...op, data: [...op.data] } : 'prefix' in op ? { ...op, prefix: [...op.prefix] } : op));
}

test('every op kind survives the shared area', () => {
  const { data } = createSharedChannel();
  encodeRequest(ops, data);
  assert.deepEqual(plain(decodeRequest(data) ?? []), plain(ops));
  encodeRequest(null, data);
  assert.equal(decodeRequest(data), null, 'the exit request');
});

test('a batch larger than the area is cut into requests with the same bytes at the same offsets', () => {
  const big = new Uint8Array(300_000).map((_, i) => i % 251);
  const batch: WalOp[] = [
    { type: 'write', seq: 1, offset: 1000, data: big },
    { type: 'write', seq: 1, offset: 301_000, data: Uint8Array.of(5) },
    { type: 'sync', seq: 1 },
  ];
  const capacity = 64 * 1024 + 100_000; // room for 100,000 bytes of data per request
  const requests = splitForChannel(batch, capacity);
  assert.ok(requests.length >= 3, `${requests.length} requests`);
  const file = new Uint8Array(302_000);
  const { data } = createSharedChannel();
  const seen: string[] = [];
  for (const request of requests) {
    encodeRequest(request, data);
    for (const op of decodeRequest(data) ?? []) {
      seen.push(op.type);
      if (op.type === 'write') file.set(op.data, op.offset);
    }
  }
  assert.deepEqual(file.subarray(1000, 301_000), big);
  assert.equal(file[301_000], 5);
  assert.equal(seen.at(-1), 'sync', 'the sync stays last');
});
