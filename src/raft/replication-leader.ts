// The leader's half of replication: appending proposals, sending each follower what it lacks
// (entries, pipelined up to a window, or the snapshot when they are compacted away), reading the
// answers, and advancing the commit index by the rule of the paper's Figure 8.
import { assert } from '../base/assert.js';
import type { MessageOf, NodeState } from './node-state.js';
import { ProgressState, type Progress } from './progress.js';
import { membersInContact } from './contact.js';
import { committedIndex, isVoter } from './quorum.js';
import { leaderRead, releaseConfirmedReads } from './reads.js';
import { EntryType, noMember, Role, type ForwardRefusal, type MemberId, type ProposeResult } from './types.js';

export function appendProposal(node: NodeState, type: EntryType, data: Uint8Array): ProposeResult {
  if (node.role !== Role.leader) return refuse(node, 'notLeader');
  if (node.leadTransferee !== noMember) return refuse(node, 'transferring');
  if (node.uncommittedBytes + data.byteLength > node.config.uncommittedBytesMax) {
    return refuse(node, 'tooLarge');
  }
  assert(node.leaderTerm === node.term, 'the leader appends in its own term');
  const index = node.log.lastIndex() + 1;
  node.log.appendNew({ index, term: node.term, type, data });
  node.uncommittedBytes += data.byteLength;
  node.broadcastPending = true;
  return { ok: true, index, term: node.term };
}

export function refuse(node: NodeState, reason: Exclude<ProposeResult, { ok: true }>['reason']): ProposeResult {
  return { ok: false, reason, leader: node.leader };
}

/** A follower's commands: appended in order; the ones refused go back, grouped by reason. */
export function appendForwarded(node: NodeState, from: MemberId, commands: readonly Uint8Array[]): void {
  let refused: Map<ForwardRefusal, Uint8Array[]> | null = null;
  for (const command of commands) {
    const result = appendProposal(node, EntryType.normal, command);
    if (result.ok) {
      node.forwardedUpTo.set(from, result.index);
      continue;
    }
    assert(result.reason === 'notLeader' || result.reason === 'transferring' || result.reason === 'tooLarge',
      'a normal proposal is refused for leadership or room only');
    refused ??= new Map();
    const list = refused.get(result.reason) ?? [];
    list.push(command);
    refused.set(result.reason, list);
  }
  for (const [reason, list] of refused ?? []) refuseForwarded(node, from, list, reason);
}

export function refuseForwarded(node: NodeState, to: MemberId, commands: readonly Uint8Array[], reason: ForwardRefusal): void {
  if (commands.length > 0) node.send({ type: 'proposeRefused', to, reason, commands });
}

/** New entries or a new commit index: every follower (or those waiting for the commit) hears of them with this Ready. */
export function flushBroadcast(node: NodeState): void {
  if (node.role !== Role.leader) return;
  if (node.broadcastPending) {
    node.broadcastPending = false;
    for (const id of node.progress.keys()) {
      if (id !== node.id) sendAppend(node, id, true);
    }
  }
  for (const id of node.commitNoticeTo) {
    if (node.progress.has(id)) sendAppend(node, id, true);
  }
  node.commitNoticeTo.clear();
}

/**
 * The commit index moved from `previous`. Without deferred notices every follower hears of it
 * with this Ready. With them, a follower hears at once only if entries it forwarded are among
 * those committed (its clients wait for them); the others are owed the notice.
 */
function announceCommit(node: NodeState, previous: number): void {
  if (node.config.deferCommitNotices !== true) {
    node.broadcastPending = true;
    return;
  }
  for (const id of node.progress.keys()) {
    if (id === node.id) continue;
    if ((node.forwardedUpTo.get(id) ?? 0) > previous) node.commitNoticeTo.add(id);
    else node.commitOwed.add(id);
  }
}

/** The deferred commit notices go out with the next Ready (the driver's delay ran out). Nothing is owed off leadership (leaveLeadership clears it). */
export function sendOwedCommitNotices(node: NodeState): void {
  for (const id of node.commitOwed) node.commitNoticeTo.add(id);
  node.commitOwed.clear();
}

/** Advances the commit index if a quorum allows, and tells the followers as announceCommit decides. */
export function commitAndAnnounce(node: NodeState): void {
  const previous = node.log.committedIndex;
  if (maybeCommit(node)) announceCommit(node, previous);
}

/** Send `to` what it lacks (entries, or a snapshot if they are compacted away). */
export function sendAppend(node: NodeState, to: MemberId, sendIfEmpty: boolean): boolean {
  assert(node.role === Role.leader, 'only a leader sends appends');
  const pr = node.progressOf(to);
  if (pr.isPaused()) return false;
  const prevIndex = pr.next - 1;
  const prevTerm = node.log.term(prevIndex);
  if (prevTerm === undefined) return sendSnapshot(node, to, pr);
  const entries = node.log.slice(pr.next, node.log.lastIndex(), node.config.appendBytesMax);
  if (entries.length === 0 && !sendIfEmpty) return false;
  node.send({ type: 'append', to, prevIndex, prevTerm, entries, commit: node.log.committedIndex });
  pr.sentAppend(prevIndex + entries.length, entries.length);
  // It carries the commit index: nothing more is owed to this follower.
  node.commitOwed.delete(to);
  node.commitNoticeTo.delete(to);
  return true;
}

function sendSnapshot(node: NodeState, to: MemberId, pr: Progress): boolean {
  const snapshot = node.snapshot;
  assert(snapshot !== null, 'entries are compacted only behind a snapshot');
  assert(pr.next <= snapshot.meta.index, 'a snapshot goes only to a follower that needs compacted entries');
  if (!pr.recentActive) return false; // do not ship a snapshot to a node that may be down
  pr.becomeSnapshot(snapshot.meta.index);
  node.send({ type: 'snapshot', to, snapshot });
  return true;
}

export function broadcastHeartbeat(node: NodeState, readRound: number): void {
  // One list for every follower: they all learn the same view of who is in contact.
  const contact = membersInContact(node);
  for (const [id, pr] of node.progress) {
    if (id === node.id) continue;
    // Only what the follower is known to match: it may not hold the leader's later entries yet.
    const commit = Math.min(pr.match, node.log.committedIndex);
    node.send({ type: 'heartbeat', to: id, commit, readRound, contact });
    if (commit === node.log.committedIndex) node.commitOwed.delete(id);
  }
}

export function handleAppendResponse(node: NodeState, m: MessageOf<'appendResponse'>): void {
  assert(node.role === Role.leader && m.term === node.term, 'append answers of this term reach its leader');
  const pr = node.progress.get(m.from);
  if (pr === undefined) return;
  pr.heard();
  if (m.reject) {
    // The follower lacks or conflicts at m.index, which this leader sent: it is in its log.
    assert(!node.invariantsHold || m.index <= node.log.lastIndex(), 'a rejected append was sent by this leader');
    let hint = m.rejectHint;
    if (m.hintTerm > 0) hint = node.log.findConflictByTerm(m.rejectHint, m.hintTerm);
    if (pr.maybeDecrease(m.index, hint)) {
      if (pr.state === ProgressState.replicate) pr.becomeProbe();
      sendAppend(node, m.from, true);
    }
    return;
  }
  // A follower of this term matches only entries this leader sent it.
  assert(!node.invariantsHold || m.index <= node.log.lastIndex(), 'a follower matches at most the leader\'s log');
  // A probe answered at the match already known also found the follower's position: an idle,
  // caught-up follower back from an outage (the transport's unreachable report probed it) has no
  // newer index to report, and would otherwise stay in probe until the next write (etcd-raft's
  // heartbeat_rep_recovers_from_probing). Not for a snapshot: its pending index still waits.
  // Only for a follower that is caught up: one behind answers the probe's entries with a newer
  // index. A duplicated old ack at a lagging follower's match would otherwise flip it to
  // replicate and refill the whole window, each time a reordered reject sent it back to probe
  // (plain seed 638670: a message storm of millions of steps, loss, reordering and duplication).
  const probeFound = pr.state === ProgressState.probe && m.index === pr.match && pr.match === node.log.lastIndex();
  if (pr.maybeUpdate(m.index) || probeFound) {
    assert(pr.match >= m.index, 'the follower matches at least what it answered');
    if (pr.state === ProgressState.probe) pr.becomeReplicate();
    else if (pr.state === ProgressState.snapshot && pr.match >= pr.pendingSnapshot) {
      pr.becomeProbe();
      pr.becomeReplicate();
    }
    commitAndAnnounce(node);
    while (sendAppend(node, m.from, false)) {
      // Fill the pipelining window.
    }
    if (node.leadTransferee === m.from && pr.match === node.log.lastIndex()) {
      node.send({ type: 'timeoutNow', to: m.from });
    }
  }
}

export function handleHeartbeatResponse(node: NodeState, m: MessageOf<'heartbeatResponse'>): void {
  assert(node.role === Role.leader && m.term === node.term, 'heartbeat answers of this term reach its leader');
  const pr = node.progress.get(m.from);
  if (pr === undefined) return;
  pr.heard();
  pr.probeSent = false;
  // A lost append would otherwise stall a full pipeline forever.
  if (pr.state === ProgressState.replicate && pr.inflightFull()) pr.freeFirstInflight();
  // A probing follower gets an append even when it matches everything: its answer (at the
  // match) is what moves it back to replicate (handleAppendResponse).
  if (pr.match < node.log.lastIndex() || pr.state === ProgressState.probe) sendAppend(node, m.from, true);
  if (isVoter(node.confState, m.from)) {
    node.reads.ack(m.from, m.readRound);
    releaseConfirmedReads(node);
  }
}

/** Advance the commit index to what a quorum has durably stored (Figure 8 rule). */
export function maybeCommit(node: NodeState): boolean {
  assert(node.role === Role.leader, 'only a leader counts replicas');
  const index = committedIndex(node.confState, (id) => node.progress.get(id)?.match ?? 0);
  if (index <= node.log.committedIndex) return false;
  assert(!node.invariantsHold || index <= node.log.lastIndex(), 'a quorum matches only entries in the leader\'s log');
  // Counting replicas commits only an entry of this leader's term; earlier ones commit with it.
  const ownTerm = node.log.term(index) === node.term;
  if (!ownTerm && node.config.bugs?.commitOldTermEntries !== true) return false;
  const previous = node.log.committedIndex;
  node.log.commitTo(index);
  assert(node.log.committedIndex === index && index > previous, 'the commit index moved forward');
  for (let at = previous + 1; at <= index; at++) {
    const entry = node.log.entry(at);
    if (entry.term === node.term) node.uncommittedBytes -= entry.data.byteLength;
  }
  // Not exact: the leave-joint entry's bytes were never counted in.
  node.uncommittedBytes = Math.max(0, node.uncommittedBytes);
  if (ownTerm && node.readsAwaitingCommit.length > 0) {
    const waiting = node.readsAwaitingCommit;
    node.readsAwaitingCommit = [];
    for (const read of waiting) leaderRead(node, read.context, read.from);
  }
  return true;
}
