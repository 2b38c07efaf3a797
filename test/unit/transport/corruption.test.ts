// Garbage from the network never crashes the decoder and never passes as a message: random byte
// flips, truncations and splices of valid frames either wait for more bytes or fail with a typed
// TransportError (the per-frame CRC-32 catches flips that still parse), and lengths or counts
// beyond the limits are refused before anything is allocated for them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SeededRandom, randomInt } from '../../../src/base/random.js';
import type { RaftMessage } from '../../../src/raft/index.js';
import {
  FrameReader, TransportError, WireReader, defaultTransportLimits, encodeMessageFrames,
  messageBytes, readMessagesBody,
} from '../../../src/transport/index.js';
import { messageTypes, normalize, randomMessage } from './random-messages.js';

const limits = defaultTransportLimits;

function randomBatch(random: SeededRandom): RaftMessage[] {
  return Array.from({ length: randomInt(random, 1, 12) },
    () => randomMessage(random, messageTypes[random.uint32() % messageTypes.length]!));
}

/** Decodes every complete frame in `wire`; throws whatever the reader or decoder throws. */
function decodeAll(wire: Buffer): RaftMessage[] {
  const reader = new FrameReader(limits.frameBytesMax);
  reader.push(wire);
  const out: RaftMessage[] = [];
  for (let frame = reader.next(); frame !== null; frame = reader.next()) {
    out.push(...readMessagesBody(frame.body, limits));
  }
  return out;
}

function mutate(random: SeededRandom, wire: Buffer): Buffer {
  const copy = Buffer.from(wire);
  switch (random.uint32() % 4) {
    case 0: { // flip 1..3 bits anywhere
      for (let i = randomInt(random, 1, 3); i > 0; i--) {
        const at = random.uint32() % copy.length;
        copy[at] = (copy[at] as number) ^ (1 << (random.uint32() % 8));
      }
      return copy;
    }
    case 1: // truncate
      return copy.subarray(0, random.uint32() % copy.length);
    case 2: { // overwrite a run with random bytes
      const at = random.uint32() % copy.length;
      for (let i = at; i < Math.min(copy.length, at + randomInt(random, 1, 16)); i++) {
        copy[i] = random.uint32() & 0xff;
      }
      return copy;
    }
    default: { // drop a run from the middle
      const at = random.uint32() % copy.length;
      return Buffer.concat([copy.subarray(0, at), copy.subarray(at + randomInt(random, 1, 40))]);
    }
  }
}

test('mutated frames never crash and never decode to a different message', () => {
  const random = new SeededRandom(0xc0ffeen);
  let rejected = 0;
  for (let i = 0; i < 3000; i++) {
    const messages = randomBatch(random);
    const wire = encodeMessageFrames(messages, messages.map(messageBytes), limits);
    const damaged = mutate(random, wire);
    try {
      const decoded = decodeAll(damaged);
      // Only a prefix of whole, intact frames may come out (a truncation waits for the rest).
      assert.deepEqual(normalize(decoded), normalize(messages.slice(0, decoded.length)));
    } catch (error) {
      assert.ok(error instanceof TransportError, `typed error, got ${String(error)}`);
      rejected++;
    }
  }
  assert.ok(rejected > 1000, `most mutations are caught (${rejected})`);
});

test('garbage bodies fail with TransportError only (the shape checks, without the CRC)', () => {
  const random = new SeededRandom(0x5eedn);
  for (let i = 0; i < 5000; i++) {
    let body: Buffer;
    if (i % 2 === 0) {
      body = Buffer.alloc(randomInt(random, 0, 200));
      for (let j = 0; j < body.length; j++) body[j] = random.uint32() & 0xff;
    } else {
      const messages = randomBatch(random);
      const wire = encodeMessageFrames(messages, messages.map(messageBytes), limits);
      body = mutate(random, wire.subarray(9)); // the frame's body: no length, no CRC, no kind
    }
    try {
      readMessagesBody(new WireReader(body, 0, body.length), limits);
    } catch (error) {
      assert.ok(error instanceof TransportError, `typed error, got ${String(error)}`);
    }
  }
});

test('a huge frame length is refused before allocating', () => {
  const reader = new FrameReader(limits.frameBytesMax);
  const header = Buffer.alloc(8);
  header.writeUInt32LE(0xffff_fff0, 0);
  reader.push(header);
  assert.throws(() => reader.next(), (e: unknown) => e instanceof TransportError &&
    e.reason === 'tooLarge');
  const empty = new FrameReader(limits.frameBytesMax);
  empty.push(Buffer.alloc(8)); // length 0
  assert.throws(() => empty.next(), TransportError);
});

test('a huge count is refused before allocating for it', () => {
  const body = Buffer.alloc(4);
  body.writeUInt32LE(0xffff_ffff, 0); // 4 billion messages in 4 bytes
  assert.throws(() => readMessagesBody(new WireReader(body, 0, 4), limits),
    (e: unknown) => e instanceof TransportError && e.reason === 'tooLarge');
  body.writeUInt32LE(1000, 0); // under the limit but more than the bytes can hold
  assert.throws(() => readMessagesBody(new WireReader(body, 0, 4), limits),
    (e: unknown) => e instanceof TransportError && e.reason === 'truncated');
});

test('shape checks catch what Raft would assert on', () => {
  const cases: Buffer[] = [];
  const ok: RaftMessage = { type: 'append', from: 1, to: 2, term: 5, prevIndex: 3, prevTerm: 4,
    commit: 3, entries: [{ index: 4, term: 5, type: 0, data: new Uint8Array([9]) }] };
  const wire = encodeMessageFrames([ok], [messageBytes(ok)], limits).subarray(9);
  // Offsets inside the body: count 4, type 1, from 8, to 8, term 8, prevIndex 8, prevTerm 8,
  // commit 8, entryCount 4, then entry index at 61.
  const setU32 = (at: number, value: number): Buffer => {
    const b = Buffer.from(wire);
    b.writeUInt32LE(value, at);
    return b;
  };
  cases.push(setU32(61, 7)); // entry index not prevIndex + 1
  cases.push(setU32(69, 9)); // entry term newer than the message
  cases.push(setU32(13, 1)); // to === from
  cases.push(setU32(5, 0)); // from 0
  for (const body of cases) {
    assert.throws(() => readMessagesBody(new WireReader(body, 0, body.length), limits),
      (e: unknown) => e instanceof TransportError && e.reason === 'invalidValue');
  }
  assert.equal(readMessagesBody(new WireReader(wire, 0, wire.length), limits).length, 1);
});
