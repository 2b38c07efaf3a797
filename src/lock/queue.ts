// Contending for a queue (a lock or an election): create the entry (one committed step that also
// reads the entry's place), then, while someone is ahead, sleep until the immediate predecessor
// (or our own entry) is gone, and ask again with a committed check. Only the check grants, and it
// grants only a live entry, so a wake-up can be early, late or spurious without a wrong owner.
// Giving up (deadline, abort) deletes our entry so nobody waits behind a ghost.
// A wait's end is answered within `answerGraceMs`: a proposal can take the node's whole request
// timeout, so the checks and the withdrawal around the deadline race a timer, and past it the
// answer admits the outcome is unknown (`timeout`; the retry with the Request-ID withdraws).
import { BatonError, LockHeldError, LockNotHeldError, TimeoutError } from '../base/errors.js';
import { cellWork, type CommandProposer, type KeyValue, type Origin, type RangeRequest, type RangeResult, type SeqPosition } from '../mvcc/index.js';
import type { ChangeFeed } from './change-feed.js';

/** What the queue logic needs from the node: the log (propose) and its reads. */
export interface QueueCell extends CommandProposer {
  /** Confirms leadership (ReadIndex) and waits until applied here, then reads. */
  linearizableRange(request: RangeRequest): Promise<RangeResult>;
  /** This node's applied state, unconfirmed. */
  localRange(request: RangeRequest): RangeResult;
}

export interface QueueClock {
  monotonicMs(): number;
  /** Calls `callback` once after `ms` (unless cancelled). */
  after(ms: number, callback: () => void): { cancel(): void };
}

export interface QueueMetrics {
  /** A waiter woke because the entry ahead (or its own) changed. */
  wakeup(): void;
  granted(waitedMs: number, contended: boolean): void;
  gaveUp(reason: 'deadline' | 'aborted' | 'lost'): void;
  waiting(delta: 1 | -1): void;
}

export interface ContendRequest {
  readonly prefix: string;
  readonly value: Uint8Array;
  readonly lease: number;
  readonly waitMs: number;
  readonly signal?: AbortSignal | undefined;
  /** Who contends: the entry's creation and the checks that grant it are decided as theirs. */
  readonly origin: Origin;
}

export interface Grant {
  readonly kv: KeyValue;
  /** The committed step at which the entry owned the queue. */
  readonly revision: number;
  readonly waitedMs: number;
}

/** Transient failures of a check (no leader for a moment) are retried this often until the deadline. */
const checkRetryMs = 100;
/** Withdrawal attempts before an answer admits the outcome is unknown; more when nobody waits. */
const withdrawTriesMax = 3;
const withdrawTriesBackground = 20;
/**
 * How long after its wait ends an acquire may take to confirm it left the queue (the last look
 * and the withdrawal commit in a round trip or two); past it the answer is `timeout`. Without a
 * bound, a withdrawal that never committed (forwarded proposals dropped by a leader over its
 * uncommitted limit) answered after three request timeouts: 6.3 s past a 1.5 s wait in the
 * simulator (seed 20147), 15 s and more with the server's 5 s timeout, past the client's slack.
 */
export const answerGraceMs = 1_000;
/** What `within` yields when the promise has not settled in time (its work goes on unheard). */
const notInTime: unique symbol = Symbol('not in time');

function isTransient(error: unknown): boolean {
  return error instanceof BatonError && error.retryable;
}

export class QueueContender {
  /** Set by stop(): retry loops give up at their next turn instead of outliving the node. */
  private stopped = false;
  /** Pauses between retries, cut short by stop(). */
  private readonly pauses = new Set<{ timer: { cancel(): void }; resolve: () => void }>();

  constructor(
    private readonly cell: QueueCell,
    private readonly feed: ChangeFeed,
    private readonly clock: QueueClock,
    private readonly metrics: QueueMetrics,
    /** Test-only broken rules, so the simulator's lock checker shows it has teeth. */
    private readonly bugs: QueueBugs = {},
  ) {}

  /** asThisAttempt, or (the planted second queue hole) the entry as re-read, whoever moved it. */
  private asThisAttempt(next: SeqPosition, current: SeqPosition): SeqPosition {
    return this.bugs.withdrawRetriedEntry === true ? next : asThisAttempt(next, current);
  }

  async contend(request: ContendRequest, requestId: string | undefined): Promise<Grant> {
    const started = this.clock.monotonicMs();
    request.signal?.throwIfAborted();
    const created = await this.cell.propose(
      { type: 'seqCreate', prefix: request.prefix, value: request.value, lease: request.lease, ifEmpty: request.waitMs === 0 },
      requestId,
      request.origin,
    );
    let position: SeqPosition = created.result;
    // A retried request's first answer may be old: ask where the entry stands now.
    if (created.duplicate) position = await this.recheck(request, position);
    const contended = position.predecessor !== null;
    if (!contended) return this.grant(position, started, false, request.signal);
    if (request.waitMs === 0) {
      // Try-lock answered by a retry whose first attempt queued: leave the queue again.
      await this.withdraw(position.kv, withdrawTriesMax, this.clock.monotonicMs() + answerGraceMs);
      throw heldError(position.owner);
    }
    this.metrics.waiting(1);
    try {
      position = await this.waitForGrant(request, position, started + request.waitMs);
    } finally {
      this.metrics.waiting(-1);
    }
    return this.grant(position, started, true, request.signal);
  }

  private async grant(position: SeqPosition, started: number, contended: boolean, signal?: AbortSignal): Promise<Grant> {
    if (signal?.aborted === true) {
      // Granted to a caller that went away: give it back rather than hold it until the lease ends.
      this.withdrawInBackground(position.kv);
      this.metrics.gaveUp('aborted');
      throw signal.reason;
    }
    const waitedMs = Math.max(0, Math.round(this.clock.monotonicMs() - started));
    this.metrics.granted(waitedMs, contended);
    return { kv: position.kv, revision: position.revision, waitedMs };
  }

  private async waitForGrant(request: ContendRequest, first: SeqPosition, deadline: number): Promise<SeqPosition> {
    let position = first;
    while (position.predecessor !== null) {
      const woke = await this.sleep(position, deadline, request.signal);
      if (woke !== 'changed') return this.giveUp(request, position, woke, deadline);
      this.metrics.wakeup();
      if (this.bugs.grantOnWake === true) {
        // The etcd bug: a waiter that saw a deletion takes the lock without checking its own entry.
        return { ...position, predecessor: null, owner: position.kv, revision: this.feed.revision };
      }
      const next = this.ownsInAppliedState(request.prefix, position) ?? (await this.checkUntil(request, position, deadline));
      if (next === null) return this.giveUp(request, position, 'deadline', deadline);
      position = this.asThisAttempt(next, position);
    }
    return position;
  }

  /**
   * The wait ended: one last committed look (the grant may have happened meanwhile), then leave
   * the queue; both within `answerGraceMs` of the deadline. Proposes nothing after answering, so
   * a retry with the Request-ID never races a withdrawal of this attempt's.
   */
  private async giveUp(request: ContendRequest, position: SeqPosition, why: 'deadline' | 'aborted', deadline: number): Promise<SeqPosition> {
    const answerBy = Math.max(deadline, this.clock.monotonicMs()) + answerGraceMs;
    const looked = await this.within(this.check(request, position.kv), answerBy).catch((): typeof notInTime => notInTime);
    const last = looked === notInTime ? null : this.asThisAttempt(looked, position);
    if (last !== null && last.predecessor === null) return last;
    this.metrics.gaveUp(why);
    if (why === 'aborted') {
      this.withdrawInBackground(position.kv);
      throw request.signal?.reason ?? new Error('aborted');
    }
    // Answered only once the entry is gone: "not granted" must mean "not queued" too.
    await this.withdraw(position.kv, withdrawTriesMax, answerBy);
    throw heldError(last?.owner ?? position.owner, this.clock.monotonicMs() - (deadline - request.waitMs));
  }

  /** Resolves when the predecessor or our own entry is gone, or the wait ends. */
  private sleep(position: SeqPosition, deadline: number, signal: AbortSignal | undefined): Promise<'changed' | 'deadline' | 'aborted'> {
    return new Promise((resolve) => {
      const subscriptions = [
        this.feed.whenGone(position.predecessor as KeyValue, () => done('changed')),
        this.feed.whenGone(position.kv, () => done('changed')),
      ];
      const timer = this.clock.after(Math.max(0, deadline - this.clock.monotonicMs()), () => done('deadline'));
      const onAbort = (): void => done('aborted');
      signal?.addEventListener('abort', onAbort, { once: true });
      if (signal?.aborted === true) void Promise.resolve().then(onAbort);
      function done(why: 'changed' | 'deadline' | 'aborted'): void {
        for (const subscription of subscriptions) subscription.cancel();
        timer.cancel();
        signal?.removeEventListener('abort', onAbort);
        resolve(why);
      }
    });
  }

  /** The committed check after a wake-up, retried while transient; null: no answer by the deadline. */
  private async checkUntil(request: ContendRequest, position: SeqPosition, deadline: number): Promise<SeqPosition | null> {
    for (;;) {
      try {
        const checked = await this.within(this.check(request, position.kv), deadline);
        return checked === notInTime ? null : checked;
      } catch (error) {
        if (!isTransient(error) || this.stopped) throw error;
        if (request.signal?.aborted === true) {
          this.withdrawInBackground(position.kv);
          throw request.signal.reason;
        }
        if (this.clock.monotonicMs() + checkRetryMs >= deadline) return null;
        await this.pause(checkRetryMs);
        if (this.stopped) throw error;
      }
    }
  }

  /**
   * The common hand-off, decided without another log entry: the step that deleted the entry
   * ahead is committed and applied here; if our entry (this incarnation, so its lease is alive:
   * a revocation deletes its keys in the same step) is the lowest in the state at that step, we
   * became the owner in that very step. Anything else (our entry gone, someone still ahead) goes
   * to a committed check, which also names the reason or the new predecessor.
   */
  private ownsInAppliedState(prefix: string, position: SeqPosition): SeqPosition | null {
    const first = this.cell.localRange({ type: 'get', key: prefix, prefix: true, limit: 1, skipCount: true });
    const owner = first.kvs[0];
    if (owner === undefined || owner.key !== position.kv.key || owner.createRevision !== position.kv.createRevision) return null;
    if (owner.lease !== position.kv.lease) return null;
    return { revision: first.revision, kv: owner, owner, predecessor: null };
  }

  /**
   * Where a retried request's entry stands now. If the first attempt's entry was withdrawn (its
   * wait ended, or it was abandoned) the retry did not get the lock: lock_held, as for a wait that
   * ended, and the caller acquires anew with a new Request-ID. The entry is reclaimed first: an
   * earlier attempt's withdrawal may still be on its way to the log, and once this attempt has
   * been granted it must not delete the grant. Withdrawals compare the entry's modRevision, which
   * the reclaim moves on: the withdrawal then either committed before it (entry gone: not granted)
   * or finds the compare failing (entry kept).
   */
  private async recheck(request: ContendRequest, first: SeqPosition): Promise<SeqPosition> {
    await this.reclaim(first.kv);
    try {
      return await this.check(request, first.kv);
    } catch (error) {
      if (!(error instanceof LockNotHeldError)) throw error;
      const owner = this.cell.localRange({ type: 'get', key: request.prefix, prefix: true, limit: 1, skipCount: true }).kvs[0] ?? first.owner;
      throw heldError(owner);
    }
  }

  /**
   * The node is stopping: every retry loop (a check after a wake-up, a withdrawal, also one in the
   * background) ends with its last transient error at its next turn, so nothing keeps a stopped
   * node's process alive (the fault runs saw a removed member linger ~19 s on a withdrawal's retries).
   */
  stop(): void {
    this.stopped = true;
    for (const pause of [...this.pauses]) {
      pause.timer.cancel();
      pause.resolve();
    }
    this.pauses.clear();
  }

  private pause(ms: number): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const pause = { timer: { cancel: () => {} }, resolve };
      pause.timer = this.clock.after(ms, () => {
        this.pauses.delete(pause);
        resolve();
      });
      this.pauses.add(pause);
    });
  }

  /** `promise`'s outcome, or `notInTime` at `byMs` if it has not settled (a rejection after that is dropped). */
  private within<T>(promise: Promise<T>, byMs: number): Promise<T | typeof notInTime> {
    // No bound, no timer (a timer for an infinite delay would fire at once).
    if (byMs === Number.POSITIVE_INFINITY) return promise;
    return new Promise((resolve, reject) => {
      const timer = this.clock.after(Math.max(0, byMs - this.clock.monotonicMs()), () => resolve(notInTime));
      promise.then(
        (value) => {
          timer.cancel();
          resolve(value);
        },
        (error: unknown) => {
          timer.cancel();
          reject(error);
        },
      );
    });
  }

  /** Rewrites our entry as it is (same value, lease and token) if nothing changed it since `kv`. */
  private async reclaim(kv: KeyValue): Promise<void> {
    await this.cell.propose(
      {
        type: 'txn',
        compare: [
          { key: kv.key, target: 'createRevision', op: '==', value: kv.createRevision },
          { key: kv.key, target: 'modRevision', op: '==', value: kv.modRevision },
        ],
        success: [{ type: 'put', key: kv.key, value: kv.value, lease: kv.lease }],
        failure: [],
      },
      undefined,
      cellWork, // the contender's own entry, as it is: housekeeping, not a new access
    );
  }

  private async check(request: ContendRequest, kv: KeyValue): Promise<SeqPosition> {
    const { prefix, lease, origin } = request;
    const { result } = await this.cell.propose({ type: 'seqCheck', prefix, key: kv.key, lease }, undefined, origin);
    return result;
  }

  /**
   * Deletes our entry if it is still this incarnation and this attempt's (the compares spare a
   * later entry, and one a same-Request-ID retry reclaimed, see recheck). Retries a
   * transient failure a few times, then throws it: the caller's answer is then "unknown outcome,
   * retry with the same Request-ID", and the retry finds the entry and withdraws it again. With
   * `answerByMs`, it throws `timeout` then at the latest and starts no attempt after it.
   */
  async withdraw(kv: KeyValue, triesMax = withdrawTriesMax, answerByMs = Number.POSITIVE_INFINITY): Promise<void> {
    for (let tries = 1; ; tries++) {
      if (this.clock.monotonicMs() >= answerByMs) throw unconfirmedWithdrawal();
      let answered: unknown;
      try {
        const proposed = this.cell.propose(
          {
            type: 'txn',
            compare: [
              { key: kv.key, target: 'createRevision', op: '==', value: kv.createRevision },
              { key: kv.key, target: 'modRevision', op: '==', value: kv.modRevision },
            ],
            success: [{ type: 'delete', key: kv.key }],
            failure: [],
          },
          undefined,
          cellWork, // a withdrawal must go through whatever the policy now says
        );
        answered = await this.within(proposed, answerByMs);
      } catch (error) {
        if (!isTransient(error) || tries >= triesMax || this.stopped) throw error;
        if (this.clock.monotonicMs() + checkRetryMs * tries >= answerByMs) throw error;
        await this.pause(checkRetryMs * tries);
        if (this.stopped) throw error;
        continue;
      }
      if (answered === notInTime) throw unconfirmedWithdrawal();
      return;
    }
  }

  /** For a caller that went away: nobody hears the outcome, so keep trying longer. */
  private withdrawInBackground(kv: KeyValue): void {
    this.withdraw(kv, withdrawTriesBackground).catch(() => undefined);
  }
}

/** Test-only broken rules (the simulator's lock sweep shows its checkers catch each). */
export interface QueueBugs {
  /** The etcd bug: a waiter that saw a deletion takes the lock without checking its own entry. */
  readonly grantOnWake?: boolean;
  /**
   * The second queue hole (fixed in c8f5d11): an attempt still waiting after its client retried
   * withdraws by the entry's current modRevision, deleting the entry the retry reclaimed.
   */
  readonly withdrawRetriedEntry?: boolean;
}

/**
 * A fresh look at our entry, kept as this attempt's: reads show the entry as it is now, and a
 * same-Request-ID retry that reclaimed it meanwhile moved its modRevision on. Withdrawals compare
 * the modRevision this attempt created or reclaimed, so an attempt still waiting on the server
 * after its client retried can never delete the retry's grant (the fault run's seed 7 did).
 */
function asThisAttempt(next: SeqPosition, current: SeqPosition): SeqPosition {
  if (next.kv.modRevision === current.kv.modRevision) return next;
  return { ...next, kv: { ...next.kv, modRevision: current.kv.modRevision } };
}

function unconfirmedWithdrawal(): TimeoutError {
  return new TimeoutError(
    `the wait ended, but leaving the queue was not confirmed within ${answerGraceMs} ms: the outcome is unknown: retry with the same Request-ID`,
  );
}

export function heldError(owner: KeyValue, waitedMs?: number): LockHeldError {
  const holder = { key: owner.key, fencingToken: owner.createRevision, lease: owner.lease, value: new TextDecoder().decode(owner.value) };
  const waited = waitedMs === undefined ? '' : ` after waiting ${Math.round(waitedMs)} ms`;
  return new LockHeldError(`held by ${owner.key}${waited}`, { holder });
}
