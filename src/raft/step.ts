// Message dispatch: the term rules first (election.ts), then what each role does with each type.
import { assert, unreachable } from '../base/assert.js';
import { handleVoteRequest, handleVoteResponse, hup, stepTerm } from './election.js';
import type { NodeState } from './node-state.js';
import { handleReadIndexResponse, leaderRead } from './reads.js';
import { answerLedgerQuery, takeLedgerReport } from './peer-ledger.js';
import { handleAppend, handleHeartbeat, handleSnapshot } from './replication-follower.js';
import { appendForwarded, handleAppendResponse, handleHeartbeatResponse, refuseForwarded } from './replication-leader.js';
import { becomeFollower } from './roles.js';
import { Role, type RaftMessage } from './types.js';

export function stepMessage(node: NodeState, m: RaftMessage): void {
  // The driver's business (see the message type): no term, no role change comes of it.
  if (m.type === 'proposeRefused') return;
  // The ledger's messages come before the term rules: asking and answering changes no term.
  if (m.type === 'ledgerQuery') return answerLedgerQuery(node, m);
  if (m.type === 'ledgerReport') return takeLedgerReport(node, m);
  node.ledger.observe(m);
  // Still asking peers what it promised them, or found to have older data than it promised:
  // nothing that could vote, acknowledge or lead. A forwarded proposal fails at once.
  if (node.recovery !== null || node.regressed !== null) {
    if (m.type === 'propose' && node.regressed === null) refuseForwarded(node, m.from, m.commands, 'notLeader');
    return;
  }
  if (!stepTerm(node, m)) return;
  switch (node.role) {
    case Role.leader:
      return stepLeader(node, m);
    case Role.candidate:
    case Role.preCandidate:
      return stepCandidate(node, m);
    case Role.follower:
      return stepFollower(node, m);
    default:
      unreachable(node.role, 'role');
  }
}

function stepFollower(node: NodeState, m: RaftMessage): void {
  switch (m.type) {
    case 'append':
    case 'heartbeat':
    case 'snapshot':
      // The leader of this term spoke: no election while it keeps speaking.
      node.electionElapsed = 0;
      node.leader = m.from;
      if (m.type === 'append') return handleAppend(node, m);
      if (m.type === 'heartbeat') return handleHeartbeat(node, m);
      return handleSnapshot(node, m);
    case 'timeoutNow':
      return hup(node, true);
    case 'readIndexResponse':
      return handleReadIndexResponse(node, m);
    case 'vote':
    case 'preVote':
      return handleVoteRequest(node, m);
    case 'readIndex':
    case 'propose':
      return refuseAsNonLeader(node, m);
    default:
      return;
  }
}

/** Only the leader answers forwarded reads and proposals: elsewhere they are refused at once. */
function refuseAsNonLeader(node: NodeState, m: RaftMessage & { type: 'readIndex' | 'propose' }): void {
  if (m.type === 'readIndex') node.send({ type: 'readIndexResponse', to: m.from, contexts: m.contexts, index: -1 });
  else refuseForwarded(node, m.from, m.commands, 'notLeader');
}

function stepCandidate(node: NodeState, m: RaftMessage): void {
  switch (m.type) {
    case 'append':
    case 'heartbeat':
    case 'snapshot':
      // Someone won this term.
      becomeFollower(node, m.term, m.from);
      return stepFollower(node, m);
    case 'vote':
    case 'preVote':
      return handleVoteRequest(node, m);
    case 'voteResponse':
    case 'preVoteResponse':
      return handleVoteResponse(node, m);
    case 'readIndex':
    case 'propose':
      return refuseAsNonLeader(node, m);
    default:
      return;
  }
}

function stepLeader(node: NodeState, m: RaftMessage): void {
  switch (m.type) {
    case 'appendResponse':
      return handleAppendResponse(node, m);
    case 'heartbeatResponse':
      return handleHeartbeatResponse(node, m);
    case 'vote':
    case 'preVote':
      return handleVoteRequest(node, m);
    case 'append':
    case 'heartbeat':
    case 'snapshot':
      assert(false, `two leaders in term ${node.term}: ${node.id} and ${m.from}`);
      return;
    case 'propose':
      if (!node.progress.has(m.from)) return;
      return appendForwarded(node, m.from, m.commands);
    case 'readIndex':
      if (!node.progress.has(m.from)) return;
      for (const context of m.contexts) leaderRead(node, context, m.from);
      return;
    default:
      return;
  }
}
