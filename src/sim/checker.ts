// Raft's safety properties, checked incrementally as the driver sees each Ready, so a run is
// checked "after every step" without rescanning every log. Knowledge is global and permanent:
// once any member shows an entry committed (commit index over its log, an application, a
// client acknowledgement) it is recorded here, and every later contradiction is a violation.
import type { HardState, MemberId } from '../raft/index.js';
import type { MirrorLog } from './mirror-log.js';

export type Report = (invariant: string, detail: string) => void;

interface Known {
  readonly term: number;
  readonly chain: number;
  readonly source: string;
  /**
   * A term by which the entry was surely committed: the term of the member that showed it
   * committed. Leaders of later terms must have it (a stale leader of an older term need not).
   */
  commitTerm: number;
}

const termsMax = 1 << 20;

export class SafetyChecker {
  private readonly leaderByTerm = new Map<number, MemberId>();
  private readonly voteByMemberTerm = new Map<number, MemberId>();
  /** Log matching: a (index, term) pair names exactly one log prefix, cluster-wide. */
  private readonly chainByPosition = new Map<number, number>();
  private readonly committed = new Map<number, Known>();
  private committedIndexMax = 0;
  /** State machine safety: the running hash of the applied sequence at each index. */
  private readonly appliedHashByIndex = new Map<number, { hash: number; member: MemberId }>();

  constructor(private readonly report: Report) {}

  onLogEntry(member: MemberId, index: number, term: number, chain: number): void {
    const key = positionKey(index, term);
    const known = this.chainByPosition.get(key);
    if (known === undefined) {
      this.chainByPosition.set(key, chain);
    } else if (known !== chain) {
      this.report('log matching', `member ${member} has entry ${index}/term ${term} with a different log prefix`);
    }
  }

  /** The chain hash some member recorded for (index, term), for snapshot points. */
  chainOf(index: number, term: number): number | undefined {
    if (index === 0) return 0;
    return this.chainByPosition.get(positionKey(index, term));
  }

  onLeader(member: MemberId, term: number, log: MirrorLog): void {
    const other = this.leaderByTerm.get(term);
    if (other !== undefined && other !== member) {
      this.report('one leader per term', `members ${other} and ${member} both lead term ${term}`);
    }
    this.leaderByTerm.set(term, member);
    this.checkLeaderCompleteness(member, term, log);
  }

  /** Every entry committed in an earlier term is in the new leader's log. */
  private checkLeaderCompleteness(member: MemberId, term: number, log: MirrorLog): void {
    // The highest entry committed by an earlier term stands for all below it: log matching
    // covers the rest.
    for (let index = this.committedIndexMax; index > log.snapshotIndex; index--) {
      const known = this.committed.get(index);
      if (known === undefined || known.commitTerm >= term) continue;
      const chain = log.chainAt(index);
      if (chain === undefined) {
        this.report(
          'leader completeness',
          `leader ${member} of term ${term} ends at ${log.lastIndex}, missing committed entry ${index} (${known.source})`,
        );
      } else if (chain !== known.chain) {
        this.report(
          'leader completeness',
          `leader ${member} of term ${term} has a different entry at committed index ${index} (${known.source})`,
        );
      }
      return;
    }
  }

  onVoteGranted(voter: MemberId, candidate: MemberId, term: number): void {
    const key = memberTermKey(voter, term);
    const earlier = this.voteByMemberTerm.get(key);
    if (earlier !== undefined && earlier !== candidate) {
      this.report('one vote per term', `member ${voter} voted for ${earlier} and ${candidate} in term ${term}`);
    }
    this.voteByMemberTerm.set(key, candidate);
  }

  /** A member's hard state changed: terms and commit never go back, a vote never changes. */
  onHardState(member: MemberId, previous: HardState, next: HardState, log: MirrorLog): void {
    if (next.term < previous.term) {
      this.report('term monotonic', `member ${member} went from term ${previous.term} to ${next.term}`);
    }
    if (next.term === previous.term && previous.vote !== 0 && next.vote !== previous.vote) {
      this.report('one vote per term', `member ${member} changed its vote in term ${next.term}`);
    }
    if (next.commit < previous.commit) {
      this.report('commit monotonic', `member ${member} commit went from ${previous.commit} to ${next.commit}`);
    }
    if (next.commit > log.lastIndex) {
      this.report('commit within log', `member ${member} commits ${next.commit} past its log end ${log.lastIndex}`);
    }
    const from = Math.max(previous.commit, log.snapshotIndex) + 1;
    for (let index = from; index <= Math.min(next.commit, log.lastIndex); index++) {
      const term = log.termAt(index) as number;
      const chain = log.chainAt(index) as number;
      this.onCommitted(index, term, chain, next.term, `committed by member ${member}`);
    }
  }

  onCommitted(index: number, term: number, chain: number, commitTerm: number, source: string): void {
    const known = this.committed.get(index);
    if (known === undefined) {
      this.committed.set(index, { term, chain, source, commitTerm });
      if (index > this.committedIndexMax) this.committedIndexMax = index;
      return;
    }
    if (known.chain !== chain) {
      const invariant = source.startsWith('ack') || known.source.startsWith('ack')
        ? 'acknowledged entry kept'
        : 'committed entry never changes';
      this.report(invariant, `index ${index}: ${known.source} (term ${known.term}) vs ${source} (term ${term})`);
    } else if (commitTerm < known.commitTerm) {
      known.commitTerm = commitTerm;
    }
  }

  /** A member's applied state reached `index` with running hash `hash` (by apply or restore). */
  onApplied(member: MemberId, index: number, hash: number): void {
    const known = this.appliedHashByIndex.get(index);
    if (known === undefined) {
      this.appliedHashByIndex.set(index, { hash, member });
    } else if (known.hash !== hash) {
      this.report(
        'state machine safety',
        `members ${known.member} and ${member} applied different sequences up to index ${index}`,
      );
    }
  }

  committedEntry(index: number): Known | undefined {
    return this.committed.get(index);
  }
}

function positionKey(index: number, term: number): number {
  return index * termsMax + Math.min(term, termsMax - 1);
}

function memberTermKey(member: MemberId, term: number): number {
  return term * 65536 + member;
}
