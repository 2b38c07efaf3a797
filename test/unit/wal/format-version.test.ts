// A segment written by a newer Baton (a WAL format version this build does not read) is refused
// with a message that says which versions this build reads: an operator rolling back an upgrade
// learns why the member will not start and what to run instead.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeSegmentHeader, encodeSegmentHeader } from '../../../src/wal/codec.js';

test('a segment header of an unknown WAL format version names the versions this build reads', () => {
  const header = encodeSegmentHeader({ seq: 3, firstIndex: 10, chainSeed: 77, writeBytesMax: 1 << 16, wrappedKey: null });
  assert.equal(typeof decodeSegmentHeader(header), 'object', 'this build reads its own header');
  header.writeUInt32LE(9, 8);
  const refusal = decodeSegmentHeader(header);
  assert.equal(typeof refusal, 'string');
  assert.match(refusal as string, /unsupported WAL format version 9: this build reads versions 1 \(plain\), 2 and 3 \(encrypted\)/);
});
