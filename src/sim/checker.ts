// Raft's safety properties, checked incrementally as the driver sees each Ready, so a run is
// checked "after every step" without rescanning every log. Knowledge is global and permanent:
// once any member shows an entry committed (commit index over its log, an application, a
// client acknowledgement) it is recorded here, and every later contradiction is a violation.
import type { HardState, MemberId } from '../raft/index.js';
import { DenseColumn, noValue } from './dense-column.js';
import type { MirrorLog } from './mirror-log.js';

export type Report = (invariant: string, detail: string) => void;

/** How the checker learned that an entry is committed. */
export const CommitSource = { commitIndex: 0, applied: 1, acknowledged: 2 } as const;
export type CommitSource = (typeof CommitSource)[keyof typeof CommitSource];
const sourceNames = ['committed by member', 'applied by member', 'acknowledged by member'] as const;

export class SafetyChecker {
  private readonly leaderByTerm = new Map<number, MemberId>();
  private readonly voteByMemberTerm = new Map<number, MemberId>();
  /**
   * Log matching: an (index, term) pair names exactly one log prefix, cluster-wide. The first
   * term seen at an index lives in the dense columns; other terms at that index (rare) in a map.
   */
  private readonly positionTerm = new DenseColumn();
  private readonly positionChain = new DenseColumn();
  private readonly otherPositions = new Map<string, number>();
  /** Entries known committed: term, prefix hash, and a term by which they surely were. */
  private readonly committedTerm = new DenseColumn();
  private readonly committedChain = new DenseColumn();
  /**
   * The term of the member that showed the entry committed. Leaders of later terms must have it;
   * a stale leader of an older term (elected before the commit) need not.
   */
  private readonly committedByTerm = new DenseColumn();
  private readonly committedSource = new DenseColumn();
  private readonly committedMember = new DenseColumn();
  private committedIndexMax = 0;
  /** State machine safety: the running hash of the applied sequence at each index. */
  private readonly appliedHash = new DenseColumn();
  private readonly appliedMember = new DenseColumn();

  constructor(private readonly report: Report) {}

  onLogEntry(member: MemberId, index: number, term: number, chain: number): void {
    const firstTerm = this.positionTerm.get(index);
    if (firstTerm === noValue) {
      this.positionTerm.set(index, term);
      this.positionChain.set(index, chain);
      return;
    }
    let known: number | undefined;
    if (firstTerm === term) {
      known = this.positionChain.get(index);
    } else {
      known = this.otherPositions.get(`${index}/${term}`);
      if (known === undefined) this.otherPositions.set(`${index}/${term}`, chain);
    }
    if (known !== undefined && known !== chain) {
      this.report(
        'log matching',
        `member ${member} has entry ${index}/term ${term} with a different log prefix`,
      );
    }
  }

  /** The chain hash some member recorded for (index, term), for snapshot points. */
  chainOf(index: number, term: number): number | undefined {
    if (index === 0) return 0;
    if (this.positionTerm.get(index) === term) return this.positionChain.get(index);
    return this.otherPositions.get(`${index}/${term}`);
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
      const byTerm = this.committedByTerm.get(index);
      if (byTerm === noValue || byTerm >= term) continue;
      const chain = log.chainAt(index);
      const source = this.describeSource(index);
      if (chain === undefined) {
        this.report(
          'leader completeness',
          `leader ${member} of term ${term} ends at ${log.lastIndex}, missing committed entry ${index} (${source})`,
        );
      } else if (chain !== this.committedChain.get(index)) {
        this.report(
          'leader completeness',
          `leader ${member} of term ${term} has a different entry at committed index ${index} (${source})`,
        );
      }
      return;
    }
  }

  onVoteGranted(voter: MemberId, candidate: MemberId, term: number): void {
    const key = term * 65536 + voter;
    const earlier = this.voteByMemberTerm.get(key);
    if (earlier !== undefined && earlier !== candidate) {
      this.report(
        'one vote per term',
        `member ${voter} voted for ${earlier} and ${candidate} in term ${term}`,
      );
    }
    this.voteByMemberTerm.set(key, candidate);
  }

  /** A member's hard state changed: terms and commit never go back, a vote never changes. */
  onHardState(member: MemberId, previous: HardState, next: HardState, log: MirrorLog): void {
    if (next.term < previous.term) {
      this.report(
        'term monotonic',
        `member ${member} went from term ${previous.term} to ${next.term}`,
      );
    }
    if (next.term === previous.term && previous.vote !== 0 && next.vote !== previous.vote) {
      this.report('one vote per term', `member ${member} changed its vote in term ${next.term}`);
    }
    if (next.commit < previous.commit) {
      this.report(
        'commit monotonic',
        `member ${member} commit went from ${previous.commit} to ${next.commit}`,
      );
    }
    if (next.commit > log.lastIndex) {
      this.report(
        'commit within log',
        `member ${member} commits ${next.commit} past its log end ${log.lastIndex}`,
      );
    }
    const from = Math.max(previous.commit, log.snapshotIndex) + 1;
    for (let index = from; index <= Math.min(next.commit, log.lastIndex); index++) {
      const term = log.termAt(index) as number;
      const chain = log.chainAt(index) as number;
      this.onCommitted(index, term, chain, next.term, CommitSource.commitIndex, member);
    }
  }

  onCommitted(
    index: number,
    term: number,
    chain: number,
    byTerm: number,
    source: CommitSource,
    member: MemberId,
  ): void {
    const knownChain = this.committedChain.get(index);
    if (knownChain === noValue) {
      this.committedTerm.set(index, term);
      this.committedChain.set(index, chain);
      this.committedByTerm.set(index, byTerm);
      this.committedSource.set(index, source);
      this.committedMember.set(index, member);
      if (index > this.committedIndexMax) this.committedIndexMax = index;
      return;
    }
    if (knownChain !== chain) {
      const acknowledged =
        source === CommitSource.acknowledged ||
        this.committedSource.get(index) === CommitSource.acknowledged;
      this.report(
        acknowledged ? 'acknowledged entry kept' : 'committed entry never changes',
        `index ${index}: ${this.describeSource(index)} (term ${this.committedTerm.get(index)}) vs ` +
          `${sourceNames[source]} ${member} (term ${term})`,
      );
    } else if (byTerm < this.committedByTerm.get(index)) {
      this.committedByTerm.set(index, byTerm);
    }
  }

  /** A member's applied state reached `index` with running hash `hash` (by apply or restore). */
  onApplied(member: MemberId, index: number, hash: number): void {
    const known = this.appliedHash.get(index);
    if (known === noValue) {
      this.appliedHash.set(index, hash);
      this.appliedMember.set(index, member);
    } else if (known !== hash) {
      this.report(
        'state machine safety',
        `members ${this.appliedMember.get(index)} and ${member} applied different sequences up to index ${index}`,
      );
    }
  }

  private describeSource(index: number): string {
    const source = this.committedSource.get(index) as CommitSource;
    return `${sourceNames[source]} ${this.committedMember.get(index)}`;
  }
}
