// Lease holders against the production lease service of every member (the `leases` workload).
// Each session grants one or two leases through a member it picks, attaches keys to them, and
// renews them all in one keepalive every TTL/3, following errors to another member; a session
// either keeps renewing to the end of the run (a keeper) or abandons its leases at a drawn
// moment. Every answer goes to the lease checker; after the faults, the run is over only once
// every member's lease table holds nothing but live keepers' leases (the abandoned ones expired).
import { simClient } from './sim-guard.js';
import type { Random } from '../base/random.js';
import { chance, pick, randomInt } from '../base/random.js';
import type { LeaseService } from '../lease/lease-service.js';
import type { LeaseServiceOptions } from '../lease/lease-config.js';
import { encodeCommand, utf8, type ApplyOutcome, type Command, type MvccLimits } from '../mvcc/index.js';
import { defaultMvccLimits } from '../mvcc/index.js';
import type { Entry, MemberId } from '../raft/index.js';
import { LeaseChecker } from './lease-checker.js';
import { SimLeaseForwarder } from './lease-forwarder.js';
import type { SimLeaseEnv } from './lease-member.js';
import { proposalId } from './server-driver.js';
import { timedCall } from './timed-call.js';
import type { SimNode } from './sim-node.js';
import type { LeaseBugs, LeaseStats } from './types.js';
import type { World } from './world.js';

/** The cell's limits in lease runs: TTLs at the simulator's time scale (ticks of ~10 ms). */
export const simLeaseLimits: MvccLimits = { ...defaultMvccLimits, leaseTtlMsMin: 100 };

const ttlMsMin = 200;
const ttlMsMax = 1_000;
const sessionEveryMs = 60;
const sessionsMax = 16;
const keeperRate = 0.5;
const clientTimeoutMs = 600;
/** Id spaces apart from the kv client's command ids (proposal ids must be unique per member). */
const commandIdBase = 1e12;
const serviceProposalIdBase = 2e12;

function simLeaseOptions(bugs: LeaseBugs | undefined): LeaseServiceOptions {
  return {
    tracker: { expireBatchMax: 20, revokeRetryMs: 200, checkpointFraction: 0.4, checkpointBatchMax: 50 },
    checkpointIntervalMs: 50,
    revokesInFlightMax: 50,
    revokeBatch: { leasesMax: 8, keysMax: 8, inFlightMax: 2 },
    keepalivesInFlightMax: 1_000,
    keepaliveIdsMax: 100,
    requestTimeoutMs: 500,
    ...(bugs === undefined ? {} : { bugs }),
  };
}

interface Session {
  readonly n: number;
  readonly ttlMs: number;
  readonly keeper: boolean;
  readonly abandonAtMs: number;
  /** Leases granted to this session and not yet answered lease_not_found. */
  leases: number[];
  member: MemberId;
  over: boolean;
  /** world.stats.elections when a renewal was last acknowledged. */
  electionsAtAck: number;
}

export class LeaseWorkload implements SimLeaseEnv {
  readonly checker: LeaseChecker;
  readonly options: LeaseServiceOptions;
  readonly stats: LeaseStats = {
    granted: 0,
    renewalsAcked: 0,
    renewalsAcrossLeaders: 0,
    renewalsFailed: 0,
    keysAttached: 0,
    expired: 0,
    abandoned: 0,
  };
  private readonly sessions: Session[] = [];
  private nextSession = 1;
  private nextCommandId = commandIdBase;
  private nextServiceProposal = serviceProposalIdBase;

  constructor(
    private readonly world: World,
    private readonly random: Random,
    bugs: LeaseBugs | undefined,
  ) {
    this.checker = new LeaseChecker((invariant, detail) => world.report(invariant, detail));
    this.options = simLeaseOptions(bugs);
    world.stats.leases = this.stats;
  }

  /** Sessions start every sessionEveryMs until the faults end. */
  start(): void {
    const again = (): void => {
      if (this.world.nowMs >= this.world.scenario.faultPhaseMs) return;
      this.startSession();
      this.world.at(this.world.nowMs + sessionEveryMs, '', again);
    };
    this.world.at(this.world.nowMs + randomInt(this.random, 1, sessionEveryMs), '', again);
  }

  // --- SimLeaseEnv ---------------------------------------------------------------------------

  forwarder(node: SimNode): SimLeaseForwarder {
    return new SimLeaseForwarder(this.world, node);
  }

  nextProposalId(): Uint8Array {
    return proposalId(this.nextServiceProposal++);
  }

  onOutcome(node: SimNode, entry: Entry, outcome: ApplyOutcome): void {
    if (outcome.type !== 'applied' || outcome.duplicate) return;
    const result = outcome.result;
    if (result.type === 'leaseRevoke') this.revokeApplied(node, entry.index, result);
    // A leaseRevokeBatch entry (store format 4): each lease it revoked, at its own revision.
    else if (result.type === 'leaseRevokeBatch') for (const lease of result.leases) this.revokeApplied(node, entry.index, lease);
  }

  private revokeApplied(node: SimNode, index: number, lease: { readonly id: number; readonly revision: number; readonly deleted: number }): void {
    const before = this.checker.revokedCount;
    this.checker.onRevokeApplied(node.id, index, lease.id, lease.revision, lease.deleted, this.world.nowMs);
    if (this.checker.revokedCount > before) {
      this.stats.expired++;
      this.world.trace(node, `lease ${lease.id} revoked at revision ${lease.revision} (${lease.deleted} keys)`);
    }
  }

  // --- sessions ------------------------------------------------------------------------------

  private startSession(): void {
    const live = this.sessions.filter((s) => !s.over).length;
    const member = this.pickMember();
    if (live >= sessionsMax || member === null) return;
    const ttlMs = randomInt(this.random, ttlMsMin, ttlMsMax);
    const keeper = chance(this.random, keeperRate);
    const session: Session = {
      n: this.nextSession++,
      ttlMs,
      keeper,
      abandonAtMs: keeper ? Number.POSITIVE_INFINITY : this.world.nowMs + randomInt(this.random, 0, 3 * ttlMs),
      leases: [],
      member,
      over: false,
      electionsAtAck: this.world.stats.elections,
    };
    this.sessions.push(session);
    const count = randomInt(this.random, 1, 2);
    // Two leases come from one batch grant (one leaseGrantBatch entry), retried like a grant.
    if (count === 2) this.grantMany(session, `L${session.n}`, 3, this.world.nowMs);
    else this.grant(session, `L${session.n}.0`, 3, this.world.nowMs);
  }

  /**
   * `firstSendMs`: when the first attempt with this Request-ID was sent. A retry may be answered
   * with the grant the first attempt made (deduplicated), whose TTL started back then.
   */
  private grant(session: Session, requestId: string, triesLeft: number, firstSendMs: number): void {
    const service = this.serviceOf(session);
    if (service === null) return;
    const sendMs = firstSendMs;
    this.call(service.grant({ ttlMs: session.ttlMs }, requestId, simClient), (granted) => this.granted(session, granted, sendMs), () => {
      this.moveOn(session);
      // The same Request-ID: a grant that did commit is answered again, not granted twice.
      if (triesLeft > 1) this.world.at(this.world.nowMs + 30, '', () => this.grant(session, requestId, triesLeft - 1, firstSendMs));
    });
  }

  private granted(session: Session, granted: { id: number; ttl: number }, sendMs: number): void {
    this.stats.granted++;
    this.checker.onPromise(granted.id, sendMs, granted.ttl * 1000, this.world.nowMs, 'grant');
    if (session.over) return; // the holder gave up meanwhile: an orphan that must expire
    session.leases.push(granted.id);
    const keys = randomInt(this.random, 1, 2);
    for (let k = 0; k < keys; k++) this.attach(session, granted.id, `/lease/s${session.n}/${granted.id}/${k}`);
    if (session.leases.length === 1) this.scheduleRenewal(session, sendMs + Math.floor(session.ttlMs / 3));
  }

  /** Two leases in one request (a leaseGrantBatch entry when the store format allows). */
  private grantMany(session: Session, requestId: string, triesLeft: number, firstSendMs: number): void {
    const service = this.serviceOf(session);
    if (service === null) return;
    this.call(service.grantMany({ ttlMs: session.ttlMs, count: 2 }, requestId, simClient), (answer) => {
      for (const item of answer.leases) if ('id' in item) this.granted(session, item, firstSendMs);
    }, () => {
      this.moveOn(session);
      if (triesLeft > 1) this.world.at(this.world.nowMs + 30, '', () => this.grantMany(session, requestId, triesLeft - 1, firstSendMs));
    });
  }

  private attach(session: Session, lease: number, key: string): void {
    const node = this.world.nodes.get(session.member);
    const binding = node?.state === 'running' ? node.serverDriver : null;
    if (binding === null || binding === undefined) return;
    const commandId = this.nextCommandId++;
    const op: Command = { type: 'put', key, value: utf8('held'), lease };
    const command = encodeCommand({ requestId: `p${commandId}`, proposedAtMs: this.world.nowMs, op }, simLeaseLimits);
    this.call(binding.propose(commandId, command), (outcome) => {
      if (outcome.mvcc?.type === 'applied' && outcome.mvcc.result.type === 'put') {
        this.stats.keysAttached++;
        this.checker.onKeyAttached(lease, key);
      }
    }, () => undefined);
  }

  private scheduleRenewal(session: Session, atMs: number): void {
    this.world.at(Math.max(atMs, this.world.nowMs), '', () => this.renew(session));
  }

  private renew(session: Session): void {
    if (session.over) return;
    if (this.world.nowMs >= session.abandonAtMs || session.leases.length === 0) {
      session.over = true;
      if (session.leases.length > 0) this.stats.abandoned += session.leases.length;
      return;
    }
    const service = this.serviceOf(session);
    if (service === null) {
      this.scheduleRenewal(session, this.world.nowMs + 20);
      return;
    }
    const sendMs = this.world.nowMs;
    const ids = [...session.leases];
    this.call(service.keepalive(ids, false, simClient), (answer) => {
      const now = this.world.nowMs;
      for (const item of answer.leases) {
        if ('ttl' in item) {
          this.stats.renewalsAcked++;
          if (this.world.stats.elections > session.electionsAtAck) this.stats.renewalsAcrossLeaders++;
          this.checker.onPromise(item.id, sendMs, item.ttl * 1000, now, 'renewal');
        } else {
          this.checker.onNotFound(item.id, sendMs, now);
          session.leases = session.leases.filter((id) => id !== item.id);
        }
      }
      session.electionsAtAck = this.world.stats.elections;
      this.scheduleRenewal(session, sendMs + Math.floor(session.ttlMs / 3));
    }, () => {
      this.stats.renewalsFailed++;
      this.moveOn(session);
      this.scheduleRenewal(session, this.world.nowMs + randomInt(this.random, 10, 40));
    });
  }

  /** A call with the client's own timeout (a crashed member never answers). */
  private call<T>(promise: Promise<T>, ok: (value: T) => void, failed: () => void): void {
    timedCall(this.world, promise, clientTimeoutMs, ok, () => failed());
  }

  private serviceOf(session: Session): LeaseService | null {
    const node = this.world.nodes.get(session.member);
    const service = node?.state === 'running' ? (node.serverDriver?.leases ?? null) : null;
    if (service !== null) return service;
    this.moveOn(session);
    return null;
  }

  /** After an error, the holder tries another member (its client's endpoint rotation). */
  private moveOn(session: Session): void {
    const member = this.pickMember();
    if (member !== null) session.member = member;
  }

  private pickMember(): MemberId | null {
    const nodes = this.world.runningNodes().filter((node) => node.serverDriver?.leases != null);
    return nodes.length === 0 ? null : pick(this.random, nodes).id;
  }

  // --- the end of the run ----------------------------------------------------------------------

  /**
   * True once every running member's lease table holds only leases that live keepers (or
   * `keptElsewhere`: another workload's holders) still renew; at `deadlineMs` it reports what is left instead (and is also done).
   */
  settled(deadlineMs: number, keptElsewhere: Iterable<number> = []): boolean {
    const kept = new Set<number>(keptElsewhere);
    for (const session of this.sessions) if (!session.over && session.keeper) for (const id of session.leases) kept.add(id);
    const left: string[] = [];
    for (const node of this.world.runningNodes()) {
      const store = node.serverDriver?.mvccStore;
      if (store === undefined || store === null) continue;
      const stale = store.leases().filter((lease) => !kept.has(lease.id)).map((lease) => lease.id);
      if (stale.length > 0) left.push(`member ${node.id}: ${stale.join(',')}`);
    }
    if (left.length === 0) return true;
    if (this.world.nowMs < deadlineMs) return false;
    this.world.report('abandoned leases expire', `leases still held after the faults stopped: ${left.join('; ')}`);
    return true;
  }

  /** How long after the faults the abandoned leases may take to expire. */
  static settleBudgetMs(): number {
    return 4 * ttlMsMax + 2_000;
  }
}
