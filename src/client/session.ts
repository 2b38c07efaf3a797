// Session: one lease per process, renewed over the client's stream. Its promise to the caller is
// `safeUntil` (see safe-until.ts): until that local monotonic instant the lease certainly exists
// on the cell. If no renewal is confirmed by then, the session is lost for good: `lost` fires and
// `signal` aborts, and owner-only work tied to the signal stops before the cell can delete the
// lease's keys and hand ownership to someone else. Renewals are retried quickly while time
// remains; a late acknowledgement never revives a lost session.
import { EventEmitter } from 'node:events';
import type { BatonClient } from './client.js';
import { LeaseNotFoundError } from '../base/errors.js';
import { ClosedError, SessionLostError } from './errors.js';
import { defaultSafetyMarginMs, renewalDelayMs, SafeUntil } from './safe-until.js';
import type { LeaseKeepaliveResult } from './types.js';

export interface SessionOptions {
  /** Lease TTL in seconds (default 10; the cell's minimum is 5 by default). */
  readonly ttlSeconds?: number;
  /** Subtracted from every promise (default: a tenth of the TTL, at least 500 ms). */
  readonly safetyMarginMs?: number;
}

/** A failed renewal is retried after this (jittered) pause while safeUntil has not passed. */
const renewalRetryMsMax = 500;

/**
 * @example
 * const session = await client.session({ ttlSeconds: 10 });
 * session.on('lost', (error) => console.error(error.message));
 * await doOwnerOnlyWork({ signal: session.signal });   // stops when the session is lost
 * await session.close();                                // revokes the lease
 */
export class Session extends EventEmitter<{ lost: [SessionLostError]; renewed: [number] }> {
  private readonly safe: SafeUntil;
  private readonly controller = new AbortController();
  private renewTimer: NodeJS.Timeout | null = null;
  private lossTimer: NodeJS.Timeout | null = null;
  private state: 'alive' | 'lost' | 'closed' = 'alive';
  /** Renewals acknowledged (for tests and metrics). */
  renewals = 0;

  private constructor(
    private readonly client: BatonClient,
    readonly leaseId: number,
    readonly ttlMs: number,
    safetyMarginMs: number,
  ) {
    super();
    this.safe = new SafeUntil(safetyMarginMs);
  }

  static async start(client: BatonClient, options: SessionOptions = {}): Promise<Session> {
    const ttlSeconds = options.ttlSeconds ?? 10;
    const sentAtMs = client.clock.monotonicMs();
    client.stream.connect(); // ready by the first renewal
    const grant = await client.leaseGrant(ttlSeconds);
    const ttlMs = grant.ttl * 1000;
    const marginMs = options.safetyMarginMs ?? defaultSafetyMarginMs(ttlMs);
    const session = new Session(client, grant.id, ttlMs, marginMs);
    session.acknowledged(sentAtMs, ttlMs);
    return session;
  }

  /** Aborted (with SessionLostError or ClosedError) when ownership can no longer be assumed. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Monotonic ms (monotonicNowMs, process-wide) until which the lease is certainly held. */
  get safeUntil(): number {
    return this.state === 'alive' ? this.safe.valueMs : Number.NEGATIVE_INFINITY;
  }

  /** True while the lease is certainly held right now. */
  isSafe(): boolean {
    return this.state === 'alive' && this.safe.isSafe(this.client.clock.monotonicMs());
  }

  /** Subtracted from every renewal's promise: the time owner-only work has to stop. */
  get safetyMarginMs(): number {
    return this.safe.safetyMarginMs;
  }

  get lost(): boolean {
    return this.state === 'lost';
  }

  /** Stops renewing and revokes the lease (its keys are deleted at once rather than on expiry). */
  async close(): Promise<void> {
    if (this.state === 'closed') return;
    const wasAlive = this.state === 'alive';
    this.state = 'closed';
    this.clearTimers();
    this.controller.abort(new ClosedError('session closed'));
    if (!wasAlive) return;
    try {
      await this.client.leaseRevoke(this.leaseId);
    } catch (error) {
      // Already gone (expired, or a retried revoke whose first attempt applied): nothing to undo.
      if (!(error instanceof LeaseNotFoundError)) throw error;
    }
  }

  private acknowledged(sentAtMs: number, grantedTtlMs: number): void {
    this.safe.acknowledge(sentAtMs, grantedTtlMs);
    this.renewals++;
    // Timers first: a slow 'renewed' listener cannot delay the next renewal's scheduling.
    this.armLossTimer();
    this.scheduleRenewal(renewalDelayMs(grantedTtlMs, this.client.random()));
    // Synchronous on purpose: the worker mode copies safeUntil to shared memory right here.
    this.emit('renewed', this.safe.valueMs);
  }

  private scheduleRenewal(delayMs: number): void {
    if (this.renewTimer !== null) clearTimeout(this.renewTimer);
    this.renewTimer = setTimeout(() => void this.renew(), delayMs);
  }

  private armLossTimer(): void {
    if (this.lossTimer !== null) clearTimeout(this.lossTimer);
    const remainingMs = this.safe.remainingMs(this.client.clock.monotonicMs());
    this.lossTimer = setTimeout(() => this.checkLoss(), remainingMs + 1);
  }

  private checkLoss(): void {
    if (this.state !== 'alive') return;
    if (this.safe.isSafe(this.client.clock.monotonicMs())) this.armLossTimer();
    else this.lose('no renewal was confirmed before safeUntil');
  }

  private async renew(): Promise<void> {
    this.renewTimer = null;
    if (this.state !== 'alive') return;
    const sentAtMs = this.client.clock.monotonicMs();
    let result: LeaseKeepaliveResult;
    try {
      const timeoutMs = Math.max(500, this.safe.remainingMs(sentAtMs));
      const frame = { type: 'keepalive', ids: [this.leaseId] };
      result = (await this.client.stream.request(frame, timeoutMs)) as LeaseKeepaliveResult;
    } catch {
      const retryMs = Math.floor(this.client.random() * renewalRetryMsMax) + 50;
      if (this.state === 'alive') this.scheduleRenewal(retryMs);
      return;
    }
    if (this.state !== 'alive') return;
    const entry = result.leases.find((lease) => lease.id === this.leaseId);
    if (entry === undefined || 'error' in entry) {
      const why = entry === undefined ? 'no answer for it' : entry.error;
      this.lose(`the cell no longer has the lease (${why})`);
      return;
    }
    // Confirmed too late: ownership was uncertain for a while, and that cannot be taken back.
    if (!this.safe.isSafe(this.client.clock.monotonicMs())) {
      this.lose('the renewal was confirmed only after safeUntil');
      return;
    }
    this.acknowledged(sentAtMs, entry.ttl * 1000);
  }

  private lose(reason: string): void {
    if (this.state !== 'alive') return;
    this.state = 'lost';
    this.clearTimers();
    const error = new SessionLostError(this.leaseId, reason);
    this.controller.abort(error);
    // Listeners run outside the network callbacks, so a slow one cannot delay the stream.
    setImmediate(() => this.emit('lost', error));
  }

  private clearTimers(): void {
    if (this.renewTimer !== null) clearTimeout(this.renewTimer);
    if (this.lossTimer !== null) clearTimeout(this.lossTimer);
    this.renewTimer = null;
    this.lossTimer = null;
  }
}
