// Lock contenders against the production lock service of every member (the `locks` workload,
// on top of the lease workload). Each contender holds a lease it renews every TTL/3 and loops:
// acquire the one lock through a member it picks (waiting a drawn time), hold it a little, and
// release; sometimes it freezes while holding (no renewals, no release) for longer than its TTL,
// like a paused process, then carries on. The lock checker sees every grant and how long the
// holder could rightly believe it held; after the faults, every live contender must get the lock
// once more (no waiter sleeps forever once its predecessor is gone).
import { simClient } from './sim-guard.js';
import type { Random } from '../base/random.js';
import { SeededRandom, chance, pick, randomInt } from '../base/random.js';
import { answerGraceMs, type QueueMetrics } from '../lock/queue.js';
import type { LockService } from '../lock/lock-service.js';
import type { LeaseService } from '../lease/lease-service.js';
import type { MemberId } from '../raft/index.js';
import { LockChecker, type Tenure } from './lock-checker.js';
import type { SimLockEnv } from './lock-member.js';
import type { LeaseWorkload } from './lease-workload.js';
import { proposalId, requestTimeoutMs } from './server-driver.js';
import { timedCall } from './timed-call.js';
import type { LockStats } from './types.js';
import type { SimNode } from './sim-node.js';
import type { World } from './world.js';

const contendersMin = 3;
const contendersMax = 6;
const ttlMsMin = 200;
const ttlMsMax = 600;
/**
 * After the faults, lease TTLs are at least this many of the cell's slowest round trips (network
 * both ways, a disk write, a heartbeat): a contender needs a lease grant and an acquire to commit
 * within one TTL, as a deployment's minimum TTL sits well above its commit latency. Swarm lock
 * seed 1387 drew a 28 ms network with 245 ms TTLs against ~150 ms per commit, and two contenders
 * lost every lease before their grants arrived, so "every contender gets the lock again" could
 * not hold. During the faults TTLs stay short: that is where lease bugs show.
 */
const ttlRoundTrips = 6;
const waitMsMax = 1_500;
const holdMsMax = 150;
const freezeRate = 0.15;
const clientTimeoutMs = 700;
/** An acquire must end within its wait plus this (create, checks and withdrawal at the driver's timeout). */
const acquireBoundMs = 9_000;
/**
 * A running member answers an acquire within its wait plus this: the create and a retry's
 * re-check take at most a request timeout each, and the end of a wait is answered within the
 * lock queue's grace (`timeout` when the withdrawal is not confirmed by then).
 */
const answerLateMs = 2 * requestTimeoutMs + answerGraceMs + 50;
const proposalIdBase = 3e12;
const lockName = 'sim';
/**
 * The share of swarm lock seeds whose members write progress notes to waiting acquires (see
 * `progressNotes`), and the connection drop rates those seeds draw from (never 0: with no drops
 * there is no dead socket for a note to find).
 */
const progressNotesShare = 0.7;
const progressNotesDropRates = [0.5, 0.8];

/**
 * The progress-notes region of one lock seed: its connection drop rate, and the shortest fault
 * phase it runs with. Drops come only while faults run (liveness is judged after them), and the
 * interleaving the region exists for (an attempt found gone in the step it is granted, beside its
 * retry) needs many drops during hand-offs: in fault phases of 1-3 s it came in 1.0% of plain
 * seeds, where drops over the whole run had found it in 3.1%.
 */
export interface ProgressNotes {
  readonly dropRate: number;
  readonly faultPhaseMsMin: number;
}

/**
 * Draws the region for a swarm lock seed, before its scenario is final (the region lengthens the
 * fault phase), from a stream of its own: `new SeededRandom(seed).fork(13)`, which no other
 * subsystem draws from (the run's forks come from the root's stream in order), so the draws of
 * every other subsystem stay as they were. Null outside the region.
 */
export function drawProgressNotes(seed: bigint, profile: string): ProgressNotes | null {
  if (profile !== 'swarm') return null;
  const random = new SeededRandom(seed).fork(13);
  if (!chance(random, progressNotesShare)) return null;
  return { dropRate: pick(random, progressNotesDropRates), faultPhaseMsMin: randomInt(random, 6_000, 12_000) };
}

/** A retry of an acquire whose outcome is unknown: the same Request-ID, for the same lease. */
interface Attempt {
  readonly requestId: string;
  readonly lease: number;
  readonly deadlineMs: number;
  readonly tries: number;
  /** The wait the first try asked for: a blind resend repeats it. */
  readonly firstWaitMs: number;
}

interface Contender {
  readonly n: number;
  /** Raised to the post-fault floor when the faults end (see ttlRoundTrips). */
  ttlMs: number;
  member: MemberId;
  lease: number | null;
  /** The lease's promise: send time of the last answered grant/renewal + TTL. */
  leaseUntilMs: number;
  frozenUntilMs: number;
  tenure: Tenure | null;
  /** The run is over for it (the faults ended and it got the lock again). */
  done: boolean;
  grantsAfterFaults: number;
  renewing: boolean;
}

export class LockWorkload implements SimLockEnv {
  readonly checker: LockChecker;
  readonly stats: LockStats = { acquires: 0, grants: 0, heldErrors: 0, leaseLost: 0, freezes: 0, wakeups: 0, gaveUp: 0 };
  readonly metrics: QueueMetrics;
  readonly bugs: { readonly grantOnWake?: boolean; readonly withdrawRetriedEntry?: boolean };
  private readonly contenders: Contender[] = [];
  private nextProposal = proposalIdBase;
  /**
   * When a member hears that the client gave up on a call: at once (the connection closed
   * cleanly), late (a server learns of a dead socket when it next writes to it, e.g. when it has
   * the grant to answer), or never (a half-open connection). Until then the first attempt goes on
   * waiting beside the client's same-Request-ID retry.
   */
  private readonly abortHeard: 'atOnce' | 'late' | 'mixed' | 'never';
  /**
   * How often an acquire's connection drops on the client's side while the member still waits
   * (a load balancer's idle cut, a client-side socket error): the client sees no answer early and
   * retries elsewhere with the same Request-ID, so two attempts of one request wait side by side.
   */
  private connectionDropRate: number;
  /**
   * Whether a retry resends the request as it was (its first wait, as a plain HTTP client
   * retrying with the same Request-ID and body does) rather than the wait that is left: the
   * retry's wait then ends after the first attempt's.
   */
  private readonly resendsFirstWait: boolean;
  /**
   * How often a contender stalls between checking its lease and sending an acquire, for longer
   * than the lease's TTL (a GC pause, a descheduled process): it then asks with a lease that may
   * have ended, which the cell must refuse rather than queue or grant.
   */
  private readonly stallBeforeSendRate: number;
  /**
   * A region of swarm lock seeds (drawn from its own fork, after everything else): the member
   * writes a progress note to each waiting acquire whenever the lock's queue moves (an entry
   * deleted: a release, a withdrawal, a lease's end), as a server streaming queue positions does,
   * and so hears of a dropped connection at the first move after the drop, not at a random time.
   * The first move that matters to an attempt is usually the hand-off that grants it: its caller
   * is found gone in the very step it is granted, while the client's same-Request-ID retry, which
   * reclaimed the entry meanwhile, is granted that entry too; the attempt must give back only
   * what it created (src/lock/queue.ts giveBack), never the retry's grant.
   */
  private progressNotes = false;

  constructor(
    private readonly world: World,
    private readonly random: Random,
    private readonly leases: LeaseWorkload,
    bugs: { grantOnWake?: boolean; withdrawRetriedEntry?: boolean } | undefined,
  ) {
    this.checker = new LockChecker((invariant, detail) => world.report(invariant, detail));
    this.bugs = bugs ?? {};
    this.abortHeard = pick(random, ['atOnce', 'late', 'mixed', 'never'] as const);
    this.connectionDropRate = pick(random, [0, 0.2, 0.5]);
    this.resendsFirstWait = chance(random, 0.5);
    this.stallBeforeSendRate = pick(random, [0, 0.05, 0.15]);
    this.metrics = {
      wakeup: () => this.stats.wakeups++,
      granted: () => undefined,
      gaveUp: () => this.stats.gaveUp++,
      waiting: () => undefined,
    };
    world.stats.locks = this.stats;
  }

  /** Puts the lock clients in the progress-notes region (drawn by `drawProgressNotes`). Called before the run starts. */
  useProgressNotes(region: ProgressNotes): void {
    this.progressNotes = true;
    this.connectionDropRate = region.dropRate;
    this.world.trace('-', `lock clients: members write progress notes to waiting acquires; connections drop at rate ${this.connectionDropRate} while faults run (${this.world.scenario.faultPhaseMs} ms)`);
  }

  nextProposalId(): Uint8Array {
    return proposalId(this.nextProposal++);
  }

  start(): void {
    const count = randomInt(this.random, contendersMin, contendersMax);
    for (let n = 1; n <= count; n++) {
      const member = this.pickMember();
      if (member === null) continue;
      const contender: Contender = {
        n,
        ttlMs: randomInt(this.random, ttlMsMin, ttlMsMax),
        member,
        lease: null,
        leaseUntilMs: 0,
        frozenUntilMs: 0,
        tenure: null,
        done: false,
        grantsAfterFaults: 0,
        renewing: false,
      };
      this.contenders.push(contender);
      this.trace(contender, `starts with a ${contender.ttlMs} ms lease TTL via member ${member}`);
      this.world.at(this.world.nowMs + randomInt(this.random, 1, 100), '', () => this.next(contender));
    }
  }

  // --- one contender's loop ---------------------------------------------------------------------

  private next(contender: Contender): void {
    if (contender.done) return;
    if (contender.lease === null || this.world.nowMs >= contender.leaseUntilMs) {
      this.endTenure(contender);
      this.grantLease(contender);
    } else if (this.world.nowMs < this.world.scenario.faultPhaseMs && chance(this.random, this.stallBeforeSendRate)) {
      // Stalled after the check: no renewals meanwhile, and no second look at the lease after.
      const stallMs = contender.ttlMs + randomInt(this.random, 1, contender.ttlMs);
      contender.frozenUntilMs = this.world.nowMs + stallMs;
      this.trace(contender, `stalls ${stallMs} ms before sending an acquire with lease ${contender.lease}`);
      this.later(contender, stallMs, () => this.acquire(contender));
    } else {
      this.acquire(contender);
    }
  }

  private later(contender: Contender, ms: number, run: () => void = () => this.next(contender)): void {
    this.world.at(this.world.nowMs + ms, '', run);
  }

  private grantLease(contender: Contender): void {
    const s = this.world.scenario;
    if (this.world.nowMs >= s.faultPhaseMs) {
      const floorMs = ttlRoundTrips * (2 * s.networkDelayMsMax + s.diskLatencyMsMax + s.tickMsMax * s.heartbeatTicks);
      contender.ttlMs = Math.max(contender.ttlMs, floorMs);
    }
    const service = this.leaseService(contender);
    if (service === null) return this.later(contender, 20);
    const sendMs = this.world.nowMs;
    this.call(service.grant({ ttlMs: contender.ttlMs }, undefined, simClient), clientTimeoutMs, (granted) => {
      contender.lease = granted.id;
      contender.leaseUntilMs = sendMs + granted.ttl * 1000;
      this.leases.checker.onPromise(granted.id, sendMs, granted.ttl * 1000, this.world.nowMs, 'grant');
      if (!contender.renewing) {
        contender.renewing = true;
        this.later(contender, Math.floor(contender.ttlMs / 3), () => this.renew(contender));
      }
      this.next(contender);
    }, () => {
      this.moveOn(contender);
      this.later(contender, randomInt(this.random, 10, 40));
    });
  }

  private renew(contender: Contender): void {
    if (contender.done && contender.tenure === null) {
      contender.renewing = false;
      return;
    }
    const again = (ms: number): void => this.later(contender, ms, () => this.renew(contender));
    const lease = contender.lease;
    if (lease === null || this.world.nowMs < contender.frozenUntilMs) return again(Math.floor(contender.ttlMs / 3));
    const service = this.leaseService(contender);
    if (service === null) return again(20);
    const sendMs = this.world.nowMs;
    this.call(service.keepalive([lease], false, simClient), clientTimeoutMs, (answer) => {
      const item = answer.leases[0];
      if (contender.lease !== lease) return again(1);
      if (item !== undefined && 'ttl' in item) {
        const untilMs = sendMs + item.ttl * 1000;
        this.leases.checker.onPromise(lease, sendMs, item.ttl * 1000, this.world.nowMs, 'renewal');
        if (untilMs > contender.leaseUntilMs) contender.leaseUntilMs = untilMs;
        if (contender.tenure !== null) this.checker.onPromise(contender.tenure, untilMs);
      } else {
        this.leases.checker.onNotFound(lease, sendMs, this.world.nowMs);
        this.stats.leaseLost++;
        this.endTenure(contender);
        contender.lease = null;
      }
      again(Math.max(1, sendMs + Math.floor(contender.ttlMs / 3) - this.world.nowMs));
    }, () => {
      this.moveOn(contender);
      again(randomInt(this.random, 10, 40));
    });
  }

  /**
   * One acquire. Like the client library, a call that got no answer (its member crashed, paused,
   * or the answer is late) is abandoned (the member withdraws the entry if it still runs) and
   * retried elsewhere with the same Request-ID and the remaining wait, so an entry created by the
   * first try is found again rather than left behind as a ghost holding the lock.
   */
  private acquire(contender: Contender, attempt?: Attempt): void {
    const service = this.lockService(contender);
    const lease = contender.lease;
    if (service === null && lease !== null && attempt !== undefined && attempt.lease === lease) {
      // No member to ask right now: the retry waits, with its Request-ID. Starting a new acquire
      // instead would leave the first try's entry queued, a ghost holding the lock while the
      // lease is renewed (seed 2: an acquire answered `overloaded` after its entry was created).
      return this.later(contender, 20, () => this.acquire(contender, attempt));
    }
    if (service === null || lease === null) return this.later(contender, 20);
    const requestId = attempt?.requestId ?? `lock-c${contender.n}-${this.stats.acquires}`;
    const deadlineMs = attempt?.deadlineMs ?? this.world.nowMs + randomInt(this.random, 0, waitMsMax);
    const tries = attempt?.tries ?? 0;
    // A blind resend repeats the first wait, for a few tries (then the client settles the outcome).
    const resend = attempt !== undefined && this.resendsFirstWait && tries <= 3;
    const waitMs = resend ? attempt.firstWaitMs : Math.max(0, deadlineMs - this.world.nowMs);
    const sentMs = this.world.nowMs;
    const member = this.world.nodes.get(contender.member);
    const incarnation = member?.incarnation;
    const pausesAtSend = this.world.stats.pauses;
    const memberId = contender.member;
    // The member that got the call is still the same running incarnation, and nobody paused.
    const unpaused = (): boolean => {
      const now = this.world.nodes.get(memberId);
      const sameMember = now === member && now?.incarnation === incarnation && now?.state === 'running';
      return sameMember && this.world.stats.pauses === pausesAtSend;
    };
    const checkAnswerTime = (): void => {
      if (this.world.nowMs > sentMs + waitMs + answerLateMs && unpaused()) {
        this.checker.onLateAnswer(contender.n, sentMs, this.world.nowMs, waitMs);
      }
    };
    if (attempt === undefined) this.stats.acquires++;
    const abandon = new AbortController();
    // Connections drop only while faults run, like the other client faults: liveness is checked
    // after the fault phase, and a client whose every call still dropped could never be served.
    const dropping = this.world.nowMs < this.world.scenario.faultPhaseMs && chance(this.random, this.connectionDropRate);
    const dropAfterMs = dropping ? randomInt(this.random, 1, Math.max(1, waitMs)) : null;
    this.trace(contender, `acquire ${requestId} sent via member ${contender.member} (lease ${lease}, wait ${waitMs} ms, try ${tries}${dropAfterMs === null ? '' : `, connection drops after ${dropAfterMs} ms`})`);
    const answered = this.call(
      service.acquire(lockName, { lease, owner: `c${contender.n}`, waitMs, signal: abandon.signal }, requestId, simClient),
      dropAfterMs ?? waitMs + acquireBoundMs,
      (grant) => {
        checkAnswerTime();
        this.stats.grants++;
        this.trace(contender, `granted ${grant.key} (lease ${lease}, revision ${grant.revision}) via member ${contender.member}`);
        if (this.world.nowMs >= contender.leaseUntilMs || contender.lease !== lease) {
          // Granted, but the holder can no longer trust its lease: it must not act; it releases.
          const tenure = this.checker.onGrant({ contender: contender.n, token: grant.fencingToken, lease, revision: grant.revision }, this.world.nowMs, this.world.nowMs);
          this.checker.onEnd(tenure, this.world.nowMs);
          this.release(contender, service, grant.key);
          return;
        }
        contender.tenure = this.checker.onGrant(
          { contender: contender.n, token: grant.fencingToken, lease, revision: grant.revision },
          this.world.nowMs,
          contender.leaseUntilMs,
        );
        if (this.world.nowMs >= this.world.scenario.faultPhaseMs) contender.grantsAfterFaults++;
        const holdMs = randomInt(this.random, 0, holdMsMax);
        if (chance(this.random, freezeRate) && this.world.nowMs < this.world.scenario.faultPhaseMs) {
          // Frozen: no renewals and no release for longer than the TTL, then it carries on.
          this.stats.freezes++;
          contender.frozenUntilMs = this.world.nowMs + contender.ttlMs + randomInt(this.random, 50, 2 * contender.ttlMs);
          this.world.at(contender.frozenUntilMs, '', () => this.release(contender, service, grant.key));
        } else {
          this.later(contender, holdMs, () => this.release(contender, service, grant.key));
        }
      },
      (error) => {
        if (error !== null) checkAnswerTime();
        const code = (error as { code?: string } | null)?.code;
        this.trace(contender, `acquire ${requestId} failed: ${code ?? (error === null ? 'no answer' : String(error))} ${(error as Error | null)?.message ?? ''}`);
        const retryable = error === null || (error as { retryable?: boolean }).retryable === true;
        // An unknown outcome may have left an entry queued: retry the same Request-ID (after the
        // deadline with no wait, which withdraws it) until the answer is definite, as long as the
        // lease lives; giving up here would leave a ghost entry that holds the lock while the
        // lease is renewed.
        if (retryable && contender.lease === lease) {
          this.abandon(abandon, waitMs, lease, member);
          this.moveOn(contender);
          return this.later(contender, randomInt(this.random, 5, 30), () =>
            this.acquire(contender, { requestId, lease, deadlineMs: Math.max(deadlineMs, this.world.nowMs), tries: tries + 1, firstWaitMs: attempt?.firstWaitMs ?? waitMs }));
        }
        if (code === 'lock_held') this.stats.heldErrors++;
        else if (code === 'lease_not_found') {
          this.stats.leaseLost++;
          contender.lease = null;
        } else this.moveOn(contender);
        this.later(contender, randomInt(this.random, 1, 30));
      },
    );
    // No answer at all within the bound, from a member that neither crashed nor paused meanwhile.
    this.world.at(sentMs + waitMs + acquireBoundMs, '', () => {
      if (dropAfterMs === null && !answered.settledByAnswer && unpaused()) this.checker.onStuck(contender.n, sentMs, this.world.nowMs, waitMs);
    });
  }

  /**
   * Releases `key`, retrying a call that got no answer elsewhere (as the client library does);
   * if it cannot, it drops the lease instead (stops renewing), so the entry goes with it.
   */
  private release(contender: Contender, service: LockService | null, key: string, tries = 0): void {
    this.endTenure(contender);
    if (service === null) return this.releaseFailed(contender, key, tries, null);
    this.call(
      service.release(lockName, key, undefined, simClient),
      clientTimeoutMs,
      () => {
        this.trace(contender, `released ${key}`);
        this.afterRelease(contender);
      },
      (error) => this.releaseFailed(contender, key, tries, error),
    );
  }

  private releaseFailed(contender: Contender, key: string, tries: number, error: unknown): void {
    const code = (error as { code?: string } | null)?.code;
    this.trace(contender, `release of ${key} failed: ${code ?? 'no answer'}`);
    const definite = error !== null && (error as { retryable?: boolean }).retryable !== true;
    if (definite) return this.afterRelease(contender); // lock_not_held: the entry is gone already
    if (tries < 10) {
      this.moveOn(contender);
      return this.later(contender, randomInt(this.random, 10, 40), () =>
        this.release(contender, this.lockService(contender), key, tries + 1));
    }
    this.trace(contender, `gives up releasing ${key}: drops lease ${contender.lease}`);
    contender.lease = null;
    this.afterRelease(contender);
  }

  /**
   * The member hears of the abandoned call as this seed's `abortHeard` says or, in the
   * progress-notes region, when it next writes to the call: when the call's place in the lock's
   * queue changes (an entry ahead of its entry, or the entry itself, goes), which for the first
   * entry in line is the hand-off that grants it; never, if the member restarts first (the call
   * died with it).
   */
  private abandon(call: AbortController, waitMs: number, lease: number, member: SimNode | undefined): void {
    const abort = (): void => call.abort(new Error('the client gave up on this call'));
    if (this.progressNotes) {
      const driver = member?.serverDriver;
      const feed = driver?.locks?.feed;
      if (driver == null || feed === undefined || call.signal.aborted) return;
      const prefix = `/locks/${lockName}/`;
      const notes = feed.watchPrefix(prefix, (events) => {
        // The call's entry: the one of its lease (a contender has one acquire at a time).
        const entry = driver.mvccStore?.range({ type: 'get', key: prefix, prefix: true }).kvs.find((kv) => kv.lease === lease);
        // null: the member re-read the queue (a snapshot, a compaction); it writes a note too.
        const moved = events === null || entry === undefined || events.some((event) => event.type === 'delete' && event.kv.key < entry.key);
        if (!moved) return;
        notes.cancel();
        abort();
      });
      return;
    }
    const heard = this.abortHeard === 'mixed' ? pick(this.random, ['atOnce', 'late', 'never'] as const) : this.abortHeard;
    if (heard === 'atOnce') abort();
    else if (heard === 'late') this.world.at(this.world.nowMs + randomInt(this.random, 1, waitMs + answerLateMs), '', abort);
  }

  private trace(contender: Contender, text: string): void {
    this.world.trace('-', `lock c${contender.n}: ${text}`);
  }

  private afterRelease(contender: Contender): void {
    const faultsOver = this.world.nowMs >= this.world.scenario.faultPhaseMs;
    if (faultsOver && contender.grantsAfterFaults > 0) contender.done = true;
    this.later(contender, randomInt(this.random, 1, 50));
  }

  private endTenure(contender: Contender): void {
    if (contender.tenure === null) return;
    this.checker.onEnd(contender.tenure, this.world.nowMs);
    contender.tenure = null;
  }

  // --- plumbing ------------------------------------------------------------------------------------

  private call<T>(promise: Promise<T>, timeoutMs: number, ok: (value: T) => void, failed: (error: unknown) => void): { readonly settledByAnswer: boolean } {
    return timedCall(this.world, promise, timeoutMs, ok, failed);
  }

  private leaseService(contender: Contender): LeaseService | null {
    const node = this.world.nodes.get(contender.member);
    const service = node?.state === 'running' ? (node.serverDriver?.leases ?? null) : null;
    if (service === null) this.moveOn(contender);
    return service;
  }

  private lockService(contender: Contender): LockService | null {
    const node = this.world.nodes.get(contender.member);
    const service = node?.state === 'running' ? (node.serverDriver?.locks?.locks ?? null) : null;
    if (service === null) this.moveOn(contender);
    return service;
  }

  private moveOn(contender: Contender): void {
    const member = this.pickMember();
    if (member !== null) contender.member = member;
  }

  private pickMember(): MemberId | null {
    const nodes = this.world.runningNodes().filter((node) => node.serverDriver?.locks != null);
    return nodes.length === 0 ? null : pick(this.random, nodes).id;
  }

  // --- the end of the run ------------------------------------------------------------------------------

  /** Leases contenders still renew (the lease workload must not count them as abandoned). */
  liveLeases(): number[] {
    return this.contenders.filter((c) => c.renewing && c.lease !== null).map((c) => c.lease as number);
  }

  /** True once every contender got the lock again after the faults; at the deadline, reports who did not. */
  settled(deadlineMs: number): boolean {
    const waiting = this.contenders.filter((contender) => !contender.done);
    if (waiting.length === 0) {
      this.checker.checkLeases((lease) => this.leases.checker.revokedAtRevision(lease));
      return true;
    }
    if (this.world.nowMs < deadlineMs) return false;
    this.checker.checkLeases((lease) => this.leases.checker.revokedAtRevision(lease));
    const store = this.world.runningNodes()[0]?.serverDriver?.mvccStore;
    const queue = store?.range({ type: 'get', key: `/locks/${lockName}/`, prefix: true }).kvs ?? [];
    const entries = queue.map((kv) => `${kv.key} (lease ${kv.lease})`).join(', ');
    const leases = this.contenders.map((c) => `c${c.n}: lease ${c.lease}${c.renewing ? ' renewing' : ''}`).join(', ');
    this.world.report(
      'no waiter sleeps forever',
      `after the faults, contenders ${waiting.map((c) => c.n).join(', ')} never got the lock again; ` +
        `queue: [${entries}]; ${leases}`,
    );
    return true;
  }

  static settleBudgetMs(): number {
    return contendersMax * (waitMsMax + holdMsMax) + acquireBoundMs + 5_000;
  }
}
