// The Raft core's API (RaftApi): the world comes in through tick/step/propose and leaves through
// ready(); advance() says what the caller made durable. The protocol lives in the files this one
// calls: election.ts, replication-leader.ts, replication-follower.ts, reads.ts, membership.ts,
// over the state in node-state.ts. Pure and synchronous; every invariant it relies on is asserted.
import { assert } from '../base/assert.js';
import type { Random } from '../base/random.js';
import { tickElection, tickLeader, hup } from './election.js';
import { inContactView } from './contact.js';
import { applyEntryMembership, compactConfHistory, confStateAt, maybeLeaveJoint, proposeConfChange } from './membership.js';
import { NodeState } from './node-state.js';
import { peerCannotAnswer, startRecovery, tickRecovery } from './peer-ledger.js';
import { ProgressState } from './progress.js';
import { flushForwardedReads, requestRead } from './reads.js';
import { flushForwardedProposals } from './replication-follower.js';
import { appendProposal, commitAndAnnounce, flushBroadcast, sendAppend, sendOwedCommitNotices } from './replication-leader.js';
import { stepMessage } from './step.js';
import {
  EntryType,
  noMember,
  Role,
  type ConfChange,
  type Entry,
  type HardState,
  type MemberId,
  type PeerRecord,
  type ProposeResult,
  type RaftApi,
  type RaftConfig,
  type RaftMessage,
  type RaftStatus,
  type Ready,
  type RecoveredState,
  type Snapshot,
  type SnapshotMeta,
  type SoftState,
} from './types.js';

export class RaftNode implements RaftApi {
  readonly id: MemberId;
  private readonly node: NodeState;
  /** What the last Ready reported (a Ready carries hard and soft state only when they changed). */
  private lastHardState: HardState;
  private lastSoftState: SoftState;

  constructor(config: RaftConfig, recovered: RecoveredState, random: Random) {
    const node = new NodeState(config, recovered, random);
    this.node = node;
    this.id = node.id;
    const log = node.log;
    const applied = Math.max(recovered.appliedIndex, log.snapshotIndex);
    const commit = Math.max(recovered.hardState.commit, applied);
    assert(commit <= log.lastIndex(), 'recovered commit index is within the recovered log');
    log.commitTo(commit);
    // The state machine already applied up to `applied`: replay only the membership it implies.
    for (let index = log.snapshotIndex + 1; index <= applied; index++) applyEntryMembership(node, log.entry(index));
    log.recoverApplied(applied);
    this.lastHardState = node.hardState();
    this.lastSoftState = { leader: noMember, role: Role.follower };
    node.resetElectionTimer();
    // Also a member whose disk says it never promised anything: a copy taken before its first
    // vote looks exactly like a new member (sim --older-copy seed 634). A new one is asked about
    // by nobody's ledger, so it goes on after one round trip.
    if (config.ledgerCheck === true) startRecovery(node);
  }

  tick(): void {
    if (this.node.regressed !== null) return;
    if (this.node.recovery !== null) tickRecovery(this.node);
    else if (this.node.role === Role.leader) tickLeader(this.node);
    else tickElection(this.node);
  }

  step(m: RaftMessage): void {
    stepMessage(this.node, m);
  }

  propose(data: Uint8Array): ProposeResult {
    return appendProposal(this.node, EntryType.normal, data);
  }

  forwardProposal(data: Uint8Array): boolean {
    const node = this.node;
    if (node.role === Role.leader) return this.propose(data).ok;
    if (node.role !== Role.follower || node.leader === noMember) return false;
    node.proposalsToForward.push(data);
    return true;
  }

  proposeConfChange(change: ConfChange): ProposeResult {
    return proposeConfChange(this.node, change);
  }

  readIndex(context: number): void {
    requestRead(this.node, context);
  }

  transferLeadership(to: MemberId): void {
    const node = this.node;
    if (node.role !== Role.leader || to === node.id || !node.confState.voters.includes(to)) return;
    if (node.leadTransferee === to) return;
    node.leadTransferee = to;
    // The transfer must finish within one election timeout, or it is abandoned.
    node.electionElapsed = 0;
    const progress = node.progressOf(to);
    if (progress.match === node.log.lastIndex()) node.send({ type: 'timeoutNow', to });
    else sendAppend(node, to, true);
  }

  /** Followers are owed the commit index (deferred notices): the driver calls sendOwedCommitNotices after a short delay. */
  hasOwedCommitNotices(): boolean {
    return this.node.commitOwed.size > 0;
  }

  /** The owed commit notices leave with the next Ready (to followers no append has told since). */
  sendOwedCommitNotices(): void {
    sendOwedCommitNotices(this.node);
  }

  campaign(): void {
    hup(this.node, false);
  }

  advanceElectionClock(): void {
    const node = this.node;
    if (node.role !== Role.follower || node.leader !== noMember || node.recovery !== null || node.regressed !== null) return;
    node.electionElapsed = Math.max(node.electionElapsed, node.config.electionTicks - 1);
    assert(node.electionElapsed < node.randomizedElectionTicks, 'the advanced clock leaves at least one tick before the election');
  }

  reportUnreachable(to: MemberId): void {
    const progress = this.node.progress.get(to);
    if (this.node.role !== Role.leader || progress === undefined) return;
    if (progress.state === ProgressState.replicate) progress.becomeProbe();
  }

  reportSnapshot(to: MemberId, ok: boolean): void {
    const progress = this.node.progress.get(to);
    if (this.node.role !== Role.leader || progress === undefined) return;
    if (progress.state !== ProgressState.snapshot) return;
    if (!ok) progress.pendingSnapshot = 0;
    progress.becomeProbe();
    // Wait for the follower's answer to the snapshot before probing again.
    progress.probeSent = ok;
  }

  hasReady(): boolean {
    const node = this.node;
    return (
      node.appendMessages.length > 0 ||
      node.messages.length > 0 ||
      node.broadcastPending ||
      node.commitNoticeTo.size > 0 ||
      node.readsToForward.length > 0 ||
      node.proposalsToForward.length > 0 ||
      node.log.hasUnstable() ||
      node.snapshotToPersist !== null ||
      node.log.hasToApply() ||
      node.readStates.length > 0 ||
      node.droppedReads.length > 0 ||
      !sameHardState(node.hardState(), this.lastHardState) ||
      !sameSoftState(node.softState(), this.lastSoftState)
    );
  }

  ready(): Ready {
    const node = this.node;
    // Hand out committed entries first: a configuration entry among them may make the leader
    // append the leave-joint entry, which must travel in this same batch.
    const committed = this.takeCommitted();
    flushBroadcast(node);
    flushForwardedReads(node);
    flushForwardedProposals(node);
    const hardState = node.hardState();
    const softState = node.softState();
    assert(hardState.term >= this.lastHardState.term, 'the term a Ready reports never goes back');
    assert(hardState.commit >= this.lastHardState.commit, 'the commit a Ready reports never goes back');
    const hardChanged = !sameHardState(hardState, this.lastHardState);
    let appendMessages = node.appendMessages;
    let messages = node.messages;
    if (hardChanged && (hardState.term !== this.lastHardState.term || hardState.vote !== this.lastHardState.vote)) {
      // A new term or vote must be durable before anything stamped with it leaves.
      messages = [...appendMessages, ...messages];
      appendMessages = [];
    }
    const ready: Ready = {
      softState: sameSoftState(softState, this.lastSoftState) ? null : softState,
      hardState: hardChanged ? hardState : null,
      snapshot: node.snapshotToPersist,
      entries: node.log.takeUnstable(),
      appendMessages,
      messages,
      committed,
      readStates: node.readStates,
      droppedReads: node.droppedReads,
    };
    this.lastHardState = hardState;
    this.lastSoftState = softState;
    node.snapshotToPersist = null;
    node.appendMessages = [];
    node.messages = [];
    node.readStates = [];
    node.droppedReads = [];
    return ready;
  }

  /** Committed entries for the next Ready, in order and within applyBytesMax; membership follows them. */
  private takeCommitted(): Entry[] {
    const node = this.node;
    const limit = node.log.applyLimit();
    if (node.log.appliedIndex >= limit) return [];
    const from = node.log.appliedIndex + 1;
    const entries = node.log.slice(from, limit, node.config.applyBytesMax);
    assert(entries.length > 0 && entries[0]?.index === from, 'committed entries hand out from the applied index on');
    for (const entry of entries) {
      applyEntryMembership(node, entry);
      node.log.appliedTo(entry.index);
    }
    assert(node.log.appliedIndex === from + entries.length - 1, 'every handed-out entry is counted applied');
    maybeLeaveJoint(node);
    return entries;
  }

  advance(ready: Ready): void {
    const node = this.node;
    const last = ready.committed[ready.committed.length - 1];
    assert(last === undefined || last.index <= node.log.appliedIndex, 'a Ready hands out only what the log counts applied');
    if (ready.hardState !== null) assert(ready.hardState.term <= node.term, 'a Ready is from this node\'s past');
    if (ready.snapshot !== null) node.log.markSnapshotDurable(ready.snapshot.meta);
    node.log.markDurable(ready.entries);
    if (node.role === Role.leader) {
      // The leader counts itself toward commit only for what is on its own disk.
      const self = node.progressOf(node.id);
      self.maybeUpdate(node.log.durableIndex);
      assert(self.match <= node.log.durableIndex, 'the leader counts only its durable entries');
      // When the leader's own write is the last of a quorum to finish, followers learn the new
      // commit index now, not at the next heartbeat (up to a tick of latency per request).
      commitAndAnnounce(node);
    }
  }

  compact(index: number, data: Uint8Array): Snapshot {
    const node = this.node;
    assert(index > node.log.snapshotIndex, 'a new snapshot is newer than the last one');
    assert(index <= node.log.appliedIndex, 'a snapshot covers only applied entries');
    const term = node.log.term(index);
    assert(term !== undefined, 'the snapshot index is in the log');
    const snapshot: Snapshot = { meta: { index, term, confState: confStateAt(node, index) }, data };
    node.log.compactTo(index);
    node.snapshot = snapshot;
    compactConfHistory(node, index, snapshot.meta.confState);
    return snapshot;
  }

  snapshotMetaAt(index: number): SnapshotMeta | null {
    const node = this.node;
    if (index <= node.log.snapshotIndex || index > node.log.appliedIndex) return null;
    const term = node.log.term(index);
    assert(term !== undefined, 'an applied index after the snapshot is in the log');
    return { index, term, confState: confStateAt(node, index) };
  }

  ledger(): { version: number; records: (readonly [MemberId, PeerRecord])[] } {
    return { version: this.node.ledger.version, records: this.node.ledger.entries() };
  }

  reportNoLedger(peer: MemberId): void {
    peerCannotAnswer(this.node, peer);
  }

  regressed(): string | null {
    return this.node.regressed;
  }

  status(): RaftStatus {
    const node = this.node;
    const progress = new Map<MemberId, { match: number; next: number; state: string }>();
    for (const [id, pr] of node.progress) progress.set(id, pr.describe());
    return {
      id: node.id,
      term: node.term,
      vote: node.vote,
      role: node.role,
      leader: node.leader,
      commitIndex: node.log.committedIndex,
      commitTerm: node.log.term(node.log.committedIndex) ?? 0,
      appliedIndex: node.log.appliedIndex,
      lastIndex: node.log.lastIndex(),
      firstIndex: node.log.firstIndex(),
      confState: node.confState,
      progress,
      recovering: node.recovery !== null,
      regressed: node.regressed,
      inContact: inContactView(node),
    };
  }
}

function sameHardState(a: HardState, b: HardState): boolean {
  return a.term === b.term && a.vote === b.vote && a.commit === b.commit;
}

function sameSoftState(a: SoftState, b: SoftState): boolean {
  return a.leader === b.leader && a.role === b.role;
}
