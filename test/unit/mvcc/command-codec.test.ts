// The command envelope codec: every command shape round-trips exactly, and decoding validates
// (magic, truncation, trailing bytes, keys, limits) with typed errors that carry the limit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { InvalidArgumentError, TooLargeError } from '../../../src/base/errors.js';
import { SeededRandom } from '../../../src/base/random.js';
import { decodeCommand, defaultMvccLimits, encodeCommand } from '../../../src/mvcc/index.js';
import type { CommandEnvelope } from '../../../src/mvcc/index.js';
import { encodeCommandUnchecked } from '../../../src/mvcc/command-codec.js';
import { generateWorkload } from './workload.js';

const limits = defaultMvccLimits;

test('valid commands round-trip exactly', () => {
  const envelopes: CommandEnvelope[] = [
    { proposedAtMs: 0, op: { type: 'put', key: '/k', value: new Uint8Array([1, 2]) } },
    { requestId: 'r-1', proposedAtMs: 2 ** 52, op: { type: 'put', key: '/😀', value: new Uint8Array(0), lease: 7, ifVersion: 0, ifRevision: 3 } },
    { proposedAtMs: 5, op: { type: 'delete', key: '/a', prefix: true } },
    { proposedAtMs: 5, op: { type: 'delete', key: '/a', ifVersion: 2 } },
    { proposedAtMs: 5, op: { type: 'compact', revision: 9 } },
    { proposedAtMs: 5, op: { type: 'deleteLeaseKeys', lease: 81 } },
    { proposedAtMs: 5, source: 2, op: { type: 'upgradeStore', storeFormat: 2 } },
    {
      proposedAtMs: 5,
      op: {
        type: 'txn',
        compare: [
          { key: '/locks/x', target: 'version', op: '==', value: 0 },
          { key: '/locks/x', target: 'value', op: '!=', value: new Uint8Array([9]) },
        ],
        success: [{ type: 'put', key: '/locks/x', value: new Uint8Array([1]), lease: 81 }],
        failure: [{ type: 'get', key: '/locks/x', prefix: true, limit: 1, keysOnly: true, countOnly: true }],
      },
    },
  ];
  for (const envelope of envelopes) {
    assert.deepEqual(decodeCommand(encodeCommand(envelope, limits), limits), envelope);
  }
  // And every valid command of a random workload.
  for (const item of generateWorkload(3n, 300)) {
    if (item.kind !== 'command') continue;
    let valid = true;
    try {
      encodeCommand(item.envelope, { ...limits, txnOpsMax: 1000 });
    } catch {
      valid = false;
    }
    if (valid) assert.deepEqual(decodeCommand(item.entry.data, { ...limits, txnOpsMax: 1000 }), item.envelope);
  }
});

test('upgradeStore is op code 13 with one format byte, never inside a txn, format 1 to 255', () => {
  const bytes = encodeCommand({ proposedAtMs: 5, op: { type: 'upgradeStore', storeFormat: 2 } }, limits);
  assert.deepEqual([...bytes.subarray(-2)], [13, 2]);
  for (const storeFormat of [0, 256, 1.5]) {
    assert.throws(() => encodeCommand({ proposedAtMs: 5, op: { type: 'upgradeStore', storeFormat } }, limits), InvalidArgumentError);
  }
  const txn = encodeCommandUnchecked({
    proposedAtMs: 5,
    op: { type: 'txn', compare: [], success: [{ type: 'upgradeStore', storeFormat: 2 } as never], failure: [] },
  });
  assert.throws(() => decodeCommand(txn, limits), InvalidArgumentError);
});

test('limits and validation are typed errors carrying the limit', () => {
  const put = (key: string, size: number): CommandEnvelope => ({
    proposedAtMs: 1,
    op: { type: 'put', key, value: new Uint8Array(size) },
  });
  const tooLarge = (run: () => unknown, limit: number): void => {
    assert.throws(run, (error: unknown) => error instanceof TooLargeError && error.details['limit'] === limit);
  };
  tooLarge(() => encodeCommand(put('/' + 'k'.repeat(4096), 1), limits), 4096);
  encodeCommand(put('/' + 'k'.repeat(4095), 1), limits);
  tooLarge(() => encodeCommand(put('/k', 1024 * 1024 + 1), limits), 1024 * 1024);
  tooLarge(() => encodeCommand(put('/k', 100), { ...limits, valueBytesMax: 99 }), 99);
  tooLarge(() => encodeCommand(put('/k', 1000), { ...limits, requestBytesMax: 900 }), 900);
  const ops = Array.from({ length: 65 }, (_, i) => ({ type: 'get' as const, key: `/k${i}` }));
  const txn = (compareCount: number): CommandEnvelope => ({
    proposedAtMs: 1,
    op: {
      type: 'txn',
      compare: Array.from({ length: compareCount }, () => ({ key: '/a', target: 'version' as const, op: '==' as const, value: 1 })),
      success: ops,
      failure: ops.slice(0, 63),
    },
  });
  encodeCommand(txn(0), limits);
  tooLarge(() => encodeCommand(txn(1), limits), 128);
  tooLarge(() => decodeCommand(encodeCommandUnchecked(txn(1)), limits), 128);
  tooLarge(() => encodeCommand({ requestId: 'x'.repeat(129), proposedAtMs: 1, op: put('/k', 1).op }, limits), 128);
  for (const key of ['k', '', '/\uD800x']) {
    assert.throws(() => encodeCommand(put(key, 1), limits), InvalidArgumentError);
  }
  assert.throws(
    () => encodeCommand({ proposedAtMs: 1, op: { type: 'delete', key: '/a', prefix: true, ifVersion: 1 } }, limits),
    InvalidArgumentError,
  );
});

test('malformed bytes never decode', () => {
  const good = encodeCommand({ requestId: 'id', proposedAtMs: 1, op: { type: 'put', key: '/k', value: new Uint8Array(4) } }, limits);
  for (let cut = 0; cut < good.length; cut++) {
    assert.throws(() => decodeCommand(good.subarray(0, cut), limits), InvalidArgumentError);
  }
  assert.throws(() => decodeCommand(Uint8Array.from([...good, 0]), limits), InvalidArgumentError);
  const random = new SeededRandom(5n);
  for (let i = 0; i < 2000; i++) {
    const bytes = Uint8Array.from(good);
    bytes[random.uint32() % bytes.length] = random.uint32() & 0xff;
    try {
      const envelope = decodeCommand(bytes, limits);
      assert.ok(envelope.op.type === 'put');
    } catch (error) {
      assert.ok(error instanceof InvalidArgumentError || error instanceof TooLargeError, String(error));
    }
  }
});

test('the proposer id round-trips; entries of older versions (no flags beyond the Request-ID bit) still decode', () => {
  const op = { type: 'put', key: '/k', value: new Uint8Array([7]) } as const;
  const withSource = encodeCommand({ requestId: 'r', proposedAtMs: 9, source: 2 ** 40, op }, limits);
  assert.deepEqual(decodeCommand(withSource, limits), { requestId: 'r', proposedAtMs: 9, source: 2 ** 40, op });
  // Bytes as the previous format wrote them: flags byte 1 = Request-ID present, no source.
  const old = encodeCommand({ requestId: 'r', proposedAtMs: 9, op }, limits);
  assert.equal(old[10], 1);
  assert.deepEqual(decodeCommand(old, limits), { requestId: 'r', proposedAtMs: 9, op });
  const unknownFlag = Uint8Array.from(old);
  unknownFlag[10] = 1 | 16; // bit 2 (4) is the principal since session 11, bit 3 (8) the source address since session 14
  assert.throws(() => decodeCommand(unknownFlag, limits), /unknown command flags/);
});

test('the client\'s source address round-trips beside the principal, bounded; an entry without it decodes without it', () => {
  const op = { type: 'leaseRevoke', id: 5 } as const;
  const envelope = { requestId: 'r', proposedAtMs: 9, source: 1, principal: 'alice', address: '[::1]:50123', op };
  const bytes = encodeCommand(envelope, limits);
  assert.equal(bytes[10], 1 | 2 | 4 | 8);
  assert.deepEqual(decodeCommand(bytes, limits), envelope);
  const { address: _address, ...before } = envelope;
  assert.deepEqual(decodeCommand(encodeCommand(before, limits), limits), before, 'as a member of the previous version wrote it');
  assert.throws(() => encodeCommand({ ...envelope, address: 'x'.repeat(65) }, limits), TooLargeError);
  assert.throws(() => decodeCommand(encodeCommandUnchecked({ ...envelope, address: 'x'.repeat(65) }), limits), /source address over 64 bytes/);
});
