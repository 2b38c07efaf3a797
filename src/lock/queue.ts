// Contending for a queue (a lock or an election): create the entry (one committed step that also
// reads the entry's place), then, while someone is ahead, sleep until the immediate predecessor
// (or our own entry) is gone, and ask again with a committed check. Only the check grants, and it
// grants only a live entry, so a wake-up can be early, late or spurious without a wrong owner.
// Giving up (deadline, abort) deletes our entry so nobody waits behind a ghost.
import { BatonError, LockHeldError, LockNotHeldError } from '../base/errors.js';
import type { Command, CommandResult, KeyValue, RangeRequest, RangeResult, SeqPosition } from '../mvcc/index.js';
import type { ChangeFeed } from './change-feed.js';

/** What the queue logic needs from the node. */
export interface QueueCell {
  /** Proposes through the log; `duplicate`: answered from the Request-ID table. */
  proposeCommand(op: Command, requestId: string | undefined): Promise<{ result: CommandResult; duplicate: boolean }>;
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

function isTransient(error: unknown): boolean {
  return error instanceof BatonError && error.retryable;
}

export class QueueContender {
  constructor(
    private readonly cell: QueueCell,
    private readonly feed: ChangeFeed,
    private readonly clock: QueueClock,
    private readonly metrics: QueueMetrics,
    /** Test-only broken rules, so the simulator's lock checker shows it has teeth. */
    private readonly bugs: { readonly grantOnWake?: boolean } = {},
  ) {}

  async contend(request: ContendRequest, requestId: string | undefined): Promise<Grant> {
    const started = this.clock.monotonicMs();
    request.signal?.throwIfAborted();
    const created = await this.cell.proposeCommand(
      { type: 'seqCreate', prefix: request.prefix, value: request.value, lease: request.lease, ifEmpty: request.waitMs === 0 },
      requestId,
    );
    if (created.result.type !== 'seqCreate') throw new Error(`seqCreate answered with ${created.result.type}`);
    let position: SeqPosition = created.result;
    // A retried request's first answer may be old: ask where the entry stands now.
    if (created.duplicate) position = await this.recheck(request, position);
    const contended = position.predecessor !== null;
    if (!contended) return this.grant(position, started, false, request.signal);
    if (request.waitMs === 0) {
      // Try-lock answered by a retry whose first attempt queued: leave the queue again.
      await this.withdraw(position.kv);
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
      if (woke !== 'changed') {
        // The grant may have happened meanwhile: one last committed look before giving up.
        const last = await this.check(request.prefix, position.kv, request.lease).catch(() => null);
        if (last !== null && last.predecessor === null) return last;
        this.metrics.gaveUp(woke);
        if (woke === 'aborted') {
          this.withdrawInBackground(position.kv);
          throw request.signal?.reason ?? new Error('aborted');
        }
        // Answered only once the entry is gone: "not granted" must mean "not queued" too.
        await this.withdraw(position.kv);
        throw heldError(last?.owner ?? position.owner, this.clock.monotonicMs() - (deadline - request.waitMs));
      }
      this.metrics.wakeup();
      if (this.bugs.grantOnWake === true) {
        // The etcd bug: a waiter that saw a deletion takes the lock without checking its own entry.
        return { ...position, predecessor: null, owner: position.kv, revision: this.feed.revision };
      }
      position = this.ownsInAppliedState(request.prefix, position) ?? (await this.checkUntil(request, position, deadline));
    }
    return position;
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

  private async checkUntil(request: ContendRequest, position: SeqPosition, deadline: number): Promise<SeqPosition> {
    for (;;) {
      try {
        return await this.check(request.prefix, position.kv, request.lease);
      } catch (error) {
        if (!isTransient(error)) throw error;
        if (request.signal?.aborted === true) {
          this.withdrawInBackground(position.kv);
          throw request.signal.reason;
        }
        if (this.clock.monotonicMs() + checkRetryMs >= deadline) {
          await this.withdraw(position.kv);
          throw heldError(position.owner, this.clock.monotonicMs() - (deadline - request.waitMs));
        }
        await this.pause(checkRetryMs);
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
    const first = this.cell.localRange({ type: 'get', key: prefix, prefix: true, limit: 1 });
    const owner = first.kvs[0];
    if (owner === undefined || owner.key !== position.kv.key || owner.createRevision !== position.kv.createRevision) return null;
    if (owner.lease !== position.kv.lease) return null;
    return { revision: first.revision, kv: owner, owner, predecessor: null };
  }

  /**
   * Where a retried request's entry stands now. If the first attempt's entry was withdrawn (its
   * wait ended, or it was abandoned) the retry did not get the lock: lock_held, as for a wait that
   * ended, and the caller acquires anew with a new Request-ID.
   */
  private async recheck(request: ContendRequest, first: SeqPosition): Promise<SeqPosition> {
    try {
      return await this.check(request.prefix, first.kv, request.lease);
    } catch (error) {
      if (!(error instanceof LockNotHeldError)) throw error;
      const owner = this.cell.localRange({ type: 'get', key: request.prefix, prefix: true, limit: 1 }).kvs[0] ?? first.owner;
      throw heldError(owner);
    }
  }

  private pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => this.clock.after(ms, resolve));
  }

  private async check(prefix: string, kv: KeyValue, lease: number): Promise<SeqPosition> {
    const { result } = await this.cell.proposeCommand({ type: 'seqCheck', prefix, key: kv.key, lease }, undefined);
    if (result.type !== 'seqCheck') throw new Error(`seqCheck answered with ${result.type}`);
    return result;
  }

  /**
   * Deletes our entry if it is still this incarnation (the compare spares a later one). Retries a
   * transient failure a few times, then throws it: the caller's answer is then "unknown outcome,
   * retry with the same Request-ID", and the retry finds the entry and withdraws it again.
   */
  async withdraw(kv: KeyValue, triesMax = withdrawTriesMax): Promise<void> {
    for (let tries = 1; ; tries++) {
      try {
        await this.cell.proposeCommand(
          {
            type: 'txn',
            compare: [{ key: kv.key, target: 'createRevision', op: '==', value: kv.createRevision }],
            success: [{ type: 'delete', key: kv.key }],
            failure: [],
          },
          undefined,
        );
        return;
      } catch (error) {
        if (!isTransient(error) || tries >= triesMax) throw error;
        await this.pause(checkRetryMs * tries);
      }
    }
  }

  /** For a caller that went away: nobody hears the outcome, so keep trying longer. */
  private withdrawInBackground(kv: KeyValue): void {
    this.withdraw(kv, withdrawTriesBackground).catch(() => undefined);
  }
}

export function heldError(owner: KeyValue, waitedMs?: number): LockHeldError {
  const holder = { key: owner.key, fencingToken: owner.createRevision, lease: owner.lease, value: new TextDecoder().decode(owner.value) };
  const waited = waitedMs === undefined ? '' : ` after waiting ${Math.round(waitedMs)} ms`;
  return new LockHeldError(`held by ${owner.key}${waited}`, { holder });
}
