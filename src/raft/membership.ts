// Membership: a change enters joint consensus (C_old,new) through a configuration entry, takes
// effect when that entry is applied, and the leader then appends the leave-joint entry (C_new)
// by itself. One change at a time; membership only ever comes from applied entries or snapshots.
import { assert } from '../base/assert.js';
import { applyConfChange, confChangeProblem, decodeConfEntry, encodeConfEntry } from './conf-change.js';
import type { NodeState } from './node-state.js';
import { allMembers, isVoter } from './quorum.js';
import { appendProposal, maybeCommit, refuse } from './replication-leader.js';
import { becomeFollower } from './roles.js';
import { EntryType, noMember, Role, type ConfChange, type ConfState, type Entry, type ProposeResult } from './types.js';

export function proposeConfChange(node: NodeState, change: ConfChange): ProposeResult {
  if (node.role !== Role.leader) return refuse(node, 'notLeader');
  if (node.pendingConfIndex > node.log.appliedIndex || node.confState.votersOutgoing.length > 0) {
    return refuse(node, 'confChangePending');
  }
  if (change.type !== 'enterJoint' || confChangeProblem(node.confState, change) !== null) {
    return refuse(node, 'invalidConfChange');
  }
  const confState = applyConfChange(node.confState, change);
  const result = appendProposal(node, EntryType.config, encodeConfEntry({ change, confState }));
  if (result.ok) node.pendingConfIndex = result.index;
  return result;
}

/** An entry is being applied: a configuration entry changes the membership now. */
export function applyEntryMembership(node: NodeState, entry: Entry): void {
  if (entry.type !== EntryType.config) return;
  const { change, confState } = decodeConfEntry(entry.data);
  const previous = node.confHistory[node.confHistory.length - 1];
  assert(previous === undefined || previous.index < entry.index, 'configurations apply in log order');
  node.confState = confState;
  node.confHistory.push({ index: entry.index, confState: node.confState });
  if (node.role !== Role.leader) return;
  for (const id of allMembers(node.confState)) if (!node.progress.has(id)) node.addProgress(id);
  for (const id of [...node.progress.keys()]) {
    if (!allMembers(node.confState).includes(id)) node.progress.delete(id);
  }
  if (change.type === 'enterJoint') {
    // C_old,new is committed: C_new follows once the batch is applied (maybeLeaveJoint).
  } else if (!isVoter(node.confState, node.id)) {
    // Removed from the cell: stop leading; the remaining voters elect a leader.
    becomeFollower(node, node.term, noMember);
  } else {
    maybeCommit(node);
  }
}

/**
 * A leader whose applied configuration is joint moves on to C_new once no configuration entry is
 * pending (etcd's auto-leave): right after it applied its own C_old,new, and also when it was
 * elected after its predecessor applied C_old,new but before C_new committed (then only once it
 * has applied everything it inherited). Without the second case the cell stayed joint, and
 * refused every later change, for good (the simulator's seed 7097, leases, found it).
 */
export function maybeLeaveJoint(node: NodeState): void {
  if (node.role !== Role.leader || node.confState.votersOutgoing.length === 0) return;
  if (node.pendingConfIndex > node.log.appliedIndex) return;
  const leaveChange: ConfChange = { type: 'leaveJoint' };
  const leave = encodeConfEntry({ change: leaveChange, confState: applyConfChange(node.confState, leaveChange) });
  assert(node.leaderTerm === node.term, 'the leader appends in its own term');
  const index = node.log.lastIndex() + 1;
  node.log.appendNew({ index, term: node.term, type: EntryType.config, data: leave });
  node.pendingConfIndex = index;
  node.broadcastPending = true;
}

/** The membership in force once `index` is applied (for a snapshot at `index`). */
export function confStateAt(node: NodeState, index: number): ConfState {
  let conf = node.confHistory[0]?.confState ?? node.confState;
  for (const at of node.confHistory) if (at.index <= index) conf = at.confState;
  return conf;
}

/** A local snapshot at `index` now starts the log: older membership history is not needed. */
export function compactConfHistory(node: NodeState, index: number, confState: ConfState): void {
  const kept = node.confHistory.filter((at) => at.index > index);
  node.confHistory = [{ index, confState }, ...kept];
}
