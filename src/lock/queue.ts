// Contending for a queue (a lock or an election): create the entry (one committed step that also
// reads the entry's place), then, while someone is ahead, sleep until the immediate predecessor
// (or our own entry) is gone, and ask again with a committed check. Only the check grants, and it
// grants only a live entry, so a wake-up can be early, late or spurious without a wrong owner.
// Giving up (deadline, abort) deletes our entry so nobody waits behind a ghost.
import { BatonError, LockHeldError } from '../base/errors.js';
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

export class QueueContender {
  constructor(
    private readonly cell: QueueCell,
    private readonly feed: ChangeFeed,
    private readonly clock: QueueClock,
    private readonly metrics: QueueMetrics,
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
    if (created.duplicate) position = await this.check(request.prefix, position.kv, request.lease);
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
      await this.withdraw(position.kv);
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
        await this.withdraw(position.kv);
        this.metrics.gaveUp(woke);
        if (woke === 'aborted') throw request.signal?.reason ?? new Error('aborted');
        throw heldError(last?.owner ?? position.owner, this.clock.monotonicMs() - (deadline - request.waitMs));
      }
      this.metrics.wakeup();
      position = await this.checkUntil(request, position.kv, deadline);
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

  private async checkUntil(request: ContendRequest, kv: KeyValue, deadline: number): Promise<SeqPosition> {
    for (;;) {
      try {
        return await this.check(request.prefix, kv, request.lease);
      } catch (error) {
        const transient = error instanceof BatonError && error.retryable;
        if (!transient || this.clock.monotonicMs() + checkRetryMs >= deadline || request.signal?.aborted === true) {
          if (transient) await this.withdraw(kv);
          throw error;
        }
        await new Promise<void>((resolve) => this.clock.after(checkRetryMs, resolve));
      }
    }
  }

  private async check(prefix: string, kv: KeyValue, lease: number): Promise<SeqPosition> {
    const { result } = await this.cell.proposeCommand({ type: 'seqCheck', prefix, key: kv.key, lease }, undefined);
    if (result.type !== 'seqCheck') throw new Error(`seqCheck answered with ${result.type}`);
    return result;
  }

  /** Deletes our entry if it is still this incarnation; best effort (the lease would end it too). */
  async withdraw(kv: KeyValue): Promise<void> {
    await this.cell
      .proposeCommand(
        {
          type: 'txn',
          compare: [{ key: kv.key, target: 'createRevision', op: '==', value: kv.createRevision }],
          success: [{ type: 'delete', key: kv.key }],
          failure: [],
        },
        undefined,
      )
      .catch(() => undefined);
  }
}

export function heldError(owner: KeyValue, waitedMs?: number): LockHeldError {
  const holder = { key: owner.key, fencingToken: owner.createRevision, lease: owner.lease, value: new TextDecoder().decode(owner.value) };
  const waited = waitedMs === undefined ? '' : ` after waiting ${Math.round(waitedMs)} ms`;
  return new LockHeldError(`held by ${owner.key}${waited}`, { holder });
}
