// One trace line per event: simulated time, member, role, term, commit index, then the event.
// Built only when tracing, so a silent run pays nothing for it.
import type { RaftMessage, Ready, Role } from '../raft/index.js';

const roleNames: Record<Role, string> = {
  follower: 'follower ',
  preCandidate: 'precand  ',
  candidate: 'candidate',
  leader: 'LEADER   ',
};

export function traceLine(
  timeMs: number,
  member: string,
  role: Role | null,
  term: number,
  commit: number,
  event: string,
): string {
  const roleText = role === null ? '-        ' : roleNames[role];
  return `${String(timeMs).padStart(7)} ${member.padEnd(3)} ${roleText} t${term} c${commit} ${event}`;
}

export function describeMessage(message: RaftMessage): string {
  const head = `${message.type} ${message.from}->${message.to} t${message.term}`;
  switch (message.type) {
    case 'append': {
      const last = message.entries[message.entries.length - 1];
      const range = last === undefined ? 'none' : `${message.prevIndex + 1}..${last.index}`;
      return `${head} prev=${message.prevIndex}/${message.prevTerm} entries=${range} commit=${message.commit}`;
    }
    case 'appendResponse':
      return message.reject
        ? `${head} reject index=${message.index} hint=${message.rejectHint}/${message.hintTerm}`
        : `${head} ok index=${message.index}`;
    case 'heartbeat':
      return `${head} commit=${message.commit} read=${message.readRound} contact=${message.contact?.join(',') ?? '-'}`;
    case 'heartbeatResponse':
      return `${head} read=${message.readRound}`;
    case 'vote':
    case 'preVote':
      return `${head} last=${message.lastIndex}/${message.lastTerm}${message.transfer ? ' transfer' : ''}`;
    case 'voteResponse':
    case 'preVoteResponse':
      return `${head} ${message.reject ? 'reject' : 'grant'}`;
    case 'snapshot':
      return `${head} at=${message.snapshot.meta.index}/${message.snapshot.meta.term}`;
    case 'timeoutNow':
    case 'ledgerQuery':
      return head;
    case 'ledgerReport': {
      const r = message.record;
      return `${head} term=${r.term} ack=${r.ackIndex}/${r.ackTerm} vote=${r.votedFor}@${r.voteTerm}`;
    }
    case 'propose':
      return `${head} commands=${message.commands.length}`;
    case 'proposeRefused':
      return `${head} ${message.reason} commands=${message.commands.length}`;
    case 'readIndex':
      return `${head} contexts=${message.contexts.length}`;
    case 'readIndexResponse':
      return `${head} contexts=${message.contexts.length} index=${message.index}`;
  }
}

export function describeReady(ready: Ready): string {
  const parts: string[] = ['ready'];
  const firstEntry = ready.entries[0];
  const lastEntry = ready.entries[ready.entries.length - 1];
  if (firstEntry !== undefined && lastEntry !== undefined) {
    parts.push(`append ${firstEntry.index}..${lastEntry.index}`);
  }
  const firstCommitted = ready.committed[0];
  const lastCommitted = ready.committed[ready.committed.length - 1];
  if (firstCommitted !== undefined && lastCommitted !== undefined) {
    parts.push(`apply ${firstCommitted.index}..${lastCommitted.index}`);
  }
  return parts.join(' ');
}
