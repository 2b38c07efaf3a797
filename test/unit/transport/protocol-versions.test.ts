// Mixed protocol versions, upgrade steps: a member speaks versions 2 to 6 (4's wire is 3's: it
// says the build applies store format 3; 5's wire is 4's: it applies format 4; 6's wire is 5's:
// its listener also takes a control channel, control-channel.test.ts), a connection speaks
// the version its dialer named when the listener speaks it too (min of the two), and anything
// else is refused with a reason naming both versions and the range. A version 2 heartbeat is
// byte for byte what version 2 members write (no contact list) and decodes with contact null;
// a member of version 6 dials a version 2 listener (which refuses 4, naming 2) again in 2 and a
// version 3 listener (which refuses 4, naming 2 to 3) again in 3, a version 4 listener again in 4,
// and says which version each peer accepted (what the leader's store upgrade reads).
// Version 4 also adds the peer ledger's two messages, which never travel on an older connection.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, connect, type Socket } from 'node:net';
import type { RaftMessage } from '../../../src/raft/index.js';
import {
  FrameKind, FrameReader, WireReader, WireWriter, defaultTransportLimits,
  encodeMessageFrames, messageBytesIn, readMessage, readMessagesBody, writeMessage,
} from '../../../src/transport/index.js';
import {
  Channel, checkHandshake, decodeHandshake, encodeHandshake, encodeReply, fallbackVersion,
  protocolVersion, protocolVersionMin, type Handshake,
} from '../../../src/transport/handshake.js';
import { controlFrameBytesMax } from '../../../src/transport/frame.js';
import { SeededRandom } from '../../../src/base/random.js';
import { messageTypes, normalize, randomMessage } from './random-messages.js';
import { startNode, until } from './tcp-helpers.js';

const limits = defaultTransportLimits;

function encode(message: RaftMessage, version: number): Buffer {
  const buffer = Buffer.alloc(messageBytesIn(message, version));
  const w = new WireWriter(buffer, 0);
  writeMessage(w, message, version);
  assert.equal(w.offset, buffer.length, 'messageBytes is exact');
  return buffer;
}

function decode(bytes: Buffer, version: number): RaftMessage {
  const r = new WireReader(bytes, 0, bytes.length);
  const message = readMessage(r, limits, version);
  assert.equal(r.remaining(), 0);
  return message;
}

test('this build speaks versions 2 to 6', () => {
  assert.equal(protocolVersion, 6);
  assert.equal(protocolVersionMin, 2);
});

test('a version 2 heartbeat is the version 2 format exactly, and decodes with contact null', () => {
  const hb: RaftMessage = { type: 'heartbeat', from: 1, to: 2, term: 7, commit: 42, readRound: 5, contact: [1, 2, 3] };
  // Version 2 (f266807's codec): u8 type 3 | u64 from | u64 to | u64 term | u64 commit | u64 readRound.
  const expected = Buffer.alloc(1 + 8 * 5);
  expected.writeUInt8(3, 0);
  [1, 2, 7, 42, 5].forEach((value, i) => expected.writeBigUInt64LE(BigInt(value), 1 + 8 * i));
  assert.deepEqual(encode(hb, 2), expected, 'the contact list is left out');
  assert.deepEqual(decode(expected, 2), { ...hb, contact: null });
  // Version 3 adds the list; the same bytes are short in version 3 (no count), so versions never mix.
  const v3 = encode(hb, 3);
  assert.deepEqual(v3.subarray(0, expected.length), expected);
  assert.equal(v3.readUInt32LE(expected.length), 3);
  assert.deepEqual(decode(v3, 3), hb);
  assert.throws(() => decode(expected, 3), /contact|bytes|short|end/i);
  // No view (contact null) is an empty list in version 3, and nothing in version 2.
  const none: RaftMessage = { ...hb, contact: null };
  assert.deepEqual(decode(encode(none, 3), 3), none);
  assert.deepEqual(encode(none, 2), expected);
});

const ledgerTypes = new Set(['ledgerQuery', 'ledgerReport']);

test('every other message type is the same in versions 2, 3, 4, 5 and 6', () => {
  const random = new SeededRandom(0x2233n);
  for (const type of messageTypes) {
    if (ledgerTypes.has(type)) continue;
    for (let i = 0; i < 50; i++) {
      const message = randomMessage(random, type, { from: 1 + (i % 5), to: 50 + i });
      assert.deepEqual(encode(message, 4), encode(message, 3), `${type}: version 4 changes nothing`);
      assert.deepEqual(encode(message, 5), encode(message, 4), `${type}: version 5 changes nothing`);
      assert.deepEqual(encode(message, 6), encode(message, 5), `${type}: version 6 changes nothing`);
      const v2 = encode(message, 2);
      assert.deepEqual(normalize(decode(v2, 2)), normalize(type === 'heartbeat' ? { ...message, contact: null } as RaftMessage : message));
      assert.deepEqual(normalize(decode(encode(message, 3), 3)), normalize(message), `${type} #${i}`);
      if (type !== 'heartbeat') assert.deepEqual(encode(message, 3), v2, `${type} has one format`);
    }
  }
});

test('the ledger messages exist from version 4 on: round-trip there, refused in older versions both ways', () => {
  const random = new SeededRandom(0x4444n);
  for (const type of ledgerTypes) {
    for (let i = 0; i < 30; i++) {
      const message = randomMessage(random, type as RaftMessage['type'], { from: 1 + (i % 5), to: 50 + i });
      const bytes = encode(message, 4);
      assert.deepEqual(normalize(decode(bytes, 4)), normalize(message), `${type} #${i}`);
      assert.deepEqual(encode(message, 5), bytes, `${type}: the same in version 5`);
      for (const old of [2, 3]) {
        assert.throws(() => decode(bytes, old), new RegExp(`${type} on a protocol ${old} connection`));
        assert.throws(() => encode(message, old), /on a protocol \d connection/);
      }
    }
  }
  // A record whose ack or vote term is past its own term is no record a member writes.
  const bad = encode({ type: 'ledgerReport', from: 1, to: 2, term: 3,
    record: { term: 2, ackTerm: 5, ackIndex: 9, voteTerm: 0, votedFor: 0 } }, 4);
  assert.throws(() => decode(bad, 4), /past the record's term/);
});

test('frames of version 2 messages round-trip through readMessagesBody', () => {
  const messages: RaftMessage[] = [
    { type: 'heartbeat', from: 1, to: 2, term: 1, commit: 0, readRound: 0, contact: [1] },
    { type: 'heartbeatResponse', from: 1, to: 2, term: 1, readRound: 0 },
  ];
  const wire = encodeMessageFrames(messages, messages.map((m) => messageBytesIn(m, 2)), limits, 2);
  const reader = new FrameReader(limits.frameBytesMax);
  reader.push(wire);
  const frame = reader.next();
  assert.ok(frame !== null && frame.kind === FrameKind.messages);
  assert.deepEqual(readMessagesBody(frame.body, limits, 2), [{ ...messages[0], contact: null }, messages[1]]);
});

const local = { memberId: 2, clusterId: 'c1', isMember: (id: number) => id === 1 || id === 3 };
const good: Handshake = { version: protocolVersion, channel: Channel.raft, clusterId: 'c1', from: 1, to: 2 };

test('the handshake accepts versions 2 to 6 and refuses others naming both versions and the range', () => {
  assert.equal(checkHandshake({ ...good, version: 6 }, local), null, '6 with 6: speaks 6');
  assert.equal(checkHandshake({ ...good, version: 5 }, local), null, '5 with 6: speaks 5');
  assert.equal(checkHandshake({ ...good, version: 4 }, local), null, '4 with 6: speaks 4');
  assert.equal(checkHandshake({ ...good, version: 3 }, local), null, '3 with 6: speaks 3');
  assert.equal(checkHandshake({ ...good, version: 2 }, local), null, '2 with 6: speaks 2');
  for (const version of [0, 1, 7]) {
    assert.equal(checkHandshake({ ...good, version }, local),
      `protocol version ${version}, expected 2 to 6 (this member speaks 6)`);
  }
  // A control channel exists from version 6 on.
  assert.equal(checkHandshake({ ...good, channel: Channel.control, version: 6 }, local), null);
  assert.equal(checkHandshake({ ...good, channel: Channel.control, version: 5 }, local),
    'a control channel needs protocol version 6, got 5');
});

test('a refused dialer finds the version to try again in', () => {
  // Version 2 members' refusal (f266807: `protocol version ${v}, expected ${protocolVersion}`).
  assert.equal(fallbackVersion('protocol version 3, expected 2', 3), 2);
  assert.equal(fallbackVersion('protocol version 3, expected 1', 3), null, 'version 1 is not spoken');
  assert.equal(fallbackVersion('protocol version 2, expected 2', 2), null, 'never the same again');
  // Version 3 builds' refusal of this build (they speak 2 to 3): dial again in 3.
  assert.equal(fallbackVersion('protocol version 4, expected 2 to 3 (this member speaks 3)', 4), 3);
  // Version 4 builds' refusal of this build (they speak 2 to 4): dial again in 4.
  assert.equal(fallbackVersion('protocol version 5, expected 2 to 4 (this member speaks 4)', 5), 4);
  // Version 5 builds' refusal of this build (they speak 2 to 5): dial again in 5.
  assert.equal(fallbackVersion('protocol version 6, expected 2 to 5 (this member speaks 5)', 6), 5);
  // This build's refusal, read by a later build (a version 7 member against this one speaks 6).
  assert.equal(fallbackVersion(checkHandshake({ ...good, version: 7 }, local) ?? '', 7), 6);
  assert.equal(fallbackVersion(checkHandshake({ ...good, version: 1 }, local) ?? '', 1), null);
  assert.equal(fallbackVersion('cluster c2, this member belongs to c1', 3), null);
});

/**
 * A listener that behaves as a version 2 member (f266807): it refuses any other version with
 * its reason and reads messages in the version 2 format. `speaks` [2, 3] behaves as a version 3
 * member (769102f's refusal, messages in version 3).
 */
async function startV2Listener(memberId: number, speaks: readonly [number, number] = [2, 2]): Promise<{
  port: number; handshakes: number[]; received: RaftMessage[]; close: () => Promise<void>;
}> {
  const handshakes: number[] = [];
  const received: RaftMessage[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    const reader = new FrameReader(limits.frameBytesMax);
    let shaken = false;
    let refused = false;
    socket.on('data', (chunk) => {
      // After a refusal, frames the dialer sent before it read the answer are not read.
      if (refused) return;
      reader.push(chunk);
      for (let frame = reader.next(); frame !== null; frame = reader.next()) {
        if (!shaken) {
          const hs = decodeHandshake(frame);
          handshakes.push(hs.version);
          if (hs.version < speaks[0] || hs.version > speaks[1]) {
            refused = true;
            const range = speaks[0] === speaks[1] ? `${speaks[0]}` : `${speaks[0]} to ${speaks[1]} (this member speaks ${speaks[1]})`;
            socket.end(encodeReply(FrameKind.handshakeReply, { accepted: false, reason: `protocol version ${hs.version}, expected ${range}` }));
            return;
          }
          assert.equal(hs.to, memberId);
          shaken = true;
          socket.write(encodeReply(FrameKind.handshakeReply, { accepted: true, reason: '' }));
        } else {
          received.push(...readMessagesBody(frame.body, limits, speaks[1]));
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  assert.ok(address !== null && typeof address === 'object');
  return {
    port: address.port, handshakes, received,
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

test('a version 6 member dials a version 2 listener again in version 2; heartbeats arrive, ledger queries stay home', async () => {
  const old = await startV2Listener(2);
  const n1 = await startNode(1);
  n1.transport.addPeer(2, { host: '127.0.0.1', port: old.port });
  try {
    const hb: RaftMessage = { type: 'heartbeat', from: 1, to: 2, term: 1, commit: 0, readRound: 0, contact: [1, 2] };
    for (let i = 0; i < 50 && old.received.length === 0; i++) {
      // A ledger query the old member could not read is left out, not sent to break the stream.
      n1.transport.send([{ type: 'ledgerQuery', from: 1, to: 2, term: 1 }, { ...hb, commit: i }]);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await until(() => old.received.length > 0, 'a heartbeat in version 2');
    assert.deepEqual(old.handshakes.slice(0, 2), [6, 2], 'tried 6, then 2');
    assert.ok(old.received.every((m) => m.type === 'heartbeat'), 'only heartbeats arrived');
    await until(() => n1.transport.stats().peers.get(2)?.acceptedVersion === 2, 'accepted in 2');
    const got = old.received[0] as RaftMessage;
    assert.equal(got.type, 'heartbeat');
    assert.equal(got.type === 'heartbeat' ? got.contact : undefined, null);
    assert.equal(n1.transport.stats().peers.get(2)?.connectFailures ?? 0, 0, 'a fallback is no failure');
  } finally {
    await n1.transport.close();
    await old.close();
  }
});

test('a version 6 member dials a version 3 listener again in 3 and says so; a version 6 listener accepts 6', async () => {
  const old = await startV2Listener(2, [2, 3]);
  const n1 = await startNode(1);
  const n3 = await startNode(3);
  n1.transport.addPeer(2, { host: '127.0.0.1', port: old.port });
  n1.transport.addPeer(3, n3.transport.address());
  n3.transport.addPeer(1, n1.transport.address());
  try {
    assert.equal(n1.transport.stats().peers.get(2)?.acceptedVersion, null, 'nothing accepted before a connection');
    const hb: RaftMessage = { type: 'heartbeat', from: 1, to: 2, term: 1, commit: 0, readRound: 0, contact: [1, 2] };
    for (let i = 0; i < 50 && (old.received.length === 0 || n3.received.length === 0); i++) {
      n1.transport.send([{ ...hb, commit: i }, { ...hb, to: 3, commit: i }]);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await until(() => old.received.length > 0 && n3.received.length > 0, 'heartbeats to both');
    assert.deepEqual(old.handshakes.slice(0, 2), [6, 3], 'tried 6, then 3');
    const got = old.received[0] as RaftMessage;
    assert.deepEqual(got.type === 'heartbeat' ? got.contact : undefined, [1, 2], 'version 3 carries the contact list');
    await until(() => n1.transport.stats().peers.get(2)?.acceptedVersion === 3, 'the old member accepted 3');
    await until(() => n1.transport.stats().peers.get(3)?.acceptedVersion === 6, 'the new member accepted 6');
    // The old member goes away: what it accepted is forgotten with the connection.
    await old.close();
    await until(() => n1.transport.stats().peers.get(2)?.acceptedVersion === null, 'forgotten once the connection closed');
  } finally {
    await n1.transport.close();
    await n3.transport.close();
    await old.close();
  }
});

test('a version 6 member dials a version 4 listener (a format-3 build) again in 4 and says so', async () => {
  const old = await startV2Listener(2, [2, 4]);
  const n1 = await startNode(1);
  n1.transport.addPeer(2, { host: '127.0.0.1', port: old.port });
  try {
    const hb: RaftMessage = { type: 'heartbeat', from: 1, to: 2, term: 1, commit: 0, readRound: 0, contact: [1, 2] };
    for (let i = 0; i < 50 && old.received.length === 0; i++) {
      n1.transport.send([{ ...hb, commit: i }]);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await until(() => old.received.length > 0, 'a heartbeat in version 4');
    assert.deepEqual(old.handshakes.slice(0, 2), [6, 4], 'tried 6, then 4');
    // What the leader's store upgrade reads: this member applies format 3, not 4.
    await until(() => n1.transport.stats().peers.get(2)?.acceptedVersion === 4, 'the old member accepted 4');
  } finally {
    await n1.transport.close();
    await old.close();
  }
});

test('a version 6 member dials a version 5 listener again in 5 and sends it everything on the raft channel', async () => {
  const old = await startV2Listener(2, [2, 5]);
  const n1 = await startNode(1);
  n1.transport.addPeer(2, { host: '127.0.0.1', port: old.port });
  try {
    const hb: RaftMessage = { type: 'heartbeat', from: 1, to: 2, term: 1, commit: 0, readRound: 0, contact: [1, 2] };
    // (What was sent on the refused first connection is lost, as on any dropped connection.)
    for (let i = 0; i < 200 && old.received.length < 30; i++) {
      n1.transport.send([{ ...hb, commit: i }]);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await until(() => old.received.length >= 30, 'heartbeats, on the raft connection');
    // A control channel would have been a third handshake (in 6, refused by a 2-to-5 listener).
    assert.deepEqual(old.handshakes, [6, 5], 'tried 6, then 5; no control channel dialled');
    assert.equal(n1.transport.stats().peers.get(2)?.acceptedVersion, 5);
    assert.equal(n1.transport.stats().peers.get(2)?.controlConnected, false);
  } finally {
    await n1.transport.close();
    await old.close();
  }
});

test('a version 6 member accepts a version 2 dialer, reads its heartbeats, and refuses version 1', async () => {
  const n2 = await startNode(2);
  n2.transport.addPeer(1, { host: '127.0.0.1', port: 1 });
  const { port } = n2.transport.address();
  try {
    const dial = async (version: number, messages: RaftMessage[]): Promise<{ accepted: boolean; reason: string }> => {
      const socket = connect({ host: '127.0.0.1', port });
      const reader = new FrameReader(controlFrameBytesMax);
      return new Promise((resolve, reject) => {
        socket.on('error', reject);
        socket.on('connect', () => {
          socket.write(encodeHandshake({ version, channel: Channel.raft, clusterId: 'cluster-a', from: 1, to: 2 }));
          if (messages.length > 0) socket.write(encodeMessageFrames(messages, messages.map((m) => messageBytesIn(m, 2)), limits, 2));
        });
        socket.on('data', (chunk) => {
          reader.push(chunk);
          const frame = reader.next();
          if (frame === null) return;
          const accepted = frame.body.bool('accepted');
          resolve({ accepted, reason: frame.body.text('reason') });
          socket.end();
        });
      });
    };
    const hb: RaftMessage = { type: 'heartbeat', from: 1, to: 2, term: 1, commit: 3, readRound: 0, contact: [1] };
    assert.deepEqual(await dial(2, [hb]), { accepted: true, reason: '' });
    await until(() => n2.received.length === 1, 'the version 2 heartbeat');
    assert.deepEqual(n2.received[0], { ...hb, contact: null });
    const before = n2.transport.stats().rejectedConnections;
    const refused = await dial(1, []);
    assert.deepEqual(refused, { accepted: false, reason: 'protocol version 1, expected 2 to 6 (this member speaks 6)' });
    assert.equal(n2.transport.stats().rejectedConnections, before + 1, 'counted');
    assert.ok(n2.warnings.includes('peer connection refused'), 'logged');
  } finally {
    await n2.transport.close();
  }
});
