// Contending for a queue (a lock or an election): create the entry (one committed step that also
// reads the entry's place), then, while someone is ahead, sleep until the immediate predecessor
// (or our own entry) is gone, and ask again with a committed check. Only the check grants, and it
// grants only a live entry, so a wake-up can be early, late or spurious without a wrong owner.
// Giving up (deadline, abort) deletes our entry so nobody waits behind a ghost, in one committed
// step that also requires the entry ahead of ours to be there: a withdrawal never deletes an entry
// that owns the lock, whichever attempt of a retried request proposed it.
// A wait's end is answered within `answerGraceMs`: a proposal can take the node's whole request
// timeout, so the checks and the withdrawal around the deadline race a timer, and past it the
// answer admits the outcome is unknown (`timeout`; the retry with the Request-ID withdraws).
import { BatonError, LeaseNotFoundError, LockHeldError, LockNotHeldError, TimeoutError, WrongCellError } from '../base/errors.js';
import { cellWork, type CommandProposer, type KeyValue, type Origin, type Proposed, type RangeRequest, type RangeResult, type SeqPosition, type TxnRequest } from '../mvcc/index.js';
import type { ChangeFeed } from './change-feed.js';
import { assert } from '../base/assert.js';

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

/**
 * One attempt of a request. `retried`: the entry was created by an earlier attempt with the same
 * Request-ID (this one found it in the Request-ID table), whose caller may still be listening on
 * another attempt: see grant().
 */
interface Attempt extends ContendRequest {
  readonly retried: boolean;
}

/** How leaving the queue ended: the entry came to own the lock first, or it is gone. */
type Left = { readonly granted: SeqPosition } | { readonly gone: true; readonly owner: KeyValue };

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
    private readonly options: QueueOptions,
  ) {}

  /** Test-only broken rules, so the simulator's lock checker shows it has teeth. */
  private get bugs(): QueueBugs {
    return this.options.bugs ?? {};
  }

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
    const attempt: Attempt = { ...request, retried: created.duplicate };
    let position: SeqPosition = created.result;
    // A retried request's first answer may be old: ask where the entry stands now.
    if (attempt.retried) position = await this.recheckInTime(attempt, position);
    const contended = position.predecessor !== null;
    if (!contended) return this.grant(attempt, position, started, false);
    if (request.waitMs === 0) {
      // Try-lock answered by a retry whose first attempt queued: leave the queue again (unless
      // the entry came to own the lock meanwhile: then the try-lock got it).
      const left = await this.leave(attempt, position, withdrawTriesMax, this.clock.monotonicMs() + answerGraceMs);
      if ('granted' in left) return this.grant(attempt, left.granted, started, false);
      throw heldError(left.owner);
    }
    this.metrics.waiting(1);
    try {
      position = await this.waitForGrant(attempt, position, started + request.waitMs);
    } finally {
      this.metrics.waiting(-1);
    }
    return this.grant(attempt, position, started, true);
  }

  private async grant(attempt: Attempt, position: SeqPosition, started: number, contended: boolean): Promise<Grant> {
    const signal = attempt.signal;
    if (signal?.aborted === true) {
      this.giveBack(attempt, position);
      this.metrics.gaveUp('aborted');
      throw signal.reason;
    }
    const waitedMs = Math.max(0, Math.round(this.clock.monotonicMs() - started));
    this.metrics.granted(waitedMs, contended);
    return { kv: position.kv, revision: position.revision, waitedMs };
  }

  /**
   * The entry owns the lock but this attempt's caller went away. The attempt that created the entry
   * gives it back, by the modRevision it created (a same-Request-ID retry's reclaim moves that on,
   * so a retry's grant is never deleted). A retry keeps it: another attempt of the same request may
   * have been granted this very entry and answered its caller (swarm lock seed 1098: a retry whose
   * client had moved on deleted the grant its successor had just answered, and a third contender
   * was granted beside it). The client's release, its settling retry or its lease's end frees it.
   */
  private giveBack(attempt: Attempt, position: SeqPosition): void {
    if (!attempt.retried) this.withdrawInBackground(position.kv);
  }

  private async waitForGrant(request: Attempt, first: SeqPosition, deadline: number): Promise<SeqPosition> {
    let position = first;
    while (position.predecessor !== null) {
      const woke = await this.sleep(request.prefix, position, deadline, request.signal);
      if (woke !== 'changed') return this.giveUp(request, position, woke, deadline);
      this.metrics.wakeup();
      if (this.bugs.grantOnWake === true) {
        // The etcd bug: a waiter that saw a deletion takes the lock without checking its own entry.
        return { ...position, predecessor: null, owner: position.kv, revision: this.feed.revision };
      }
      const next = this.ownsInAppliedState(request.prefix, position) ?? (await this.checkAfterWake(request, position, deadline));
      if (next === null) return this.giveUp(request, position, 'deadline', deadline);
      position = this.asThisAttempt(next, position);
    }
    return position;
  }

  /**
   * The wait ended: leave the queue (see leave: if the entry owns the lock by then, the wait ended
   * granted), within `answerGraceMs` of the deadline. Proposes nothing after answering, so a retry
   * with the Request-ID never races a withdrawal of this attempt's.
   */
  private async giveUp(request: Attempt, position: SeqPosition, why: 'deadline' | 'aborted', deadline: number): Promise<SeqPosition> {
    if (why === 'aborted') {
      this.metrics.gaveUp(why);
      this.leaveInBackground(request, position);
      throw request.signal?.reason ?? new Error('aborted');
    }
    const answerBy = Math.max(deadline, this.clock.monotonicMs()) + answerGraceMs;
    // Answered only once the entry is gone: "not granted" must mean "not queued" too.
    const left = await this.leave(request, position, withdrawTriesMax, answerBy);
    if ('granted' in left) return left.granted;
    this.metrics.gaveUp(why);
    throw heldError(left.owner, this.clock.monotonicMs() - (deadline - request.waitMs));
  }

  /**
   * Leaves the queue while someone is ahead: one committed step deletes our entry only if the
   * entry last seen just ahead of it is still there. So no withdrawal deletes an entry that owns
   * the lock, also when another attempt of the same request was granted it (its client retried
   * with the Request-ID) or this one's view is late. If the one ahead went, look again: granted
   * now, gone, or someone new ahead to compare. Transient failures are retried up to `triesMax`
   * times; at `answerByMs`, `timeout` (the outcome is unknown).
   */
  private async leave(request: Attempt, first: SeqPosition, triesMax: number, answerByMs: number): Promise<Left> {
    let position = first;
    let failures = 0;
    for (;;) {
      const ahead = position.predecessor;
      if (ahead === null) return { granted: position };
      if (await this.withdraw(position.kv, triesMax, answerByMs, ahead)) return { gone: true, owner: position.owner };
      let looked: SeqPosition | typeof notInTime;
      try {
        looked = await this.within(this.check(request, position.kv), answerByMs);
      } catch (error) {
        if (error instanceof LockNotHeldError || error instanceof LeaseNotFoundError) return { gone: true, owner: position.owner };
        if (!isTransient(error) || ++failures >= triesMax || this.stopped) throw error;
        if (this.clock.monotonicMs() + checkRetryMs * failures >= answerByMs) throw error;
        await this.pause(checkRetryMs * failures);
        continue;
      }
      if (looked === notInTime) throw unconfirmedWithdrawal();
      position = this.asThisAttempt(looked, position);
    }
  }

  /** leave() for a caller that went away: nobody hears the outcome; a grant by then is given back. */
  private leaveInBackground(attempt: Attempt, position: SeqPosition): void {
    this.leave(attempt, position, withdrawTriesBackground, Number.POSITIVE_INFINITY).then(
      (left) => {
        if ('granted' in left) this.giveBack(attempt, left.granted);
      },
      () => undefined,
    );
  }

  /** Resolves when the predecessor or our own entry is gone, the queue's namespace is fenced here, or the wait ends. */
  private sleep(prefix: string, position: SeqPosition, deadline: number, signal: AbortSignal | undefined): Promise<'changed' | 'deadline' | 'aborted'> {
    return new Promise((resolve) => {
      const subscriptions = [
        this.feed.whenGone(position.predecessor as KeyValue, () => done('changed')),
        this.feed.whenGone(position.kv, () => done('changed')),
        // Fenced for a move: the committed check that follows is refused with wrong_cell, which
        // ends this attempt at once; the client goes on with the Request-ID on the destination.
        this.feed.whenMoved(prefix, () => done('changed')),
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

  /**
   * checkUntil, except that a retry whose entry is gone hears lock_held: an earlier attempt of the
   * same request, still waiting on some member after its client moved on, left the queue at its
   * own deadline; the request was not granted and is not queued, as at a deadline.
   */
  private async checkAfterWake(request: Attempt, position: SeqPosition, deadline: number): Promise<SeqPosition | null> {
    try {
      return await this.checkUntil(request, position, deadline);
    } catch (error) {
      if (error instanceof WrongCellError) throw movedAway(error, position.kv);
      if (!(error instanceof LockNotHeldError) || !request.retried) throw error;
      this.metrics.gaveUp('lost');
      throw heldError(this.cell.localRange({ type: 'get', key: request.prefix, prefix: true, limit: 1, skipCount: true }).kvs[0] ?? position.owner);
    }
  }

  /** The committed check after a wake-up, retried while transient; null: no answer by the deadline. */
  private async checkUntil(request: Attempt, position: SeqPosition, deadline: number): Promise<SeqPosition | null> {
    for (;;) {
      try {
        const checked = await this.within(this.check(request, position.kv), deadline);
        return checked === notInTime ? null : checked;
      } catch (error) {
        if (!isTransient(error) || this.stopped) throw error;
        if (request.signal?.aborted === true) {
          this.leaveInBackground(request, position);
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
   * recheck, answered within one request timeout: its reclaim and its check are each bounded by
   * the node's timeout, but one after the other on a member far behind the leader (each waits for
   * its own apply) they answered a retried try-lock 5.3 s after it was sent (sim seed 288: a
   * member ~170 entries behind). Past the bound: `timeout`, the outcome unknown; the work goes on
   * unheard and the next retry with the Request-ID rechecks again (both steps may repeat).
   */
  private async recheckInTime(request: ContendRequest, first: SeqPosition): Promise<SeqPosition> {
    const checked = await this.within(this.recheck(request, first), this.clock.monotonicMs() + this.options.requestTimeoutMs);
    if (checked === notInTime) {
      throw new TimeoutError(
        `a retried request's entry could not be checked within ${this.options.requestTimeoutMs} ms: the outcome is unknown: retry with the same Request-ID`,
      );
    }
    return checked;
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
   * Deletes our entry if it is still this incarnation and, with `ahead`, only while that entry is
   * still ahead of it (so ours does not own the lock); without `ahead` (giving back an entry that
   * owns it), only while it is at the modRevision this attempt created (a same-Request-ID retry's
   * reclaim moves it on, see recheck). True if it deleted. Retries a transient failure a few times,
   * then throws it: the caller's answer is then "unknown outcome, retry with the same Request-ID",
   * and the retry finds the entry and withdraws it again. With `answerByMs`, it throws `timeout`
   * then at the latest and starts no attempt after it.
   */
  async withdraw(kv: KeyValue, triesMax = withdrawTriesMax, answerByMs = Number.POSITIVE_INFINITY, ahead?: KeyValue): Promise<boolean> {
    const still =
      ahead === undefined
        ? { key: kv.key, target: 'modRevision' as const, op: '==' as const, value: kv.modRevision }
        : { key: ahead.key, target: 'createRevision' as const, op: '==' as const, value: ahead.createRevision };
    for (let tries = 1; ; tries++) {
      if (this.clock.monotonicMs() >= answerByMs) throw unconfirmedWithdrawal();
      let answered: Proposed<TxnRequest> | typeof notInTime;
      try {
        const proposed = this.cell.propose<TxnRequest>(
          {
            type: 'txn',
            compare: [{ key: kv.key, target: 'createRevision', op: '==', value: kv.createRevision }, still],
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
      return answered.result.succeeded;
    }
  }

  /** For a caller that went away: nobody hears the outcome, so keep trying longer. */
  private withdrawInBackground(kv: KeyValue): void {
    this.withdraw(kv, withdrawTriesBackground).catch(() => undefined);
  }
}

export interface QueueOptions {
  /** The node's request timeout: how long a retried request's recheck may take before `timeout`. */
  readonly requestTimeoutMs: number;
  readonly bugs?: QueueBugs;
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

/**
 * A wait ended by a move of its namespace (the fence): the answer names the entry, which stays
 * queued and moves with the namespace, so the client knows there is one to resume or withdraw
 * on the new owner (a wrong_cell before any entry existed names none).
 */
function movedAway(error: WrongCellError, entry: KeyValue): WrongCellError {
  const details = error.details as Record<string, unknown>;
  assert(details['entry'] === undefined, 'a refusal names no entry of its own');
  details['entry'] = entry.key;
  return error;
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
