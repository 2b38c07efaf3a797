// Majority arithmetic, including joint consensus: while a configuration change is in flight every
// decision needs a majority of the incoming voters AND a majority of the outgoing ones.
import { assert } from '../base/assert.js';
import type { ConfState, MemberId } from './types.js';

export const VoteResult = { won: 'won', lost: 'lost', pending: 'pending' } as const;
export type VoteResult = (typeof VoteResult)[keyof typeof VoteResult];

/** The highest index that a majority of `ids` has reached (Infinity for an empty set). */
function majorityIndex(ids: readonly MemberId[], indexOf: (id: MemberId) => number): number {
  if (ids.length === 0) return Infinity;
  const indexes = ids.map(indexOf).sort((a, b) => b - a);
  return indexes[Math.floor(ids.length / 2)] as number;
}

export function committedIndex(conf: ConfState, indexOf: (id: MemberId) => number): number {
  // With no voter at all every index would count as committed.
  assert(conf.voters.length > 0, 'a configuration has voters');
  return Math.min(majorityIndex(conf.voters, indexOf), majorityIndex(conf.votersOutgoing, indexOf));
}

function majorityVote(ids: readonly MemberId[], votes: ReadonlyMap<MemberId, boolean>): VoteResult {
  if (ids.length === 0) return VoteResult.won;
  let granted = 0;
  let missing = 0;
  for (const id of ids) {
    const vote = votes.get(id);
    if (vote === undefined) missing++;
    else if (vote) granted++;
  }
  const quorum = Math.floor(ids.length / 2) + 1;
  if (granted >= quorum) return VoteResult.won;
  if (granted + missing >= quorum) return VoteResult.pending;
  return VoteResult.lost;
}

export function voteResult(conf: ConfState, votes: ReadonlyMap<MemberId, boolean>): VoteResult {
  const incoming = majorityVote(conf.voters, votes);
  const outgoing = majorityVote(conf.votersOutgoing, votes);
  if (incoming === VoteResult.won && outgoing === VoteResult.won) return VoteResult.won;
  if (incoming === VoteResult.lost || outgoing === VoteResult.lost) return VoteResult.lost;
  return VoteResult.pending;
}

/** Every member that votes in this configuration (incoming and outgoing), each once, sorted. */
export function allVoters(conf: ConfState): MemberId[] {
  return [...new Set([...conf.voters, ...conf.votersOutgoing])].sort((a, b) => a - b);
}

/** Every member the leader replicates to. */
export function allMembers(conf: ConfState): MemberId[] {
  return [...new Set([...conf.voters, ...conf.votersOutgoing, ...conf.learners])].sort((a, b) => a - b);
}

export function isVoter(conf: ConfState, id: MemberId): boolean {
  return conf.voters.includes(id) || conf.votersOutgoing.includes(id);
}
