// The peer handshake: members of another protocol version, another cluster, a member the
// listener does not know (never added, or removed) and a misaddressed connection are refused with
// a reason that names the mismatch, so a misconfigured cell refuses to form (versions: protocol-versions.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Channel, checkHandshake, decodeHandshake, encodeHandshake, isRemovalRefusal, protocolVersion } from '../../../src/transport/handshake.js';
import { FrameReader, controlFrameBytesMax } from '../../../src/transport/frame.js';

const local = { memberId: 2, clusterId: 'c1', isMember: (id: number) => id === 1 || id === 3 };
const good = { version: protocolVersion, channel: Channel.raft, clusterId: 'c1', from: 1, to: 2 };

test('a handshake survives encoding and is accepted when everything matches', () => {
  const reader = new FrameReader(controlFrameBytesMax);
  reader.push(encodeHandshake(good));
  const frame = reader.next();
  assert.ok(frame !== null);
  assert.deepEqual(decodeHandshake(frame), good);
  assert.equal(checkHandshake(good, local), null);
});

test('mismatches are refused with a reason naming them', () => {
  assert.match(checkHandshake({ ...good, version: protocolVersion + 1 }, local) ?? '', /protocol version/);
  assert.match(checkHandshake({ ...good, clusterId: 'c2' }, local) ?? '', /cluster c2/);
  assert.match(checkHandshake({ ...good, to: 3 }, local) ?? '', /addressed to member 3/);
  // A member never added (or one this process did not see removed) is unknown.
  assert.match(checkHandshake({ ...good, from: 4 }, local) ?? '', /member 4 is not a known peer/);
  assert.match(checkHandshake({ ...good, from: 2 }, local) ?? '', /not a known peer/);
  assert.equal(isRemovalRefusal(checkHandshake({ ...good, from: 4 }, local) ?? ''), false, 'unknown is not removed');
});

test('a member this process saw removed is told so, and only it', () => {
  const withRemoved = { ...local, wasRemoved: (id: number) => id === 4 };
  const refusal = checkHandshake({ ...good, from: 4 }, withRemoved) ?? '';
  assert.match(refusal, /member 4 was removed from the cell/);
  assert.ok(isRemovalRefusal(refusal));
  assert.equal(isRemovalRefusal(checkHandshake({ ...good, from: 5 }, withRemoved) ?? ''), false);
  assert.equal(checkHandshake(good, withRemoved), null);
});
