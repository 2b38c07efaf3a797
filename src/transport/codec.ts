// Hand-written binary codec for every RaftMessage variant: measured first so a whole flush is one
// allocation, decoded with every length checked so garbage is a TransportError, never a crash.
//
// WIRE FORMAT (protocol version 1). All integers little-endian. u64 holds a non-negative safe
// integer (high word <= 2^21-1, anything else is rejected). bool is one byte, 0 or 1 only.
// text is u16 byteLength + UTF-8.
//
// Frame:     u32 payloadBytes (1..frameBytesMax) | u32 crc32(payload) | payload
// Payload:   u8 kind | body
//   kind 1 handshake       u32 magic 0x4e544142 ("BATN") | u16 protocolVersion | u8 channel
//                          (1 raft, 2 snapshot) | text clusterId | u64 fromMember | u64 toMember
//   kind 2 handshakeReply  bool accepted | text reason
//   kind 3 messages        u32 messageCount | message * messageCount
//   kind 4 snapshotHeader  u64 from | u64 to | u64 term | snapshotMeta | u64 totalBytes
//   kind 5 snapshotChunk   raw bytes (the rest of the payload, 1..snapshotChunkBytes)
//   kind 6 snapshotEnd     (empty)
//   kind 7 snapshotAck     bool ok | text reason
//
// A connection starts with one handshake frame from the dialer, answered by one handshakeReply.
// A raft channel then carries only messages frames, dialer to listener. A snapshot channel
// carries one snapshotHeader, chunk frames summing to totalBytes, snapshotEnd, and then one
// snapshotAck back; then both sides close. Snapshots never share a connection with heartbeats.
//
// message:   u8 type | u64 from | u64 to | u64 term | body by type:
//   1 append             u64 prevIndex | u64 prevTerm | u64 commit | u32 entryCount | entry*
//                        entry = u64 index | u64 term | u8 entryType (0|1) | u32 dataBytes | data
//   2 appendResponse     u64 index | bool reject | u64 rejectHint | u64 hintTerm
//   3 heartbeat          u64 commit | u64 readRound
//   4 heartbeatResponse  u64 readRound
//   5 vote, 6 preVote    u64 lastIndex | u64 lastTerm | bool transfer
//   7 voteResponse, 8 preVoteResponse  bool reject
//   9 snapshot           snapshotMeta | u32 dataBytes | data   (small snapshots only; the
//                        transport sends snapshot messages on the snapshot stream instead)
//   10 timeoutNow        (empty)
//   11 readIndex         u32 count | u64 context * count
//   12 readIndexResponse u32 count | u64 context * count | u64 (index + 1)   (-1 encodes as 0)
//   13 propose           u32 count | command * count;  command = u32 dataBytes | data
// snapshotMeta = u64 index | u64 term | memberList voters | memberList votersOutgoing |
//                memberList learners;   memberList = u32 count | u64 memberId * count
//
// Decoding also checks the shape Raft relies on (ids non-zero and distinct, an append's entries
// consecutive after prevIndex with non-decreasing terms no newer than the message), so a bad
// peer trips a TransportError here rather than an assertion inside the Raft core.
import { assert, unreachable } from '../base/assert.js';
import type { ConfState, Entry, EntryType, RaftMessage, SnapshotMeta } from '../raft/index.js';
import { TransportError, TransportErrorReason } from './errors.js';
import type { TransportLimits } from './types.js';
import type { WireReader } from './wire-reader.js';
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
} as const satisfies Record<RaftMessage['type'], number>;

const headerBytes = 1 + 8 * 3;
const entryHeaderBytes = 8 + 8 + 1 + 4;
/** The smallest encoded message: a timeoutNow. Bounds a frame's message count by its size. */
export const messageBytesMin = headerBytes;

type DecodeLimits = Pick<TransportLimits, 'messageItemsMax'>;

function memberListBytes(ids: readonly number[]): number {
  return 4 + 8 * ids.length;
}

export function snapshotMetaBytes(meta: SnapshotMeta): number {
  const c = meta.confState;
  return 16 + memberListBytes(c.voters) + memberListBytes(c.votersOutgoing) +
    memberListBytes(c.learners);
}

/** The exact encoded size of `message`. */
export function messageBytes(message: RaftMessage): number {
  switch (message.type) {
    case 'append': {
      let bytes = headerBytes + 8 * 3 + 4;
      for (const entry of message.entries) bytes += entryHeaderBytes + entry.data.length;
      return bytes;
    }
    case 'appendResponse':
      return headerBytes + 8 + 1 + 8 + 8;
    case 'heartbeat':
      return headerBytes + 16;
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
      return headerBytes;
    case 'readIndex':
      return headerBytes + 4 + 8 * message.contexts.length;
    case 'readIndexResponse':
      return headerBytes + 4 + 8 * message.contexts.length + 8;
    case 'propose': {
      let bytes = headerBytes + 4;
      for (const command of message.commands) bytes += 4 + command.length;
      return bytes;
    }
    default:
      return unreachable(message, 'message type');
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

export function writeMessage(w: WireWriter, message: RaftMessage): void {
  // Pairs with readMessage's shape checks: a sender bug stops the sender, not the receiver.
  assert(message.from > 0 && message.to > 0 && message.from !== message.to, 'message ids');
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
      return;
    case 'readIndex':
      writeMemberList(w, message.contexts);
      return;
    case 'readIndexResponse':
      writeMemberList(w, message.contexts);
      w.u64(message.index + 1);
      return;
    case 'propose':
      w.u32(message.commands.length);
      for (const command of message.commands) {
        w.u32(command.length);
        w.bytes(command);
      }
      return;
    default:
      unreachable(message, 'message type');
  }
}

function invalid(reader: WireReader, what: string): TransportError {
  return new TransportError(TransportErrorReason.invalidValue, what, reader.offset);
}

function readIdList(r: WireReader, limits: DecodeLimits, what: string): number[] {
  const count = r.count(limits.messageItemsMax, 8, what);
  const ids: number[] = new Array<number>(count);
  for (let i = 0; i < count; i++) ids[i] = r.u64(what);
  return ids;
}

export function readSnapshotMeta(r: WireReader, limits: DecodeLimits): SnapshotMeta {
  const index = r.u64('snapshot index');
  const term = r.u64('snapshot term');
  const confState: ConfState = {
    voters: readIdList(r, limits, 'voters'),
    votersOutgoing: readIdList(r, limits, 'votersOutgoing'),
    learners: readIdList(r, limits, 'learners'),
  };
  return { index, term, confState };
}

function readEntries(
  r: WireReader,
  limits: DecodeLimits,
  head: { prevIndex: number; prevTerm: number; term: number },
): Entry[] {
  const count = r.count(limits.messageItemsMax, entryHeaderBytes, 'entry count');
  const entries: Entry[] = new Array<Entry>(count);
  let termFloor = head.prevTerm;
  for (let i = 0; i < count; i++) {
    const index = r.u64('entry index');
    const term = r.u64('entry term');
    const type = r.u8('entry type');
    if (index !== head.prevIndex + 1 + i) throw invalid(r, `entry ${i} has index ${index}`);
    if (term < termFloor || term > head.term) throw invalid(r, `entry ${index} has term ${term}`);
    if (type !== 0 && type !== 1) throw invalid(r, `entry ${index} has type ${type}`);
    termFloor = term;
    const data = r.bytes(r.u32('entry data length'), 'entry data');
    entries[i] = { index, term, type: type as EntryType, data };
  }
  return entries;
}

/** Decodes one message; throws TransportError on anything an encoder would not have written. */
export function readMessage(r: WireReader, limits: DecodeLimits): RaftMessage {
  const tag = r.u8('message type');
  const from = r.u64('from');
  const to = r.u64('to');
  const term = r.u64('term');
  if (from === 0 || to === 0 || from === to) throw invalid(r, `message ${from} -> ${to}`);
  switch (tag) {
    case messageTag.append: {
      const prevIndex = r.u64('prevIndex');
      const prevTerm = r.u64('prevTerm');
      const commit = r.u64('commit');
      if (prevTerm > term) throw invalid(r, `prevTerm ${prevTerm} > term ${term}`);
      const entries = readEntries(r, limits, { prevIndex, prevTerm, term });
      return { type: 'append', from, to, term, prevIndex, prevTerm, entries, commit };
    }
    case messageTag.appendResponse: {
      const index = r.u64('index');
      const reject = r.bool('reject');
      const rejectHint = r.u64('rejectHint');
      const hintTerm = r.u64('hintTerm');
      return { type: 'appendResponse', from, to, term, index, reject, rejectHint, hintTerm };
    }
    case messageTag.heartbeat: {
      const commit = r.u64('commit');
      const readRound = r.u64('readRound');
      return { type: 'heartbeat', from, to, term, commit, readRound };
    }
    case messageTag.heartbeatResponse:
      return { type: 'heartbeatResponse', from, to, term, readRound: r.u64('readRound') };
    case messageTag.vote:
    case messageTag.preVote: {
      const type = tag === messageTag.vote ? 'vote' : 'preVote';
      const lastIndex = r.u64('lastIndex');
      const lastTerm = r.u64('lastTerm');
      const transfer = r.bool('transfer');
      return { type, from, to, term, lastIndex, lastTerm, transfer };
    }
    case messageTag.voteResponse:
    case messageTag.preVoteResponse: {
      const type = tag === messageTag.voteResponse ? 'voteResponse' : 'preVoteResponse';
      return { type, from, to, term, reject: r.bool('reject') };
    }
    case messageTag.snapshot: {
      const meta = readSnapshotMeta(r, limits);
      const data = r.bytes(r.u32('snapshot data length'), 'snapshot data');
      return { type: 'snapshot', from, to, term, snapshot: { meta, data } };
    }
    case messageTag.timeoutNow:
      return { type: 'timeoutNow', from, to, term };
    case messageTag.readIndex:
      return { type: 'readIndex', from, to, term, contexts: readIdList(r, limits, 'contexts') };
    case messageTag.readIndexResponse: {
      const contexts = readIdList(r, limits, 'contexts');
      const index = r.u64('read index') - 1;
      return { type: 'readIndexResponse', from, to, term, contexts, index };
    }
    case messageTag.propose: {
      const count = r.count(limits.messageItemsMax, 4, 'command count');
      const commands: Uint8Array[] = new Array<Uint8Array>(count);
      for (let i = 0; i < count; i++) commands[i] = r.bytes(r.u32('command length'), 'command');
      return { type: 'propose', from, to, term, commands };
    }
    default:
      throw invalid(r, `unknown message type ${tag}`);
  }
}
