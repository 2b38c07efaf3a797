// Hand-written binary codec for every RaftMessage variant: measured first so a whole flush is one
// allocation, decoded with every length checked so garbage is a TransportError, never a crash.
//
// WIRE FORMAT (protocol versions 2 and 3, protocol.ts: a connection speaks the version its
// handshake named, and encodes and decodes by it; version 2 has no contact list in heartbeats,
// version 1 had no snapshot checksum and no snapshotResume and is refused at the handshake, as
// is anything newer than 3). All integers little-endian. u64
// holds a non-negative safe integer (high word <= 2^21-1, anything else is rejected). bool is
// one byte, 0 or 1 only. text is u16 byteLength + UTF-8.
//
// Frame:     u32 payloadBytes (1..frameBytesMax) | u32 crc32(payload) | payload
// Payload:   u8 kind | body
//   kind 1 handshake       u32 magic 0x4e544142 ("BATN") | u16 protocolVersion | u8 channel
//                          (1 raft, 2 snapshot) | text clusterId | u64 fromMember | u64 toMember
//   kind 2 handshakeReply  bool accepted | text reason
//   kind 3 messages        u32 messageCount | message * messageCount
//   kind 4 snapshotHeader  u64 from | u64 to | u64 term | snapshotMeta | u64 totalBytes |
//                          u32 checksum (identifies the bytes; a Baton snapshot file sends the
//                          CRC of its end record, which chains over every byte of the file)
//   kind 5 snapshotChunk   raw bytes (the rest of the payload; the sender keeps it to
//                          snapshotChunkBytes, the receiver enforces frameBytesMax)
//   kind 6 snapshotEnd     (empty)
//   kind 7 snapshotAck     bool ok | text reason
//   kind 8 snapshotResume  u64 offset (0..totalBytes)
//
// A connection starts with one handshake frame from the dialer, answered by one handshakeReply.
// A raft channel then carries only messages frames, dialer to listener. A snapshot channel
// carries one snapshotHeader, answered by one snapshotResume: the bytes the receiver already
// holds of exactly this snapshot (same index, term, totalBytes and checksum; 0 for anything
// else), kept from a transfer that was cut. The sender then sends chunk frames carrying bytes
// offset..totalBytes, snapshotEnd, and gets one snapshotAck back; then both sides close. The
// receiver may answer the header or any chunk with a failed snapshotAck instead (it refuses);
// a chunk before the snapshotResume is a protocol error. Snapshots never share a connection
// with heartbeats.
//
// message:   u8 type | u64 from | u64 to | u64 term | body by type:
//   1 append             u64 prevIndex | u64 prevTerm | u64 commit | u32 entryCount | entry*
//                        entry = u64 index | u64 term | u8 entryType (0|1) | u32 dataBytes | data
//   2 appendResponse     u64 index | bool reject | u64 rejectHint | u64 hintTerm
//   3 heartbeat          u64 commit | u64 readRound | memberList contact (version 3 only:
//                        ascending, holds from; count 0 = no view, decoded as null; a
//                        version 2 heartbeat decodes with contact null)
//   4 heartbeatResponse  u64 readRound
//   5 vote, 6 preVote    u64 lastIndex | u64 lastTerm | bool transfer
//   7 voteResponse, 8 preVoteResponse  bool reject
//   9 snapshot           snapshotMeta | u32 dataBytes | data   (small snapshots only; the
//                        transport sends snapshot messages on the snapshot stream instead)
//   10 timeoutNow        (empty)
//   11 readIndex         u32 count | u64 context * count
//   12 readIndexResponse u32 count | u64 context * count | u64 (index + 1)   (-1 encodes as 0)
//   13 propose           u32 count | command * count;  command = u32 dataBytes | data
//   14 proposeRefused    u8 reason (0 notLeader, 1 transferring, 2 tooLarge, 3 overloaded) |
//                        u32 count | command * count
//   15 ledgerQuery       (empty; version 4 on)
//   16 ledgerReport      u64 term | u64 ackTerm | u64 ackIndex | u64 voteTerm | u64 votedFor
//                        (version 4 on)
// snapshotMeta = u64 index | u64 term | memberList voters | memberList votersOutgoing |
//                memberList learners;   memberList = u32 count | u64 memberId * count
//
// Decoding (codec-read.ts) also checks the shape Raft relies on (ids non-zero and distinct, an
// append's entries consecutive after prevIndex with non-decreasing terms no newer than the
// message), so a bad peer trips a TransportError there rather than an assertion in the core.
import { assert, unreachable } from '../base/assert.js';
import type { ForwardRefusal, RaftMessage, SnapshotMeta } from '../raft/index.js';
import { carriesMessage, contactListVersion, protocolVersion } from './protocol.js';
import type { WireWriter } from './wire-writer.js';

export const messageTag = {
  append: 1,
  appendResponse: 2,
  heartbeat: 3,
  heartbeatResponse: 4,
  vote: 5,
  preVote: 6,
  voteResponse: 7,
  preVoteResponse: 8,
  snapshot: 9,
  timeoutNow: 10,
  readIndex: 11,
  readIndexResponse: 12,
  propose: 13,
  proposeRefused: 14,
  ledgerQuery: 15,
  ledgerReport: 16,
} as const satisfies Record<RaftMessage['type'], number>;

/** Wire codes of ForwardRefusal, by position. */
export const forwardRefusalCodes = ['notLeader', 'transferring', 'tooLarge', 'overloaded'] as const satisfies readonly ForwardRefusal[];

const headerBytes = 1 + 8 * 3;
export const entryHeaderBytes = 8 + 8 + 1 + 4;
/** The smallest encoded message: a timeoutNow. Bounds a frame's message count by its size. */
export const messageBytesMin = headerBytes;

function memberListBytes(ids: readonly number[]): number {
  return 4 + 8 * ids.length;
}

export function snapshotMetaBytes(meta: SnapshotMeta): number {
  const c = meta.confState;
  return 16 + memberListBytes(c.voters) + memberListBytes(c.votersOutgoing) +
    memberListBytes(c.learners);
}

/** The exact encoded size of `message` in this member's own protocol version (one argument: `.map(messageBytes)`). */
export function messageBytes(message: RaftMessage): number {
  return messageBytesIn(message, protocolVersion);
}

/** The exact encoded size of `message` in protocol `version`. */
export function messageBytesIn(message: RaftMessage, version: number): number {
  switch (message.type) {
    case 'append': {
      let bytes = headerBytes + 8 * 3 + 4;
      for (const entry of message.entries) bytes += entryHeaderBytes + entry.data.length;
      return bytes;
    }
    case 'appendResponse':
      return headerBytes + 8 + 1 + 8 + 8;
    case 'heartbeat':
      if (version < contactListVersion) return headerBytes + 16;
      return headerBytes + 16 + 4 + 8 * (message.contact?.length ?? 0);
    case 'heartbeatResponse':
      return headerBytes + 8;
    case 'vote':
    case 'preVote':
      return headerBytes + 16 + 1;
    case 'voteResponse':
    case 'preVoteResponse':
      return headerBytes + 1;
    case 'snapshot':
      return headerBytes + snapshotMetaBytes(message.snapshot.meta) + 4 +
        message.snapshot.data.length;
    case 'timeoutNow':
    case 'ledgerQuery':
      return headerBytes;
    case 'ledgerReport':
      return headerBytes + 8 * 5;
    case 'readIndex':
      return headerBytes + 4 + 8 * message.contexts.length;
    case 'readIndexResponse':
      return headerBytes + 4 + 8 * message.contexts.length + 8;
    case 'propose':
    case 'proposeRefused': {
      let bytes = headerBytes + 4 + (message.type === 'proposeRefused' ? 1 : 0);
      for (const command of message.commands) bytes += 4 + command.length;
      return bytes;
    }
    default:
      return unreachable(message, 'message type');
  }
}

function writeCommands(w: WireWriter, commands: readonly Uint8Array[]): void {
  w.u32(commands.length);
  for (const command of commands) {
    w.u32(command.length);
    w.bytes(command);
  }
}

function writeMemberList(w: WireWriter, ids: readonly number[]): void {
  w.u32(ids.length);
  for (const id of ids) w.u64(id);
}

export function writeSnapshotMeta(w: WireWriter, meta: SnapshotMeta): void {
  w.u64(meta.index);
  w.u64(meta.term);
  writeMemberList(w, meta.confState.voters);
  writeMemberList(w, meta.confState.votersOutgoing);
  writeMemberList(w, meta.confState.learners);
}

/** Writes `message` in protocol `version` (2 or 3): a version 2 heartbeat leaves its contact out. */
export function writeMessage(w: WireWriter, message: RaftMessage, version: number = protocolVersion): void {
  // Pairs with readMessage's shape checks: a sender bug stops the sender, not the receiver.
  assert(message.from > 0 && message.to > 0 && message.from !== message.to, 'message ids');
  assert(carriesMessage(message.type, version), `a ${message.type} message on a protocol ${version} connection`);
  w.u8(messageTag[message.type]);
  w.u64(message.from);
  w.u64(message.to);
  w.u64(message.term);
  switch (message.type) {
    case 'append':
      w.u64(message.prevIndex);
      w.u64(message.prevTerm);
      w.u64(message.commit);
      w.u32(message.entries.length);
      assert(message.prevTerm <= message.term, 'append prevTerm <= term');
      let termFloor = message.prevTerm;
      for (const [i, entry] of message.entries.entries()) {
        assert(entry.index === message.prevIndex + 1 + i, 'append entries are consecutive');
        assert(entry.term >= termFloor && entry.term <= message.term, 'append entry terms');
        termFloor = entry.term;
        w.u64(entry.index);
        w.u64(entry.term);
        w.u8(entry.type);
        w.u32(entry.data.length);
        w.bytes(entry.data);
      }
      return;
    case 'appendResponse':
      w.u64(message.index);
      w.bool(message.reject);
      w.u64(message.rejectHint);
      w.u64(message.hintTerm);
      return;
    case 'heartbeat':
      w.u64(message.commit);
      w.u64(message.readRound);
      if (version < contactListVersion) return;
      if (message.contact === null) {
        w.u32(0); // no view to pass on (a leader always has one; this is for a relayed v2 heartbeat)
        return;
      }
      // Paired with the decoder's check: ascending, non-zero, the sending leader in it.
      assert(message.contact.includes(message.from), 'a leader\'s contact list holds the leader');
      w.u32(message.contact.length);
      for (let i = 0; i < message.contact.length; i++) {
        const id = message.contact[i] as number;
        assert(id > 0 && (i === 0 || id > (message.contact[i - 1] as number)), 'a contact list ascends');
        w.u64(id);
      }
      return;
    case 'heartbeatResponse':
      w.u64(message.readRound);
      return;
    case 'vote':
    case 'preVote':
      w.u64(message.lastIndex);
      w.u64(message.lastTerm);
      w.bool(message.transfer);
      return;
    case 'voteResponse':
    case 'preVoteResponse':
      w.bool(message.reject);
      return;
    case 'snapshot':
      writeSnapshotMeta(w, message.snapshot.meta);
      w.u32(message.snapshot.data.length);
      w.bytes(message.snapshot.data);
      return;
    case 'timeoutNow':
    case 'ledgerQuery':
      return;
    case 'ledgerReport': {
      const r = message.record;
      w.u64(r.term);
      w.u64(r.ackTerm);
      w.u64(r.ackIndex);
      w.u64(r.voteTerm);
      w.u64(r.votedFor);
      return;
    }
    case 'readIndex':
      writeMemberList(w, message.contexts);
      return;
    case 'readIndexResponse':
      writeMemberList(w, message.contexts);
      w.u64(message.index + 1);
      return;
    case 'proposeRefused':
      w.u8(forwardRefusalCodes.indexOf(message.reason));
      writeCommands(w, message.commands);
      return;
    case 'propose':
      writeCommands(w, message.commands);
      return;
    default:
      unreachable(message, 'message type');
  }
}
