// Membership changes on a running cell, the way an etcd operator expects them: a new member
// joins as a learner (it receives the log or a snapshot but does not vote), is promoted to voter
// once it has caught up, and any member can be removed. Each change is one joint-consensus step
// of the Raft core (enterJoint, then the leader's own leaveJoint); its entry carries the whole
// member table (names, URLs), so every replica learns where the members are from the log. One
// change at a time, on the leader. The peer transport follows the committed configuration
// through MemberPeers (member-peers.ts).
import { assert } from '../base/assert.js';
import {
  InvalidArgumentError,
  KeyNotFoundError,
  PreconditionFailedError,
  TimeoutError,
  UnavailableError,
} from '../base/errors.js';
import { membersRecordBytesMax } from '../mvcc/members-record.js';
import {
  EntryType, applyConfChange, decodeConfEntry, type ConfChange, type ConfState, type Entry, type ProposeResult, type RaftStatus,
  type Snapshot,
} from '../raft/index.js';
import {
  decodeMembersRecord, encodeMembersRecord, recordedChangesMax, type MemberDirectory, type MemberInfo, type RecordedChange,
} from './member-directory.js';
import { MemberPeers, allMemberIds, type PeerDialer } from './member-peers.js';
import type { Timers } from '../base/timers.js';

export type MemberRole = 'voter' | 'learner';
export interface MemberView extends MemberInfo {
  readonly role: MemberRole;
}

export interface NewMember {
  readonly name: string;
  readonly peerUrl: string;
  readonly clientUrl: string;
}

export interface AddedMember {
  readonly member: MemberView;
  /** What the new node starts with: `--initial-cluster` and `--initial-cluster-clients`. */
  readonly initialCluster: string;
  readonly initialClusterClients: string;
}

export interface MembershipOptions {
  /** A learner is promoted only when at most this many committed entries behind the leader. */
  readonly promoteLagEntriesMax: number;
  readonly learnersMax: number;
  readonly membersMax: number;
  /** Removed peers' connections close this long after the change (queued messages leave first). */
  readonly removeDelayMs: number;
}

export const defaultMembershipOptions: MembershipOptions = {
  promoteLagEntriesMax: 1000,
  learnersMax: 2,
  membersMax: 9,
  removeDelayMs: 2000,
};

interface ChangeWaiter {
  readonly done: (conf: ConfState) => boolean;
  readonly resolve: () => void;
}

/** What membership needs from the node's configuration. */
export interface MembershipConfig {
  readonly memberId: number;
  readonly peerDial: ReadonlyMap<string, { host: string; port: number }>;
  readonly electionTicks: number;
  readonly tickMs: number;
  readonly requestTimeoutMs: number;
}

/** What membership needs from the node's driver (the Raft core's only caller). */
export interface MembershipDriver {
  readonly isLeader: boolean;
  readonly leaderId: number;
  status(): RaftStatus;
  proposeConfChange(change: ConfChange): ProposeResult;
  transferLeadership(to: number): void;
  /** Sends what is pending now (a proposed change, once its new member's address is known). */
  flush(): void;
}

function isJoint(conf: ConfState): boolean {
  return conf.votersOutgoing.length > 0;
}

export class Membership {
  private changeInFlight: string | null = null;
  private readonly waiters = new Set<ChangeWaiter>();

  constructor(
    private readonly config: MembershipConfig,
    private readonly driver: MembershipDriver,
    private readonly store: { membersRecord(): string | null },
    private readonly directory: MemberDirectory,
    /** Built before the driver (memberPeersOf): the driver's messages go out through it. */
    private readonly peers: MemberPeers,
    private readonly timers: Timers,
    private readonly log: { info(message: string): void; warn(message: string): void },
    private readonly options: MembershipOptions = defaultMembershipOptions,
  ) {}

  /**
   * Dials the members of the configuration (everyone known, while this node is not in it).
   * `joined`: this node joined a running cell, so not being in the configuration yet is normal;
   * a node that bootstrapped the cell and is not in it was removed.
   */
  start(joined: boolean): void {
    const conf = this.driver.status().confState;
    if (!joined && conf.voters.length > 0 && !allMemberIds(conf).includes(this.config.memberId)) {
      this.peers.markSelfRemoved(0);
      return;
    }
    const member = allMemberIds(conf).includes(this.config.memberId);
    if (member) this.peers.refuseRemoved();
    this.peers.dialAll(member
      ? allMemberIds(conf)
      : [...new Set([...allMemberIds(conf), ...this.directory.all().map((m) => m.id)])]);
  }

  get removed(): boolean {
    return this.peers.removed;
  }

  /**
   * Member `peer` applied this member's removal, which this member never received (it was cut off
   * or down meanwhile): it stops as if it had applied it, instead of dialling and campaigning on.
   * Only a peer that saw the removal says so; a peer that merely does not know this member yet (it
   * has not applied this member's addition) refuses it as unknown, which stops nothing.
   */
  removedByPeer(peer: number): void {
    if (this.peers.removed) return;
    this.log.warn(`membership: member ${peer} says this member was removed from the cell`);
    this.peers.markSelfRemoved(0);
  }

  /** Whether this node is in the configuration it has applied (a joining node is not, at first). */
  isMember(): boolean {
    return allMemberIds(this.driver.status().confState).includes(this.config.memberId);
  }

  /**
   * The applied configuration, not the core's: the core takes a snapshot's configuration as soon
   * as it receives it, while the member table with the new members' URLs arrives with the restore
   * (a member caught up by snapshot listed the new one with no URLs in between).
   */
  members(): MemberView[] {
    const conf = this.peers.appliedConf;
    const voters = new Set([...conf.voters, ...conf.votersOutgoing]);
    return allMemberIds(conf).map((id) => {
      const info = this.directory.get(id) ?? { id, name: `member-${id}`, peerUrl: '', clientUrl: '' };
      return { ...info, role: voters.has(id) ? 'voter' : 'learner' };
    });
  }

  /** The leader's client URL, '' when this node leads, null when no leader is known. */
  leaderClientUrl(): string | null {
    if (this.driver.isLeader) return '';
    const leader = this.driver.leaderId;
    if (leader === 0) return null;
    const url = this.directory.get(leader)?.clientUrl ?? '';
    return url === '' ? null : url;
  }

  /**
   * Adds a learner. With a Request-ID that an earlier change recorded, answers that change's
   * outcome instead (a retry; the caller has read linearizably first, so a committed change is
   * applied here). The same for promote and remove.
   */
  async add(input: NewMember, requestId?: string): Promise<AddedMember> {
    const earlier = this.earlierChange(requestId, 'add');
    if (earlier !== null) return this.addedView({ ...earlier.member, role: earlier.role });
    const conf = this.beginChange();
    const current = this.members();
    for (const member of current) {
      // The peer URL first: a name may be derived from it (a learner added through the etcd facade).
      if (member.peerUrl === input.peerUrl) {
        throw new InvalidArgumentError(`peerUrl ${input.peerUrl} is already member ${member.id}'s`, { reason: 'peer_url_exists', member: member.id });
      }
      if (member.name === input.name) throw new InvalidArgumentError(`name ${input.name} is already member ${member.id}'s`);
      // '' = not known yet (a learner registered through the etcd facade, which names no client URL).
      if (input.clientUrl !== '' && member.clientUrl === input.clientUrl) throw new InvalidArgumentError(`clientUrl ${input.clientUrl} is already member ${member.id}'s`);
    }
    if (current.length >= this.options.membersMax) {
      throw new PreconditionFailedError(`the cell has ${current.length} members, the most it takes`, { reason: 'too_many_members' });
    }
    if (conf.learners.length >= this.options.learnersMax) {
      throw new PreconditionFailedError(`the cell already has ${conf.learners.length} learners: promote or remove one first`,
        { reason: 'too_many_learners' });
    }
    const id = Math.max(this.directory.maxMemberId, ...allMemberIds(conf)) + 1;
    const added: MemberInfo = { id, ...input };
    await this.change(conf, { type: 'addLearner', id }, `add ${input.name} as learner ${id}`,
      (next) => next.learners.includes(id), added, recorded(requestId, 'add', added, 'learner'));
    return this.addedView({ ...added, role: 'learner' });
  }

  private addedView(member: MemberView): AddedMember {
    const everyone = this.members();
    return {
      member,
      initialCluster: everyone.map((m) => `${m.name}=${m.peerUrl}`).join(','),
      initialClusterClients: everyone.map((m) => `${m.name}=${m.clientUrl}`).join(','),
    };
  }

  /** The recorded change a retry with `requestId` repeats; a different kind of change is refused. */
  private earlierChange(requestId: string | undefined, kind: RecordedChange['kind']): RecordedChange | null {
    if (requestId === undefined) return null;
    const earlier = this.recordedChanges().find((change) => change.requestId === requestId);
    if (earlier === undefined) return null;
    if (earlier.kind !== kind) {
      throw new InvalidArgumentError(`Request-ID ${requestId} was used for another membership change (${earlier.kind} member ${earlier.member.id})`);
    }
    return earlier;
  }

  private recordedChanges(): readonly RecordedChange[] {
    const text = this.store.membersRecord();
    return (text === null ? null : decodeMembersRecord(text))?.changes ?? [];
  }

  async promote(id: number, requestId?: string): Promise<MemberView> {
    const earlier = this.earlierChange(requestId, 'promote');
    if (earlier !== null) return { ...earlier.member, role: earlier.role };
    const conf = this.beginChange();
    if (conf.voters.includes(id)) throw new PreconditionFailedError(`member ${id} is already a voter`, { reason: 'already_voter' });
    if (!conf.learners.includes(id)) throw new KeyNotFoundError(`member ${id} is not in the cell`, { member: id });
    const status = this.driver.status();
    const progress = status.progress.get(id);
    const match = progress?.match ?? 0;
    const lag = status.commitIndex - match;
    if (progress === undefined || progress.state !== 'replicate' || lag > this.options.promoteLagEntriesMax) {
      // Like etcd's "learner not in sync": a voter that must first catch up would weaken the quorum.
      throw new PreconditionFailedError(
        `learner ${id} is not in sync with the leader (has ${match} of ${status.commitIndex} committed entries, ` +
          `${progress?.state ?? 'unknown'}); promote it once it has caught up`,
        { reason: 'learner_not_in_sync', match, commitIndex: status.commitIndex },
      );
    }
    if (this.directory.get(id)?.clientUrl === '') {
      // Members forward writes and membership changes to the leader's client URL: a voter without
      // one could lead a cell whose other members cannot reach it.
      throw new PreconditionFailedError(
        `learner ${id} was registered without a client URL (through etcd's MemberAdd), so the cell could not forward ` +
          'to it once it led; remove it and add it with `baton member add NAME --peer-url URL --client-url URL`',
        { reason: 'no_client_url', member: id },
      );
    }
    const view = this.viewOf(id, 'voter');
    await this.change(conf, { type: 'addVoter', id }, `promote learner ${id}`, (next) => next.voters.includes(id),
      null, recorded(requestId, 'promote', view, 'voter'));
    return view;
  }

  /**
   * Before the leader removes itself it hands leadership to the most caught-up other voter, so the
   * cell is not left without a leader for an election timeout once the removal commits. Resolves
   * once another member leads; UnavailableError when none took over within two election timeouts.
   */
  async handOffLeadership(): Promise<void> {
    if (!this.driver.isLeader) return;
    const self = this.config.memberId;
    // A removal that would be refused (another change in progress, the last voter, no quorum
    // left) is refused here, before leadership moves for nothing.
    const conf = this.checkRemovable(self);
    const status = this.driver.status();
    const best = conf.voters
      .filter((id) => id !== self)
      .map((id) => ({ id, match: status.progress.get(id)?.match ?? 0 }))
      .sort((a, b) => b.match - a.match)[0];
    if (best === undefined) throw new PreconditionFailedError(`member ${self} is the last voter: a cell needs one`, { reason: 'last_voter' });
    this.log.info(`membership: handing leadership to member ${best.id} before removing this member`);
    this.driver.transferLeadership(best.id);
    this.driver.flush();
    await this.leaderOtherThan(self, 'retry the removal');
  }

  /**
   * A graceful stop (SIGTERM): a leader hands leadership to the most caught-up voter that is in
   * contact, so the cell does not wait an election timeout for a leader (etcd does the same on
   * stop). Resolves once another member leads, or at once when this node does not lead or has no
   * voter to hand to; a transfer that does not complete within two election timeouts is given up
   * (the stop goes on: the others elect a leader as after a crash).
   */
  async leaveLeadership(): Promise<string> {
    if (!this.driver.isLeader) return 'not the leader';
    const self = this.config.memberId;
    const status = this.driver.status();
    // In contact: heard from within the last election timeout (src/raft/contact.ts).
    const inContact = new Set(status.inContact ?? []);
    const best = status.confState.voters
      .filter((id) => id !== self && inContact.has(id))
      .map((id) => ({ id, match: status.progress.get(id)?.match ?? 0 }))
      .sort((a, b) => b.match - a.match)[0];
    if (best === undefined) return 'no other voter in contact to hand leadership to';
    this.log.info(`membership: stopping: handing leadership to member ${best.id}`);
    this.driver.transferLeadership(best.id);
    this.driver.flush();
    try {
      // Every member stopped at once (a whole cell shut down): the one chosen closes its
      // connection on its way out, and waiting out the transfer would only delay the stop.
      await this.leaderOtherThan(self, 'stopping anyway',
        () => (this.peers.isConnected(best.id) ? null : `member ${best.id} went away before taking over; stopping anyway`));
      return `member ${this.driver.leaderId} leads`;
    } catch (error) {
      return (error as Error).message;
    }
  }

  /**
   * Hands leadership to voter `to` (etcd's MoveLeader) and resolves once this node sees it lead.
   * Leader only; `to` being this leader changes nothing. UnavailableError when the transfer did not
   * complete within two election timeouts (Raft abandons a transfer after one).
   */
  async transferLeadership(to: number): Promise<void> {
    if (!this.driver.isLeader) throw new UnavailableError('not the leader: leadership is moved by the leader', { reason: 'not_leader' });
    const self = this.config.memberId;
    if (to === self) return;
    if (!this.driver.status().confState.voters.includes(to)) {
      throw new PreconditionFailedError(`member ${to} is not a voter of the cell: it cannot lead`, { reason: 'bad_transferee', member: to });
    }
    this.log.info(`membership: transferring leadership to member ${to}`);
    this.driver.transferLeadership(to);
    this.driver.flush();
    await this.leaderOtherThan(self, 'retry the transfer');
    if (this.driver.leaderId !== to) {
      throw new UnavailableError(`member ${this.driver.leaderId} took over leadership instead of member ${to}`, { reason: 'transfer_failed' });
    }
  }

  /** Resolves once a member other than `self` leads; UnavailableError after two election timeouts. */
  private async leaderOtherThan(self: number, advice: string, hopeless: () => string | null = () => null): Promise<void> {
    const timeoutMs = 2 * this.config.electionTicks * this.config.tickMs;
    const deadline = this.timers.monotonicMs() + timeoutMs;
    while (this.driver.isLeader || this.driver.leaderId === 0 || this.driver.leaderId === self) {
      if (this.timers.monotonicMs() > deadline) {
        throw new UnavailableError(`no member took over leadership within ${timeoutMs} ms; ${advice}`, { reason: 'transfer_timeout' });
      }
      const why = hopeless();
      if (why !== null) throw new UnavailableError(why, { reason: 'transfer_failed' });
      await new Promise<void>((resolve) => this.timers.setTimeout(resolve, 20));
    }
  }

  /** Whether `id` is this member. */
  isSelf(id: number): boolean {
    return id === this.config.memberId;
  }

  async remove(id: number, requestId?: string): Promise<MemberView> {
    const earlier = this.earlierChange(requestId, 'remove');
    if (earlier !== null) return { ...earlier.member, role: earlier.role };
    const conf = await this.removableSoon(id);
    const view = this.viewOf(id, conf.voters.includes(id) ? 'voter' : 'learner');
    await this.change(conf, { type: 'remove', id }, `remove member ${id}`, (next) => !allMemberIds(next).includes(id),
      null, recorded(requestId, 'remove', view, view.role));
    return view;
  }

  /** A retried removal of this leader itself is answered here, before any hand-off. */
  isRecordedRemoval(requestId: string | undefined): boolean {
    return this.earlierChange(requestId, 'remove') !== null;
  }

  /**
   * checkRemovable, giving the followers up to one election timeout to be counted in contact: a
   * leader elected a moment ago (the hand-off before the old leader's own removal) has every
   * follower in probe until they answer its first append, and would refuse at once.
   */
  private async removableSoon(id: number): Promise<ConfState> {
    const deadline = this.timers.monotonicMs() + this.config.electionTicks * this.config.tickMs;
    for (;;) {
      try {
        return this.checkRemovable(id);
      } catch (error) {
        const unhealthy = error instanceof PreconditionFailedError && error.details['reason'] === 'unhealthy_cell';
        if (!unhealthy || this.timers.monotonicMs() > deadline) throw error;
      }
      await new Promise<void>((resolve) => this.timers.setTimeout(resolve, 20));
    }
  }

  /** The configuration to change, or the reason `id` cannot be removed now (thrown). */
  private checkRemovable(id: number): ConfState {
    const conf = this.beginChange();
    if (!allMemberIds(conf).includes(id)) throw new KeyNotFoundError(`member ${id} is not in the cell`, { member: id });
    if (conf.voters.length === 1 && conf.voters[0] === id) {
      throw new PreconditionFailedError(`member ${id} is the last voter: a cell needs one`, { reason: 'last_voter' });
    }
    if (conf.voters.includes(id)) this.checkQuorumAfterRemoving(id, conf);
    return conf;
  }

  // --- what the driver tells it (a DriverListener) ------------------------------------------

  /** The transport follows each applied configuration; changes waited for may be complete. */
  onApplied(entries: readonly Entry[]): void {
    for (const entry of entries) {
      if (entry.type === EntryType.config) this.peers.follow(decodeConfEntry(entry.data).confState);
    }
    this.completeWaiters();
  }

  /** A snapshot replaced the state: its configuration and member table are the news. */
  onRestored(snapshot: Snapshot): void {
    this.peers.follow(snapshot.meta.confState);
    this.completeWaiters();
  }

  private completeWaiters(): void {
    if (this.waiters.size === 0) return;
    const conf = this.driver.status().confState;
    if (isJoint(conf)) return;
    for (const waiter of this.waiters) {
      if (!waiter.done(conf)) continue;
      this.waiters.delete(waiter);
      waiter.resolve();
    }
  }

  /**
   * Like etcd's strict reconfiguration check: refuse to remove a voter when the voters left would
   * not include a quorum the leader is replicating to (one down, another removed: the cell would
   * stop until the first comes back).
   */
  private checkQuorumAfterRemoving(id: number, conf: ConfState): void {
    const status = this.driver.status();
    const remaining = conf.voters.filter((voter) => voter !== id);
    // In contact: heard from within the last election timeout (src/raft/contact.ts), whatever its
    // progress state (an idle follower back from an outage may still be in probe).
    const contact = new Set(status.inContact ?? []);
    const inContact = remaining.filter((voter) => voter === this.config.memberId || contact.has(voter));
    const quorum = Math.floor(remaining.length / 2) + 1;
    if (inContact.length < quorum) {
      throw new PreconditionFailedError(
        `removing member ${id} would leave ${inContact.length} of ${remaining.length} voters in contact with ` +
          `the leader, fewer than the ${quorum} a quorum needs; bring the others back first`,
        { reason: 'unhealthy_cell', inContact, remaining },
      );
    }
  }

  private viewOf(id: number, role: MemberRole): MemberView {
    const info = this.directory.get(id) ?? { id, name: `member-${id}`, peerUrl: '', clientUrl: '' };
    return { ...info, role };
  }

  /** Leader only, one change at a time: the configuration the change starts from. */
  private beginChange(): ConfState {
    if (!this.driver.isLeader) throw new UnavailableError('not the leader: membership changes go to the leader');
    const conf = this.driver.status().confState;
    if (this.changeInFlight !== null || isJoint(conf)) {
      throw new PreconditionFailedError(
        `a membership change is in progress (${this.changeInFlight ?? 'joint consensus'}); retry when it is done`,
        { reason: 'change_in_progress' },
      );
    }
    return conf;
  }

  private async change(
    conf: ConfState,
    item: { type: 'addVoter' | 'addLearner' | 'remove'; id: number },
    what: string,
    done: (next: ConfState) => boolean,
    added: MemberInfo | null = null,
    record: RecordedChange | null = null,
  ): Promise<void> {
    const next = applyConfChange(conf, { type: 'enterJoint', changes: [item] });
    const members = allMemberIds(next).map((id) => (id === added?.id ? added : this.directory.get(id)));
    const known = members.filter((m): m is MemberInfo => m !== undefined);
    if (known.length !== members.length) {
      throw new UnavailableError('this leader does not know every member\'s URLs yet; retry shortly');
    }
    const maxMemberId = Math.max(this.directory.maxMemberId, added?.id ?? 0);
    // The change history goes on with every table, so a change without a Request-ID keeps it too.
    const earlier = this.recordedChanges();
    const changes = record === null ? earlier : [...earlier, record].slice(-recordedChangesMax);
    const context = encodeMembersRecord({ version: 1, maxMemberId, members: known, ...(changes.length > 0 ? { changes } : {}) });
    // Bounded by construction (members, URL and Request-ID sizes, 16 changes); the store would not keep a bigger one.
    assert(Buffer.byteLength(context) <= membersRecordBytesMax, 'the member table fits its record');
    const change: ConfChange = { type: 'enterJoint', changes: [item], context };
    const result = this.driver.proposeConfChange(change);
    if (!result.ok) {
      if (result.reason === 'confChangePending') {
        throw new PreconditionFailedError('a membership change is in progress; retry when it is done',
          { reason: 'change_in_progress' });
      }
      if (result.reason === 'invalidConfChange') throw new InvalidArgumentError(`${what}: not a valid change now`);
      throw new UnavailableError(`the leader cannot take the change now (${result.reason})`);
    }
    // The leader dials the new member as soon as it starts replicating to it (before the apply).
    if (added !== null) this.directory.merge([added], added.id);
    this.changeInFlight = what;
    this.log.info(`membership: proposed ${what} at index ${result.index}`);
    try {
      this.driver.flush();
      await this.waitFor(done);
      this.log.info(`membership: ${what} is committed`);
    } finally {
      this.changeInFlight = null;
    }
  }

  private waitFor(done: (next: ConfState) => boolean): Promise<void> {
    return new Promise((resolve, reject) => {
      const timeoutMs = 2 * this.config.requestTimeoutMs;
      const waiter: ChangeWaiter = {
        done,
        resolve: () => {
          timer.cancel();
          resolve();
        },
      };
      const timer = this.timers.setTimeout(() => {
        this.waiters.delete(waiter);
        reject(new TimeoutError(`the membership change did not complete within ${timeoutMs} ms: check GET /v1/cluster/members`));
      }, timeoutMs);
      this.waiters.add(waiter);
      this.completeWaiters();
    });
  }
}

function recorded(
  requestId: string | undefined,
  kind: RecordedChange['kind'],
  member: MemberInfo,
  role: MemberRole,
): RecordedChange | null {
  if (requestId === undefined) return null;
  const { id, name, peerUrl, clientUrl } = member;
  return { requestId, kind, member: { id, name, peerUrl, clientUrl }, role };
}

/**
 * The peer connections that follow the committed configuration, built before the driver (its
 * messages go out through them) from the member table the store recorded.
 */
export function memberPeersOf(
  config: Pick<MembershipConfig, 'memberId' | 'peerDial'>,
  confState: ConfState,
  store: { membersRecord(): string | null },
  directory: MemberDirectory,
  transport: PeerDialer,
  timers: Timers,
  log: { info(message: string): void; warn(message: string): void },
  /** Called once this member has been removed (like etcd, the process then stops). */
  onRemoved: () => void,
  options: MembershipOptions = defaultMembershipOptions,
): MemberPeers {
  directory.mergeRecordText(store.membersRecord());
  return new MemberPeers(
    { memberId: config.memberId, peerDial: config.peerDial, removeDelayMs: options.removeDelayMs },
    confState, store, directory, transport, timers, log, onRemoved,
  );
}
