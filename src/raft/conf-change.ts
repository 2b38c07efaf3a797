// Membership changes as log entries. A change first enters joint consensus (C_old,new: decisions
// need both majorities), and the leader then commits the leave entry (C_new). Membership only
// ever comes from configuration entries that have been committed.
import { assert } from '../base/assert.js';
import type { ConfChange, ConfState, MemberId } from './types.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * A configuration entry carries the change and the whole configuration it produces, so that a
 * member that joins later can apply it without knowing the configuration the cell started with.
 */
export interface ConfEntry {
  readonly change: ConfChange;
  readonly confState: ConfState;
}

export function encodeConfEntry(entry: ConfEntry): Uint8Array {
  return encoder.encode(JSON.stringify(entry));
}

export function decodeConfEntry(data: Uint8Array): ConfEntry {
  const entry = JSON.parse(decoder.decode(data)) as ConfEntry;
  const type = entry.change?.type;
  assert(type === 'enterJoint' || type === 'leaveJoint', 'a configuration entry names its change');
  assert(Array.isArray(entry.confState?.voters), 'a configuration entry carries its configuration');
  return entry;
}

/** Why a change cannot be applied to `conf`, or null when it can. */
export function confChangeProblem(conf: ConfState, change: ConfChange): string | null {
  if (change.type === 'leaveJoint') {
    return conf.votersOutgoing.length > 0 ? null : 'not in joint consensus';
  }
  if (conf.votersOutgoing.length > 0) return 'already in joint consensus';
  if (change.changes.length === 0) return 'no changes';
  const seen = new Set<MemberId>();
  for (const item of change.changes) {
    if (!Number.isSafeInteger(item.id) || item.id <= 0) return `bad member id ${item.id}`;
    if (seen.has(item.id)) return `member ${item.id} changed twice`;
    seen.add(item.id);
    const isVoter = conf.voters.includes(item.id);
    const isLearner = conf.learners.includes(item.id);
    if (item.type === 'addLearner' && isVoter) return `member ${item.id} is a voter`;
    if (item.type === 'addLearner' && isLearner) return `member ${item.id} is already a learner`;
    if (item.type === 'addVoter' && isVoter) return `member ${item.id} is already a voter`;
    if (item.type === 'remove' && !isVoter && !isLearner) return `member ${item.id} is not a member`;
  }
  const next = applyConfChange(conf, change);
  if (next.voters.length === 0) return 'a configuration needs at least one voter';
  return null;
}

export function applyConfChange(conf: ConfState, change: ConfChange): ConfState {
  if (change.type === 'leaveJoint') {
    return { voters: conf.voters, votersOutgoing: [], learners: conf.learners };
  }
  const voters = new Set(conf.voters);
  const learners = new Set(conf.learners);
  for (const item of change.changes) {
    if (item.type === 'addVoter') {
      voters.add(item.id);
      learners.delete(item.id);
    } else if (item.type === 'addLearner') {
      learners.add(item.id);
    } else {
      voters.delete(item.id);
      learners.delete(item.id);
    }
  }
  return {
    voters: sorted(voters),
    votersOutgoing: [...conf.voters],
    learners: sorted(learners),
  };
}

function sorted(ids: Iterable<MemberId>): MemberId[] {
  return [...ids].sort((a, b) => a - b);
}

export function sameConfState(a: ConfState, b: ConfState): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
