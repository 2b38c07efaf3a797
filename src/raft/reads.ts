// Linearizable reads (ReadIndex): a leader answers with its commit index once a heartbeat round
// sent after the read arrived has been acknowledged by a quorum; a follower forwards its reads to
// the leader and hands the answers back. Reads that can never be answered fail fast.
import { assert } from '../base/assert.js';
import type { MessageOf, NodeState } from './node-state.js';
import { broadcastHeartbeat } from './replication-leader.js';
import { noMember, Role, type MemberId } from './types.js';

/** RaftApi.readIndex: serve locally (leader), forward (follower of a known leader), or fail. */
export function requestRead(node: NodeState, context: number): void {
  if (node.role === Role.leader) {
    leaderRead(node, context, node.id);
  } else if (node.leader !== noMember && node.role === Role.follower) {
    node.readsToForward.push(context);
  } else {
    node.droppedReads.push(context);
  }
}

export function leaderRead(node: NodeState, context: number, from: MemberId): void {
  assert(node.role === Role.leader, 'only a leader serves reads');
  if (node.log.term(node.log.committedIndex) !== node.term) {
    // Until an entry of this term commits, the commit index may lag what earlier leaders committed.
    node.readsAwaitingCommit.push({ context, from });
    return;
  }
  if (node.config.bugs?.readWithoutQuorum === true) {
    // Test-only bug: answered from this leader's own view, with no round to confirm it still leads.
    const index = node.log.committedIndex;
    if (from === node.id) node.readStates.push({ context, index });
    else node.send({ type: 'readIndexResponse', to: from, contexts: [context], index });
    return;
  }
  const round = node.reads.add(context, from, node.log.committedIndex);
  if (round > 0) broadcastHeartbeat(node, round);
  releaseConfirmedReads(node);
}

/** Answer the reads a quorum has confirmed (grouped per follower and index), and start the next round. */
export function releaseConfirmedReads(node: NodeState): void {
  const done = node.reads.confirmed(node.confState, node.id);
  const remote = new Map<MemberId, { index: number; contexts: number[] }[]>();
  for (const read of done) {
    // A read point is never past what this leader knows committed.
    assert(read.index <= node.log.committedIndex, 'a read index is committed');
    if (read.from === node.id) {
      node.readStates.push({ context: read.context, index: read.index });
      continue;
    }
    const batches = remote.get(read.from) ?? [];
    const last = batches[batches.length - 1];
    if (last !== undefined && last.index === read.index) last.contexts.push(read.context);
    else batches.push({ index: read.index, contexts: [read.context] });
    remote.set(read.from, batches);
  }
  for (const [to, batches] of remote) {
    for (const batch of batches) node.send({ type: 'readIndexResponse', to, ...batch });
  }
  const round = node.reads.nextRound();
  if (round > 0) broadcastHeartbeat(node, round);
}

export function failRead(node: NodeState, context: number, from: MemberId): void {
  if (from === node.id) node.droppedReads.push(context);
  else node.send({ type: 'readIndexResponse', to: from, contexts: [context], index: -1 });
}

/** Follower side: the leader's answers to forwarded reads. */
export function handleReadIndexResponse(node: NodeState, m: MessageOf<'readIndexResponse'>): void {
  for (const context of m.contexts) {
    if (m.index < 0) node.droppedReads.push(context);
    else node.readStates.push({ context, index: m.index });
  }
}

export function flushForwardedReads(node: NodeState): void {
  if (node.readsToForward.length === 0) return;
  if (node.role === Role.follower && node.leader !== noMember) {
    node.send({ type: 'readIndex', to: node.leader, contexts: node.readsToForward });
  } else {
    node.droppedReads.push(...node.readsToForward);
  }
  node.readsToForward = [];
}
