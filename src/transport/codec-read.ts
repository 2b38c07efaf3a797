// Decodes what codec.ts encodes (wire format at the top of codec.ts). Every length is checked
// against the bytes left, every count against a limit before allocating, every tag and boolean
// against the values an encoder writes; the message comes back whole or a TransportError is
// thrown. Entry data and commands are views of the frame, never copies.
import type { ConfState, Entry, EntryType, RaftMessage, SnapshotMeta } from '../raft/index.js';
import { entryHeaderBytes, forwardRefusalCodes, messageTag } from './codec.js';
import { contactListVersion, ledgerVersion, protocolVersion } from './protocol.js';
import { TransportError, TransportErrorReason } from './errors.js';
import type { TransportLimits } from './types.js';
import type { WireReader } from './wire-reader.js';

type DecodeLimits = Pick<TransportLimits, 'messageItemsMax'>;
type Base = { readonly from: number; readonly to: number; readonly term: number };
type BodyReader = (r: WireReader, base: Base, limits: DecodeLimits, version: number) => RaftMessage;

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

const bodyReaders: Readonly<Record<number, BodyReader>> = {
  [messageTag.append]: (r, base, limits) => {
    const prevIndex = r.u64('prevIndex');
    const prevTerm = r.u64('prevTerm');
    const commit = r.u64('commit');
    if (prevTerm > base.term) throw invalid(r, `prevTerm ${prevTerm} > term ${base.term}`);
    const entries = readEntries(r, limits, { prevIndex, prevTerm, term: base.term });
    return { type: 'append', ...base, prevIndex, prevTerm, entries, commit };
  },
  [messageTag.appendResponse]: (r, base) => {
    const index = r.u64('index');
    const reject = r.bool('reject');
    const rejectHint = r.u64('rejectHint');
    const hintTerm = r.u64('hintTerm');
    return { type: 'appendResponse', ...base, index, reject, rejectHint, hintTerm };
  },
  [messageTag.heartbeat]: (r, base, limits, version) => {
    const commit = r.u64('commit');
    const readRound = r.u64('readRound');
    // Version 2 leaders send no view of who is in contact: the follower learns none from it.
    if (version < contactListVersion) return { type: 'heartbeat', ...base, commit, readRound, contact: null };
    const contact = readIdList(r, limits, 'contact');
    if (contact.length === 0) return { type: 'heartbeat', ...base, commit, readRound, contact: null };
    // The core relies on the shape: ascending (so distinct), non-zero, the leader itself in it.
    for (let i = 0; i < contact.length; i++) {
      const id = contact[i] as number;
      if (id === 0 || (i > 0 && id <= (contact[i - 1] as number))) throw invalid(r, `contact list not ascending at ${id}`);
    }
    if (!contact.includes(base.from)) throw invalid(r, `contact list of leader ${base.from} lacks it`);
    return { type: 'heartbeat', ...base, commit, readRound, contact };
  },
  [messageTag.heartbeatResponse]: (r, base) =>
    ({ type: 'heartbeatResponse', ...base, readRound: r.u64('readRound') }),
  [messageTag.vote]: (r, base) => ({ type: 'vote', ...base, ...readCampaign(r) }),
  [messageTag.preVote]: (r, base) => ({ type: 'preVote', ...base, ...readCampaign(r) }),
  [messageTag.voteResponse]: (r, base) =>
    ({ type: 'voteResponse', ...base, reject: r.bool('reject') }),
  [messageTag.preVoteResponse]: (r, base) =>
    ({ type: 'preVoteResponse', ...base, reject: r.bool('reject') }),
  [messageTag.snapshot]: (r, base, limits) => {
    const meta = readSnapshotMeta(r, limits);
    const data = r.bytes(r.u32('snapshot data length'), 'snapshot data');
    return { type: 'snapshot', ...base, snapshot: { meta, data } };
  },
  [messageTag.timeoutNow]: (_r, base) => ({ type: 'timeoutNow', ...base }),
  [messageTag.ledgerQuery]: (r, base, _limits, version) => {
    if (version < ledgerVersion) throw invalid(r, `ledgerQuery on a protocol ${version} connection`);
    return { type: 'ledgerQuery', ...base };
  },
  [messageTag.ledgerReport]: (r, base, _limits, version) => {
    if (version < ledgerVersion) throw invalid(r, `ledgerReport on a protocol ${version} connection`);
    const term = r.u64('term');
    const ackTerm = r.u64('ackTerm');
    const ackIndex = r.u64('ackIndex');
    const voteTerm = r.u64('voteTerm');
    const votedFor = r.u64('votedFor');
    if (ackTerm > term || voteTerm > term) throw invalid(r, `ledger terms past the record's term ${term}`);
    return { type: 'ledgerReport', ...base, record: { term, ackTerm, ackIndex, voteTerm, votedFor } };
  },
  [messageTag.readIndex]: (r, base, limits) =>
    ({ type: 'readIndex', ...base, contexts: readIdList(r, limits, 'contexts') }),
  [messageTag.readIndexResponse]: (r, base, limits) => {
    const contexts = readIdList(r, limits, 'contexts');
    return { type: 'readIndexResponse', ...base, contexts, index: r.u64('read index') - 1 };
  },
  [messageTag.propose]: (r, base, limits) => ({ type: 'propose', ...base, commands: readCommands(r, limits) }),
  [messageTag.proposeRefused]: (r, base, limits) => {
    const code = r.u8('refusal reason');
    const reason = forwardRefusalCodes[code];
    if (reason === undefined) throw invalid(r, `refusal reason ${code}`);
    return { type: 'proposeRefused', ...base, reason, commands: readCommands(r, limits) };
  },
};

function readCommands(r: WireReader, limits: DecodeLimits): Uint8Array[] {
  const count = r.count(limits.messageItemsMax, 4, 'command count');
  const commands: Uint8Array[] = new Array<Uint8Array>(count);
  for (let i = 0; i < count; i++) commands[i] = r.bytes(r.u32('command length'), 'command');
  return commands;
}

function readCampaign(r: WireReader): { lastIndex: number; lastTerm: number; transfer: boolean } {
  const lastIndex = r.u64('lastIndex');
  const lastTerm = r.u64('lastTerm');
  return { lastIndex, lastTerm, transfer: r.bool('transfer') };
}

/**
 * Decodes one message of protocol `version` (2 or 3); throws TransportError on anything an
 * encoder of that version would not have written.
 */
export function readMessage(r: WireReader, limits: DecodeLimits, version: number = protocolVersion): RaftMessage {
  const tag = r.u8('message type');
  const from = r.u64('from');
  const to = r.u64('to');
  const term = r.u64('term');
  if (from === 0 || to === 0 || from === to) throw invalid(r, `message ${from} -> ${to}`);
  const readBody = bodyReaders[tag];
  if (readBody === undefined) throw invalid(r, `unknown message type ${tag}`);
  return readBody(r, { from, to, term }, limits, version);
}
