// Seeded generators of every RaftMessage variant, shaped as Raft sends them (consecutive entries,
// non-decreasing terms), with field values spread across the u64 range a safe integer allows.
import { chance, randomInt, type SeededRandom } from '../../../src/base/random.js';
import type { ConfState, Entry, RaftMessage } from '../../../src/raft/index.js';
import { messageTag } from '../../../src/transport/index.js';

export const messageTypes = Object.keys(messageTag) as RaftMessage['type'][];

/** Small values mostly, occasionally huge ones (past 2^32, up to MAX_SAFE_INTEGER). */
export function randomU64(random: SeededRandom): number {
  const roll = random.uint32() % 4;
  if (roll === 0) return random.uint32() % 16;
  if (roll === 1) return random.uint32();
  if (roll === 2) return Number.MAX_SAFE_INTEGER - (random.uint32() % 16);
  return (random.uint32() & 0x1f_ffff) * 0x1_0000_0000 + random.uint32();
}

function randomBytes(random: SeededRandom, max: number): Uint8Array {
  const data = new Uint8Array(randomInt(random, 0, max));
  for (let i = 0; i < data.length; i++) data[i] = random.uint32() & 0xff;
  return data;
}

function randomIds(random: SeededRandom, max: number): number[] {
  return Array.from({ length: randomInt(random, 0, max) }, () => randomU64(random));
}

function randomConfState(random: SeededRandom): ConfState {
  return {
    voters: randomIds(random, 5),
    votersOutgoing: randomIds(random, 3),
    learners: randomIds(random, 2),
  };
}

function randomEntries(random: SeededRandom, prevIndex: number, prevTerm: number, term: number) {
  const entries: Entry[] = [];
  let entryTerm = prevTerm;
  const count = randomInt(random, 0, 20);
  for (let i = 0; i < count; i++) {
    if (chance(random, 0.2)) entryTerm = randomInt(random, entryTerm, term);
    entries.push({ index: prevIndex + 1 + i, term: entryTerm, type: chance(random, 0.1) ? 1 : 0,
      data: randomBytes(random, 300) });
  }
  return entries;
}

export function randomMessage(
  random: SeededRandom,
  type: RaftMessage['type'],
  ids: { from: number; to: number } = { from: 1, to: 2 },
): RaftMessage {
  const base = { ...ids, term: randomU64(random) };
  switch (type) {
    case 'append': {
      const prevIndex = Math.min(randomU64(random), Number.MAX_SAFE_INTEGER - 100);
      const prevTerm = randomInt(random, 0, Math.min(base.term, 0xffff_ffff));
      const entries = randomEntries(random, prevIndex, prevTerm, base.term);
      return { ...base, type, prevIndex, prevTerm, entries, commit: randomU64(random) };
    }
    case 'appendResponse':
      return { ...base, type, index: randomU64(random), reject: chance(random, 0.5),
        rejectHint: randomU64(random), hintTerm: randomU64(random) };
    case 'heartbeat':
      return { ...base, type, commit: randomU64(random), readRound: randomU64(random),
        // null: no view (a heartbeat relayed from a protocol 2 leader; an empty list on the wire).
        contact: chance(random, 0.1) ? null : chance(random, 0.5) ? [base.from] : [...new Set([base.from, Math.max(1, randomU64(random))])].sort((a, b) => a - b) };
    case 'heartbeatResponse':
      return { ...base, type, readRound: randomU64(random) };
    case 'vote':
    case 'preVote':
      return { ...base, type, lastIndex: randomU64(random), lastTerm: randomU64(random),
        transfer: chance(random, 0.5) };
    case 'voteResponse':
    case 'preVoteResponse':
      return { ...base, type, reject: chance(random, 0.5) };
    case 'snapshot':
      return { ...base, type, snapshot: { data: randomBytes(random, 2000),
        meta: { index: randomU64(random), term: randomU64(random),
          confState: randomConfState(random) } } };
    case 'timeoutNow':
    case 'ledgerQuery':
      return { ...base, type };
    case 'ledgerReport': {
      // Field order on the wire: ackTerm and voteTerm never past the record's term.
      const term = randomU64(random);
      return { ...base, type, record: { term, ackTerm: randomInt(random, 0, Math.min(term, 0xffff_ffff)),
        ackIndex: randomU64(random), voteTerm: randomInt(random, 0, Math.min(term, 0xffff_ffff)), votedFor: randomU64(random) } };
    }
    case 'readIndex':
      return { ...base, type, contexts: randomIds(random, 8) };
    case 'readIndexResponse':
      return { ...base, type, contexts: randomIds(random, 8),
        index: chance(random, 0.2) ? -1 : Math.min(randomU64(random), Number.MAX_SAFE_INTEGER - 1) };
    case 'propose':
      return { ...base, type, commands: Array.from({ length: randomInt(random, 0, 6) },
        () => randomBytes(random, 200)) };
    case 'proposeRefused': {
      const reasons = ['notLeader', 'transferring', 'tooLarge', 'overloaded'] as const;
      return { ...base, type, reason: reasons[randomInt(random, 0, reasons.length - 1)]!,
        commands: Array.from({ length: randomInt(random, 1, 6) }, () => randomBytes(random, 40)) };
    }
  }
}

/** Entry data arrives as views into the frame: compare bytes, not buffer identities. */
export function normalize(value: unknown): unknown {
  if (value instanceof Uint8Array) return Array.from(value);
  if (Array.isArray(value)) return value.map(normalize);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, normalize(v)]));
  }
  return value;
}
