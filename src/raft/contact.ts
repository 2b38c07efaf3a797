// Member health, defined once for the whole cell: a member is healthy when the current leader
// heard from it within the last election timeout. Only the leader hears every member, so the
// leader's view is the one every member reports: it travels to followers on heartbeats (every
// heartbeat period), and a follower that stopped hearing from the leader vouches for no one.
import { assert } from '../base/assert.js';
import type { NodeState } from './node-state.js';
import { noMember, Role, type MemberId } from './types.js';

/** Leader: the members it heard from within the last election timeout, itself included, ascending. */
export function membersInContact(node: NodeState): MemberId[] {
  assert(node.role === Role.leader, 'only the leader hears every member');
  const contact: MemberId[] = [node.id];
  for (const [id, pr] of node.progress) {
    if (id !== node.id && pr.ticksSinceHeard < node.config.electionTicks) contact.push(id);
  }
  contact.sort((a, b) => a - b);
  assert(new Set(contact).size === contact.length, 'each member once');
  return contact;
}

/**
 * RaftStatus.inContact: the leader's own view, or on a follower the one this term's leader's
 * latest heartbeat brought while less than an election timeout old ([this member] if that
 * heartbeat had no view); null otherwise.
 */
export function inContactView(node: NodeState): readonly MemberId[] | null {
  if (node.role === Role.leader) return membersInContact(node);
  const view = node.leaderContact;
  if (node.role !== Role.follower || node.leader === noMember) return null;
  if (view.leader !== node.leader || view.term !== node.term) return null;
  if (view.ticksSinceHeartbeat >= node.config.electionTicks) return null;
  // A leader that sends no view (peer protocol 2, mid-upgrade): vouch only for this member, as
  // members did before health travelled; the leader's own view is not known here.
  if (view.members === null) return [node.id];
  assert(view.members.includes(view.leader), 'a leader\'s view includes itself');
  return view.members;
}
