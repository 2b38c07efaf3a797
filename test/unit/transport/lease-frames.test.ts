// Lease keepalive frames: they round-trip, malformed ones are TransportErrors (never a crash or
// a half-decoded call), and over real TCP a follower's keepalive reaches the leader's lease API
// and its answer (or error) comes back to the caller, interleaved with Raft traffic; a caller
// with no usable connection falls back to HTTP rather than waiting.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { crc32 } from 'node:zlib';
import type { KeepaliveAnswer, LeaseApi } from '../../../src/lease/api.js';
import { LeaseNotFoundError } from '../../../src/base/errors.js';
import { PeerLeaseForwarder } from '../../../src/lease/forward/peer-forwarder.js';
import {
  FrameReader, TransportError, encodeLeaseFrame, readLeaseFrameBody, type LeasePeerMessage,
} from '../../../src/transport/index.js';
import { connectAll, heartbeat, startNode, until } from './tcp-helpers.js';

function roundTrip(message: LeasePeerMessage): LeasePeerMessage {
  const reader = new FrameReader(1 << 20);
  reader.push(encodeLeaseFrame(message));
  const frame = reader.next();
  assert.ok(frame !== null);
  return readLeaseFrameBody(frame.body, 1000);
}

test('lease frames round-trip; malformed ones are refused', () => {
  const messages: LeasePeerMessage[] = [
    { op: 'keepalive', callId: 7, ids: [1, 2 ** 40, Number.MAX_SAFE_INTEGER] },
    { op: 'answer', callId: 0xffff_ffff, revision: 123456, leases: [{ id: 1, ttlMs: 10_000 }, { id: 9, ttlMs: null }] },
    { op: 'answer', callId: 1, revision: 0, leases: [] },
    { op: 'error', callId: 3, code: 'overloaded', message: 'too many keepalives — retry' },
  ];
  for (const message of messages) assert.deepEqual(roundTrip(message), message);
  // A long error text is clipped, not refused.
  const long = roundTrip({ op: 'error', callId: 1, code: 'unavailable', message: 'é'.repeat(5000) });
  assert.ok(long.op === 'error' && Buffer.byteLength(long.message) <= 1024 && long.message.startsWith('éé'));

  const decode = (bytes: Buffer, itemsMax = 1000): LeasePeerMessage => {
    const reader = new FrameReader(1 << 20);
    reader.push(bytes);
    const frame = reader.next();
    assert.ok(frame !== null);
    return readLeaseFrameBody(frame.body, itemsMax);
  };
  const frame = encodeLeaseFrame({ op: 'keepalive', callId: 1, ids: [5, 6, 7] });
  assert.throws(() => decode(frame, 2), (e: unknown) => e instanceof TransportError && e.reason === 'tooLarge');
  // Change the op byte (the CRC is recomputed so only the decoder can object).
  const badOp = Buffer.from(frame);
  badOp[9] = 42;
  badOp.writeUInt32LE(crc32(badOp.subarray(8)), 4);
  assert.throws(() => decode(badOp), (e: unknown) => e instanceof TransportError && e.reason === 'invalidValue');
  // A count that claims more ids than the frame holds.
  const short = Buffer.from(frame);
  short.writeUInt32LE(4, 14);
  short.writeUInt32LE(crc32(short.subarray(8)), 4);
  assert.throws(() => decode(short), (e: unknown) => e instanceof TransportError && e.reason === 'truncated');
});

/** The leader's lease API as far as forwarding sees it: renews known ids, refuses on demand. */
function leaderApi(known: Set<number>, failWith: { error: Error | null }): LeaseApi {
  return {
    keepaliveIdsMax: 100,
    async keepalive(ids, forwarded): Promise<KeepaliveAnswer> {
      assert.equal(forwarded, true, 'a forwarded call is marked so it is not forwarded again');
      if (failWith.error !== null) throw failWith.error;
      return { revision: 42, leases: ids.map((id) => (known.has(id) ? { id, ttl: 7.5 } : { id, error: 'lease_not_found' as const })) };
    },
    grant: () => Promise.reject(new Error('not used')),
    grantMany: () => Promise.reject(new Error('not used')),
    revoke: () => Promise.reject(new Error('not used')),
    timeToLive: () => Promise.reject(new Error('not used')),
    list: () => Promise.reject(new Error('not used')),
  };
}

test('a follower keepalive travels as a frame to the leader and back, beside Raft traffic', async () => {
  const members = [1, 2].map((id) => ({ id, clientUrl: 'http://127.0.0.1:9/' })); // HTTP must not be used
  const failWith = { error: null as Error | null };
  const followerApi = leaderApi(new Set(), failWith);
  const leaderSideApi = leaderApi(new Set([10, 11]), failWith);
  // The forwarders send on their node's transport, which hands them its lease frames.
  const sides: { follower?: PeerLeaseForwarder; leader?: PeerLeaseForwarder } = {};
  const n1 = await startNode(1, { onLeaseMessage: (from, m) => sides.follower?.receive(from, m, followerApi) });
  const n2 = await startNode(2, { onLeaseMessage: (from, m) => sides.leader?.receive(from, m, leaderSideApi) });
  const followerSide = new PeerLeaseForwarder(members, n1.transport);
  const leaderSide = new PeerLeaseForwarder(members, n2.transport);
  sides.follower = followerSide;
  sides.leader = leaderSide;
  connectAll([n1, n2]);
  try {
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) => {
        n1.transport.send([heartbeat(1, 2, i)]);
        return followerSide.keepalive(2, [10, 11, 99], 5000);
      }),
    );
    for (const answer of answers) {
      assert.deepEqual(answer, { revision: 42, leases: [{ id: 10, ttl: 7.5 }, { id: 11, ttl: 7.5 }, { id: 99, error: 'lease_not_found' }] });
    }
    await until(() => n2.received.length === 50, 'raft messages beside the lease frames');
    assert.deepEqual(followerSide.counts, { frames: 50, http: 0, served: 0 });
    assert.equal(leaderSide.counts.served, 50);
    // The leader's error comes back with its code.
    failWith.error = new LeaseNotFoundError('gone');
    await assert.rejects(followerSide.keepalive(2, [10], 5000), (e: any) => e.code === 'lease_not_found');
    // Too many ids for the leader's limit: refused there, not renewed.
    await assert.rejects(followerSide.keepalive(2, Array.from({ length: 101 }, (_, i) => i + 1), 5000), (e: any) => e.code === 'invalid_argument');
    // A leader that never answers: the call ends at its timeout.
    await n2.transport.close();
    const started = Date.now();
    await assert.rejects(followerSide.keepalive(2, [10], 300), (e: any) => e.code === 'unavailable');
    assert.ok(Date.now() - started < 2000);
    // An unknown member has no peer connection: the HTTP path is taken (and fails fast here).
    await assert.rejects(followerSide.keepalive(3, [10], 300), (e: any) => e.code === 'unavailable');
    assert.equal(followerSide.counts.http, 1);
  } finally {
    followerSide.stop();
    await n1.transport.close();
    await n2.transport.close();
  }
});
