// The first frame of every connection says who is calling, for which cluster and whom: the
// listener refuses a foreign cluster, an unknown member, a wrong addressee or a protocol version
// outside its range (protocol.ts), so a misconfigured peer list can never splice two cells together.
import { assert } from '../base/assert.js';
import type { MemberId } from '../raft/index.js';
import { TransportError, TransportErrorReason } from './errors.js';
import { FrameKind, encodeFrame, expectEnd, type Frame } from './frame.js';

import { controlChannelVersion, protocolVersion, protocolVersionMin, speaksVersion } from './protocol.js';

export { protocolVersion, protocolVersionMin } from './protocol.js';
const magic = 0x4e544142; // "BATN" in little-endian bytes
const clusterIdBytesMax = 255;
const reasonBytesMax = 1024; // with the frame header, well under controlFrameBytesMax

/** What a connection carries: Raft's bulk (appends, proposals), one snapshot, or small control messages. */
export const Channel = { raft: 1, snapshot: 2, control: 3 } as const;
export type Channel = (typeof Channel)[keyof typeof Channel];

export interface Handshake {
  readonly version: number;
  readonly channel: Channel;
  readonly clusterId: string;
  readonly from: MemberId;
  readonly to: MemberId;
}

export interface HandshakeReply {
  readonly accepted: boolean;
  readonly reason: string;
}

export function encodeHandshake(handshake: Handshake): Buffer {
  const clusterIdBytes = Buffer.byteLength(handshake.clusterId);
  assert(clusterIdBytes > 0 && clusterIdBytes <= clusterIdBytesMax, 'clusterId length');
  return encodeFrame(FrameKind.handshake, 4 + 2 + 1 + 2 + clusterIdBytes + 16, (w) => {
    w.u32(magic);
    w.u16(handshake.version);
    w.u8(handshake.channel);
    w.text(handshake.clusterId, clusterIdBytes);
    w.u64(handshake.from);
    w.u64(handshake.to);
  });
}

export function decodeHandshake(frame: Frame): Handshake {
  if (frame.kind !== FrameKind.handshake) {
    throw new TransportError(TransportErrorReason.unexpectedFrame,
      `expected a handshake, got frame kind ${frame.kind}`);
  }
  const r = frame.body;
  if (r.u32('magic') !== magic) {
    throw new TransportError(TransportErrorReason.invalidValue, 'not a Baton peer (bad magic)');
  }
  const version = r.u16('version');
  const channel = r.u8('channel');
  const clusterId = r.text('clusterId');
  const from = r.u64('from');
  const to = r.u64('to');
  expectEnd(r);
  if (channel !== Channel.raft && channel !== Channel.snapshot && channel !== Channel.control) {
    throw new TransportError(TransportErrorReason.invalidValue, `unknown channel ${channel}`);
  }
  return { version, channel, clusterId, from, to };
}

/**
 * How a refusal says "you were removed from the cell" (the reply has only a reason text; both ends
 * are this code, so a fixed prefix is the signal, see isRemovalRefusal).
 */
const removalPrefix = 'removed: ';

export function isRemovalRefusal(reason: string): boolean {
  return reason.startsWith(removalPrefix);
}

/** Why the listener refuses `handshake`, or null to accept it. */
export function checkHandshake(
  handshake: Handshake,
  local: {
    memberId: MemberId;
    clusterId: string;
    isMember: (id: MemberId) => boolean;
    wasRemoved?: (id: MemberId) => boolean;
  },
): string | null {
  if (!speaksVersion(handshake.version)) {
    // Version 3 dialers parse this (fallbackVersion): keep the "protocol version N, expected" head.
    return `protocol version ${handshake.version}, expected ${protocolVersionMin} to ${protocolVersion} ` +
      `(this member speaks ${protocolVersion})`;
  }
  if (handshake.channel === Channel.control && handshake.version < controlChannelVersion) {
    return `a control channel needs protocol version ${controlChannelVersion}, got ${handshake.version}`;
  }
  if (handshake.clusterId !== local.clusterId) {
    return `cluster ${handshake.clusterId}, this member belongs to ${local.clusterId}`;
  }
  if (handshake.to !== local.memberId) {
    return `addressed to member ${handshake.to}, this is member ${local.memberId}`;
  }
  if (local.wasRemoved?.(handshake.from) === true) {
    return `${removalPrefix}member ${handshake.from} was removed from the cell`;
  }
  if (handshake.from === local.memberId || !local.isMember(handshake.from)) {
    return `member ${handshake.from} is not a known peer`;
  }
  return null;
}

/**
 * The version to dial again with after `reason` refused a handshake of version `tried`, or null
 * when the refusal is not about the version or the listener speaks nothing this member does. Reads
 * both this code's refusal ("expected 2 to 3 ...") and version 2's ("protocol version 3, expected 2").
 */
export function fallbackVersion(reason: string, tried: number): number | null {
  const match = /^protocol version \d+, expected (\d+)(?: to (\d+))?/.exec(reason);
  if (match === null) return null;
  const theirMin = Number(match[1]);
  const theirMax = match[2] === undefined ? theirMin : Number(match[2]);
  const version = Math.min(theirMax, protocolVersion);
  if (version >= tried || version < Math.max(theirMin, protocolVersionMin)) return null;
  return version;
}

/** Encodes a reply frame; its reason is cut to a bounded length (it is only for logs). */
export function encodeReply(kind: 2 | 7, reply: HandshakeReply): Buffer {
  let reason = reply.reason;
  while (Buffer.byteLength(reason) > reasonBytesMax) reason = reason.slice(0, reason.length >> 1);
  const reasonBytes = Buffer.byteLength(reason);
  return encodeFrame(kind, 1 + 2 + reasonBytes, (w) => {
    w.bool(reply.accepted);
    w.text(reason, reasonBytes);
  });
}

/** Decodes a handshakeReply or snapshotAck frame (the same body: bool + reason). */
export function decodeReply(frame: Frame, kind: 2 | 7): HandshakeReply {
  if (frame.kind !== kind) {
    throw new TransportError(TransportErrorReason.unexpectedFrame,
      `expected frame kind ${kind}, got ${frame.kind}`);
  }
  const accepted = frame.body.bool('accepted');
  const reason = frame.body.text('reason');
  expectEnd(frame.body);
  return { accepted, reason };
}
