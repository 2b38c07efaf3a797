// Locks over the client's stream (/v1/stream frames lockAcquire, lockRelease, lockState,
// fencingCheck; docs/api/locks.md "On the stream"), so a process's locks share the one connection
// of its session and watches. A lock is held by a session's lease: the cell queues contenders in
// revision order and deletes the holder's key when its lease ends. On this side, a held lock is a
// `Lock` whose `signal` aborts as soon as the session can no longer vouch for the lease
// (safeUntil passed) or the lock is released: owner-only work tied to the signal stops before the
// cell can hand the lock to someone else. That stops a well-behaved owner; only the fencing
// token, checked by the protected resource, stops a badly delayed one (docs/client.md).
import { InvalidArgumentError, LockNotHeldError } from '../base/errors.js';
import type { BatonClient } from './client.js';
import { ClosedError } from './errors.js';
import { anySignal, checkBytes, checkName, followOwnKey, requireSafe, type OwnerSession } from './coordination.js';
import { contend } from './contend.js';
import { newRequestId } from './retry.js';
import { isUnknownOutcome, settleInBackground } from './settle.js';
import { streamCall } from './stream-call.js';
import type { FencingCheckResult, LockEntry, LockState } from '../lock/api.js';

// The wire shapes are the server's (the same JSON over HTTP and the stream).
export type { FencingCheckResult, LockEntry, LockState } from '../lock/api.js';

export interface AcquireOptions {
  /** How long to wait in the queue, ms: 0 = try once (LockHeldError when taken). Default 30 s. */
  readonly waitMs?: number;
  /** Free text naming this contender for operators (≤ 256 bytes). */
  readonly owner?: string;
  /** Give up waiting (the cell then deletes this contender's queue entry). */
  readonly signal?: AbortSignal;
  /** A caller-chosen Request-ID; default: drawn once and reused by every retry. */
  readonly requestId?: string;
  /**
   * Watch the lock's key while held (default true): if anyone deletes it (an operator's
   * `baton del`), `signal` aborts with LockNotHeldError at once, not at the next renewal.
   */
  readonly followKey?: boolean;
}

export interface ReleaseResult {
  /** False when the cell no longer had this key as holder (lease ended, already released). */
  readonly released: boolean;
  readonly revision?: number;
}

interface AcquireAnswer {
  readonly key: string;
  readonly fencingToken: number;
  readonly revision: number;
  readonly owner: string;
  readonly lease: number;
  readonly waitedMs: number;
}

export const defaultLockWaitMs = 30_000;
export const lockWaitMsMax = 300_000;
const ownerBytesMax = 256;
/**
 * The locks of one session.
 *
 * @example
 * const session = await client.session({ ttlSeconds: 10 });
 * const lock = await client.locks(session).acquire('reports', { waitMs: 5_000 });
 * try {
 *   await writeReport({ fencingToken: lock.token, signal: lock.signal });
 * } finally {
 *   await lock.release();
 * }
 */
export class Locks {
  constructor(
    private readonly client: BatonClient,
    readonly session: OwnerSession,
  ) {}

  /**
   * Waits (up to waitMs) until this session holds `name`. Throws LockHeldError when the wait
   * ends first (details.holder), LeaseNotFoundError when the lease ended, the session's
   * SessionLostError when it was lost meanwhile, or the signal's reason when aborted.
   */
  async acquire(name: string, options: AcquireOptions = {}): Promise<Lock> {
    checkName(name, 'lock name');
    const waitMs = options.waitMs ?? defaultLockWaitMs;
    if (!Number.isSafeInteger(waitMs) || waitMs < 0 || waitMs > lockWaitMsMax) {
      throw new InvalidArgumentError(`waitMs must be an integer in 0..${lockWaitMsMax}`);
    }
    const owner = options.owner ?? '';
    checkBytes(owner, 'owner', ownerBytesMax);
    requireSafe(this.session);
    const answer = await contend<AcquireAnswer>(this.client, {
      frame: { type: 'lockAcquire', name, lease: this.session.leaseId, ...(owner === '' ? {} : { owner }) },
      waitMs,
      requestId: options.requestId,
      session: this.session,
      signal: anySignal([this.session.signal, options.signal]),
      giveBack: (granted) => ({ type: 'lockRelease', name, key: granted.key }),
    });
    const lock = new Lock(this.client, this.session, name, answer);
    if (options.followKey !== false) lock.follow();
    if (!this.session.isSafe()) {
      // Granted, but the session cannot vouch for the lease any more: never hand that out.
      void lock.release().catch(() => undefined);
      requireSafe(this.session);
    }
    return lock;
  }

  /** The holder and the queue (linearizable). */
  state(name: string): Promise<LockState> {
    checkName(name, 'lock name');
    return streamCall<LockState>(this.client, { type: 'lockState', name }, { mutation: false });
  }

  /** Is `token` the current holder's token? (linearizable; for resources that cannot store tokens) */
  check(name: string, token: number): Promise<FencingCheckResult> {
    checkName(name, 'lock name');
    return streamCall<FencingCheckResult>(this.client, { type: 'fencingCheck', lock: name, token }, { mutation: false });
  }
}

/** A held lock. Its signal aborts when the session is lost or the lock is released. */
export class Lock {
  readonly key: string;
  /** The fencing token: pass it with every effect and let the resource reject lower ones. */
  readonly token: number;
  /** The cell revision at which this session became the holder. */
  readonly revision: number;
  readonly owner: string;
  readonly waitedMs: number;
  private readonly released = new AbortController();
  readonly signal: AbortSignal;
  private releasing: Promise<ReleaseResult> | null = null;

  constructor(
    private readonly client: BatonClient,
    private readonly session: OwnerSession,
    readonly name: string,
    answer: AcquireAnswer,
  ) {
    this.key = answer.key;
    this.token = answer.fencingToken;
    this.revision = answer.revision;
    this.owner = answer.owner;
    this.waitedMs = answer.waitedMs;
    this.signal = anySignal([session.signal, this.released.signal]);
  }

  /** Internal: abort the signal if the key goes (see AcquireOptions.followKey). */
  follow(): void {
    followOwnKey(this.client, this.key, this.token, this.revision, this.signal, (reason) => {
      this.released.abort(reason);
    });
  }

  /** Monotonic ms until which the lock is certainly still held (-Infinity once released/lost). */
  get safeUntil(): number {
    return this.signal.aborted ? Number.NEGATIVE_INFINITY : this.session.safeUntil;
  }

  /** True while the lock is certainly held right now. */
  isSafe(): boolean {
    return !this.signal.aborted && this.session.isSafe();
  }

  /** Throws the reason (SessionLostError, ClosedError) when the lock can no longer be assumed. */
  throwIfLost(): void {
    if (this.signal.aborted) throw this.signal.reason;
    requireSafe(this.session);
  }

  /**
   * Aborts the signal first (owner-only work stops), then deletes the key so the next waiter
   * gets the lock. Idempotent. `released: false` when the cell no longer had this key as holder.
   */
  release(): Promise<ReleaseResult> {
    this.releasing ??= this.doRelease();
    return this.releasing;
  }

  private async doRelease(): Promise<ReleaseResult> {
    this.released.abort(new ClosedError(`lock ${this.name} released`));
    const frame = { type: 'lockRelease', name: this.name, key: this.key };
    const requestId = newRequestId();
    try {
      const answer = await streamCall<{ released: boolean; revision: number }>(this.client, frame, { mutation: true, requestId });
      return { released: answer.released, revision: answer.revision };
    } catch (error) {
      if (error instanceof LockNotHeldError) return { released: false };
      // Maybe still held (and renewed): keep releasing in the background until it is definite.
      if (isUnknownOutcome(error)) settleInBackground(this.client, { frame, requestId, session: this.session });
      throw error;
    }
  }
}
