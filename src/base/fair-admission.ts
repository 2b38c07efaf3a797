// Fair admission on one node (issue #28): every key-value request of a cell with tenants is
// classified (its flow is the tenant owning its keys, '' for none; its kind says its priority
// level and its cost) and admitted through that level's fair queues (fair-queue.ts). Two levels
// with seats of their own: small requests (single-key reads, writes, txns, lock and election
// steps, watch creations) and lists (prefix and range reads, costed by the keys they may return),
// so a flood of lists never takes a small read's seat. Lease keepalives, Raft traffic and health
// checks never come here: they are exempt and never wait behind queued work. Queues are bounded
// (a full hand is refused at once, before any body is read where the edge can look first) and a
// request that waited past its deadline is dropped before it is done: its client has given up or
// soon will. Time and randomness are injected.
import { OverloadedError } from './errors.js';
import { FairQueue, type FairQueueOptions } from './fair-queue.js';
import type { Timers } from './timers.js';

/** What a request is, for its priority and its cost. Keepalives are exempt and never classified. */
export type WorkKind = 'read' | 'write' | 'list' | 'lock' | 'watch';

export interface Work {
  /** The tenant(s) owning its keys, '' for none. */
  readonly flow: string;
  readonly kind: WorkKind;
  /** A list: how many keys it may return (its limit, else what its tenant holds); unknown: the widest. */
  readonly mayReturn?: number;
  /** A txn: its operations. */
  readonly ops?: number;
}

export interface FairAdmissionOptions {
  readonly small: FairQueueOptions;
  readonly lists: FairQueueOptions;
  /** How long a request may wait in a queue before it is dropped (ms). */
  readonly queueWaitMs: number;
  /** A list costs one seat plus one per this many keys it may return. */
  readonly keysPerSeat: number;
}

export const defaultFairAdmissionOptions: FairAdmissionOptions = {
  small: { seats: 64, queues: 64, handSize: 6, queueLengthMax: 64 },
  lists: { seats: 16, queues: 32, handSize: 4, queueLengthMax: 32 },
  queueWaitMs: 2_000,
  keysPerSeat: 100,
};

/** Gives the seats back; safe to call more than once. */
export type Seat = () => void;

export type DropReason = 'queue_full' | 'queue_deadline';

export class FairAdmission {
  readonly small: FairQueue;
  readonly lists: FairQueue;
  private readonly drops = new Map<string, number>();
  private sweeping: { cancel(): void } | null = null;

  constructor(
    readonly options: FairAdmissionOptions,
    private readonly timers: Pick<Timers, 'setTimeout' | 'monotonicMs'>,
  ) {
    this.small = new FairQueue(options.small, timers.monotonicMs);
    this.lists = new FairQueue(options.lists, timers.monotonicMs);
  }

  /** The seats a request costs: lists by the keys they may return, txns by their operations. */
  costOf(work: Work): number {
    if (work.kind === 'list') {
      const keys = work.mayReturn ?? Number.POSITIVE_INFINITY;
      return Number.isFinite(keys) ? 1 + Math.floor(keys / this.options.keysPerSeat) : this.options.lists.seats;
    }
    if (work.kind === 'write' && work.ops !== undefined) return Math.max(1, Math.ceil(work.ops / 16));
    return 1;
  }

  /**
   * Admits `work`: its seat at once when free (the common case, no promise), else a promise of it
   * once its turn comes. Throws (or rejects) 429 overloaded when its flow's queues are full or it
   * waited past its deadline.
   */
  admit(work: Work): Seat | Promise<Seat> {
    const level = this.levelOf(work.kind);
    const cost = this.costOf(work);
    const seat = level.tryAdmit(cost);
    if (seat !== null) return seat;
    const deadlineMs = this.timers.monotonicMs() + this.options.queueWaitMs;
    return new Promise<Seat>((resolve, reject) => {
      const queued = level.offer({
        flow: work.flow,
        cost,
        deadlineMs,
        admitted: resolve,
        dropped: (waitedMs) => reject(this.refusal(work, 'queue_deadline', waitedMs)),
      });
      if (!queued) reject(this.refusal(work, 'queue_full', 0));
      else this.sweepSoon();
    });
  }

  /**
   * The refusal `work` gets now because its queues are full, else null: queues nothing. The edge
   * asks before it reads a body (and answers the refusal, which is counted); `admit` still decides.
   */
  refuseEarly(work: Work): OverloadedError | null {
    const level = this.levelOf(work.kind);
    if (level.waiting === 0 || !level.full(work.flow)) return null;
    return this.refusal(work, 'queue_full', 0);
  }

  /** Requests refused or dropped here since start, by flow and reason (for metrics). */
  dropped(): Array<{ flow: string; reason: DropReason; count: number }> {
    return [...this.drops].map(([id, count]) => {
      const [flow, reason] = id.split('\u0000') as [string, DropReason];
      return { flow, reason, count };
    });
  }

  private levelOf(kind: WorkKind): FairQueue {
    return kind === 'list' ? this.lists : this.small;
  }

  /** While anything waits, drop what passed its deadline a tenth of the wait after it did at most. */
  private sweepSoon(): void {
    if (this.sweeping !== null) return;
    this.sweeping = this.timers.setTimeout(() => {
      this.sweeping = null;
      this.small.expire();
      this.lists.expire();
      if (this.small.waiting + this.lists.waiting > 0) this.sweepSoon();
    }, Math.max(5, this.options.queueWaitMs / 10));
  }

  private refusal(work: Work, reason: DropReason, waitedMs: number): OverloadedError {
    const id = `${work.flow}\u0000${reason}`;
    this.drops.set(id, (this.drops.get(id) ?? 0) + 1);
    const who = work.flow === '' ? 'requests of no tenant' : `tenant ${work.flow}`;
    const message = reason === 'queue_full'
      ? `${who}: its admission queues are full; retry later`
      : `${who}: waited ${Math.round(waitedMs)} ms in its admission queue, past its deadline; retry later`;
    return new OverloadedError(message, { tenant: work.flow, reason, kind: work.kind });
  }
}
