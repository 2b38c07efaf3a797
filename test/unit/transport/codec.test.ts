// The codec round-trips every RaftMessage variant exactly: seeded random messages are encoded
// into frames, split into random TCP-like chunks, reassembled and decoded, and must compare
// equal; entry data must come back as views of the received bytes rather than copies.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SeededRandom, randomInt } from '../../../src/base/random.js';
import type { RaftMessage } from '../../../src/raft/index.js';
import {
  FrameKind, FrameReader, WireReader, WireWriter, defaultTransportLimits, encodeMessageFrames,
  TransportError, messageBytes, readMessage, readMessagesBody, writeMessage,
} from '../../../src/transport/index.js';
import { messageTypes, normalize, randomMessage } from './random-messages.js';

const limits = defaultTransportLimits;

function roundTrip(message: RaftMessage): RaftMessage {
  const size = messageBytes(message);
  const buffer = Buffer.alloc(size + 3);
  const w = new WireWriter(buffer, 3);
  writeMessage(w, message);
  assert.equal(w.offset, size + 3, 'messageBytes is exact');
  const r = new WireReader(buffer, 3, buffer.length);
  const decoded = readMessage(r, limits);
  assert.equal(r.remaining(), 0);
  return decoded;
}

test('every variant round-trips with random contents', () => {
  const random = new SeededRandom(0x7a11n);
  for (const type of messageTypes) {
    for (let i = 0; i < 200; i++) {
      const message = randomMessage(random, type, { from: 1 + (i % 7), to: 100 + i });
      assert.deepEqual(normalize(roundTrip(message)), normalize(message), `${type} #${i}`);
    }
  }
});

test('batches survive framing and arbitrary chunking, in order', () => {
  const random = new SeededRandom(0xba7cn);
  for (let round = 0; round < 40; round++) {
    const messages = Array.from({ length: randomInt(random, 1, 300) },
      () => randomMessage(random, messageTypes[random.uint32() % messageTypes.length]!));
    const sizes = messages.map(messageBytes);
    // A small frame target forces many frames per flush.
    const wire = encodeMessageFrames(messages, sizes,
      { ...limits, frameBytesTarget: randomInt(random, 64, 20_000) });
    const reader = new FrameReader(limits.frameBytesMax);
    const decoded: RaftMessage[] = [];
    for (let offset = 0; offset < wire.length;) {
      const end = Math.min(wire.length, offset + randomInt(random, 1, 5000));
      reader.push(wire.subarray(offset, end));
      offset = end;
      for (let frame = reader.next(); frame !== null; frame = reader.next()) {
        assert.equal(frame.kind, FrameKind.messages);
        decoded.push(...readMessagesBody(frame.body, limits));
      }
    }
    assert.equal(reader.bufferedBytes(), 0);
    assert.deepEqual(normalize(decoded), normalize(messages));
  }
});

test('entry data is a view of the received frame, not a copy', () => {
  const message: RaftMessage = {
    type: 'append', from: 1, to: 2, term: 3, prevIndex: 9, prevTerm: 2, commit: 9,
    entries: [{ index: 10, term: 3, type: 0, data: new Uint8Array([1, 2, 3]) }],
  };
  const wire = encodeMessageFrames([message], [messageBytes(message)], limits);
  const reader = new FrameReader(limits.frameBytesMax);
  reader.push(wire);
  const frame = reader.next();
  assert.ok(frame !== null);
  const [decoded] = readMessagesBody(frame.body, limits);
  assert.ok(decoded?.type === 'append');
  const data = decoded.entries[0]?.data;
  assert.ok(data !== undefined);
  assert.equal(data.buffer, wire.buffer, 'same memory as the received chunk');
  assert.deepEqual(Array.from(data), [1, 2, 3]);
});

test('readIndexResponse keeps index -1 (refused) distinct from 0', () => {
  for (const index of [-1, 0, 1, Number.MAX_SAFE_INTEGER - 1]) {
    const message: RaftMessage = { type: 'readIndexResponse', from: 2, to: 1, term: 4,
      contexts: [7], index };
    assert.deepEqual(roundTrip(message), message);
  }
});

test('the encoder refuses messages the decoder would reject (paired checks)', () => {
  const bad: RaftMessage = {
    type: 'append', from: 1, to: 2, term: 3, prevIndex: 9, prevTerm: 2, commit: 9,
    entries: [{ index: 11, term: 3, type: 0, data: new Uint8Array(0) }],
  };
  assert.throws(() => roundTrip(bad), { name: 'AssertionError' });
  assert.throws(() => roundTrip({ type: 'timeoutNow', from: 1, to: 1, term: 1 }),
    { name: 'AssertionError' });
  assert.throws(() => roundTrip({ type: 'heartbeatResponse', from: 1, to: 2, term: 1.5,
    readRound: 0 }), { name: 'AssertionError' });
  assert.throws(() => roundTrip({ type: 'heartbeat', from: 1, to: 2, term: 1, commit: 0, readRound: 0,
    contact: [2, 3] }), { name: 'AssertionError' });
  assert.throws(() => roundTrip({ type: 'heartbeat', from: 1, to: 2, term: 1, commit: 0, readRound: 0,
    contact: [2, 1] }), { name: 'AssertionError' });
});

test('a heartbeat whose contact list lacks its leader, or repeats a member, is a TransportError', () => {
  for (const contact of [[2, 3], [1, 1, 2]]) {
    const good: RaftMessage = { type: 'heartbeat', from: 1, to: 2, term: 3, commit: 0, readRound: 0, contact: [1, 2, 3] };
    const buffer = Buffer.alloc(messageBytes(good));
    writeMessage(new WireWriter(buffer, 0), good);
    // Overwrite the three ids after the header, commit, readRound and the u32 count.
    const at = 1 + 8 * 3 + 16 + 4;
    const ids = contact.length === 2 ? [2, 3, 3] : contact;
    ids.forEach((id, i) => buffer.writeUInt32LE(id, at + 8 * i));
    assert.throws(() => readMessage(new WireReader(buffer, 0, buffer.length), limits), TransportError);
  }
});

test('a refusal with an unknown reason code is a TransportError, not a message', () => {
  const message: RaftMessage = { type: 'proposeRefused', from: 1, to: 2, term: 3, reason: 'overloaded', commands: [new Uint8Array(17)] };
  const buffer = Buffer.alloc(messageBytes(message));
  writeMessage(new WireWriter(buffer, 0), message);
  buffer[1 + 8 * 3] = 9; // the reason byte follows the header (type, from, to, term)
  assert.throws(() => readMessage(new WireReader(buffer, 0, buffer.length), limits), TransportError);
});
