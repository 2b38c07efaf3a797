// Elections over the client's stream (/v1/stream frames campaign, proclaim, resign, leader and
// observe, whose changes are pushed as `leadership` frames; docs/api/locks.md "On the stream"),
// sharing the one connection of the session, locks and watches. Like a lock, leadership is held
// by a session's lease; its `term` (the leader key's createRevision) is the fencing token of that
// leadership. Values are UTF-8 strings here (the API's default encoding).
import { InvalidArgumentError, LockNotHeldError } from '../base/errors.js';
import type { BatonClient } from './client.js';
import { anySignal, checkBytes, checkName, followOwnKey, requireSafe, type OwnerSession } from './coordination.js';
import { ClosedError, errorFromWire } from './errors.js';
import { contend } from './contend.js';
import { defaultLockWaitMs, lockWaitMsMax } from './lock.js';
import { backoffDelayMs, newRequestId } from './retry.js';
import { isUnknownOutcome, settleInBackground } from './settle.js';
import { sleep, streamCall } from './stream-call.js';
import type { ServerFrame, StreamConnection } from './stream-connection.js';

export interface LeaderInfo {
  readonly key: string;
  readonly value: string;
  /** The leader key's createRevision: the fencing token of this leadership. */
  readonly term: number;
  readonly lease: number;
}

/** The leadership at `revision` (null = no leader). */
export interface LeadershipChange {
  readonly revision: number;
  readonly leader: LeaderInfo | null;
}

export interface ObserveOptions {
  readonly signal?: AbortSignal;
  /**
   * Every this many ms (default 10,000; 0 = never) the observer also reads the leader
   * (linearizable). A node cut off from its quorum may keep an observation open but silent; if
   * the read shows a change the observation did not, the change is delivered and the observation
   * is opened again (a node that cannot read fails the read, and the stream moves elsewhere after
   * a few such answers). Bounds how stale an observer can be, at one read per interval.
   */
  readonly verifyMs?: number;
}

export interface CampaignOptions {
  /** How long to wait to become leader, ms (0 = only if nobody leads). Default 30 s. */
  readonly waitMs?: number;
  readonly signal?: AbortSignal;
  readonly requestId?: string;
}

interface CampaignAnswer {
  readonly key: string;
  readonly term: number;
  readonly revision: number;
}

/** Published values: the election API keeps them small (they are read by every observer). */
export const electionValueBytesMax = 64 * 1024;

/**
 * One election, seen by one session.
 *
 * @example
 * const election = client.election(session, 'scheduler');
 * const leadership = await election.campaign('http://10.0.0.7:8080', { waitMs: 60_000 });
 * runScheduler({ term: leadership.term, signal: leadership.signal });
 * for await (const { leader } of election.observe()) console.log(leader?.value, leader?.term);
 */
export class Election {
  constructor(
    private readonly client: BatonClient,
    readonly session: OwnerSession | null,
    readonly name: string,
  ) {
    checkName(name, 'election name');
  }

  /**
   * Waits (up to waitMs) until this session leads, publishing `value`. Throws LockHeldError when
   * the wait ends first, LeaseNotFoundError / SessionLostError when the session ended.
   */
  async campaign(value: string, options: CampaignOptions = {}): Promise<Leadership> {
    const session = this.requireSession();
    checkBytes(value, 'election value', electionValueBytesMax);
    const waitMs = options.waitMs ?? defaultLockWaitMs;
    if (!Number.isSafeInteger(waitMs) || waitMs < 0 || waitMs > lockWaitMsMax) {
      throw new InvalidArgumentError(`waitMs must be an integer in 0..${lockWaitMsMax}`);
    }
    requireSafe(session);
    const name = this.name;
    const answer = await contend<CampaignAnswer>(this.client, {
      frame: { type: 'campaign', name, lease: session.leaseId, value },
      waitMs,
      requestId: options.requestId,
      session,
      signal: anySignal([session.signal, options.signal]),
      giveBack: (won) => ({ type: 'resign', name, key: won.key }),
    });
    const leadership = new Leadership(this.client, session, this.name, answer, value);
    // The leader key deleted by anyone: leadership ends now, not at the next renewal.
    followOwnKey(this.client, answer.key, answer.term, answer.revision, leadership.signal, (reason) => leadership.end(reason));
    if (!session.isSafe()) {
      void leadership.resign().catch(() => undefined);
      requireSafe(session);
    }
    return leadership;
  }

  /** The current leader (linearizable), or null. */
  async leader(): Promise<LeadershipChange> {
    return streamCall<LeadershipChange>(this.client, { type: 'leader', name: this.name }, { mutation: false });
  }

  /**
   * The current leadership, then every change of leader or of its value, in order. Survives
   * dropped connections and node failures (reconnects elsewhere; a change already delivered is
   * not repeated). Ends when the signal aborts or `cancel()` is called on the result.
   */
  observe(options: ObserveOptions = {}): LeaderObserver {
    return new LeaderObserver(this.client, this.name, options);
  }

  private requireSession(): OwnerSession {
    if (this.session === null) throw new InvalidArgumentError('campaigning needs a session');
    return this.session;
  }
}

/** This session's leadership. Its signal aborts when the session is lost or leadership ends. */
export class Leadership {
  readonly key: string;
  /** The fencing token of this leadership (the leader key's createRevision). */
  readonly term: number;
  readonly revision: number;
  /** The session lease the leadership hangs on. */
  readonly lease: number;
  private currentValue: string;
  private readonly ended = new AbortController();
  readonly signal: AbortSignal;
  private resigning: Promise<{ resigned: boolean }> | null = null;

  constructor(
    private readonly client: BatonClient,
    private readonly session: OwnerSession,
    readonly name: string,
    answer: CampaignAnswer,
    value: string,
  ) {
    this.key = answer.key;
    this.term = answer.term;
    this.revision = answer.revision;
    this.lease = session.leaseId;
    this.currentValue = value;
    this.signal = anySignal([session.signal, this.ended.signal]);
  }

  get value(): string {
    return this.currentValue;
  }

  get safeUntil(): number {
    return this.signal.aborted ? Number.NEGATIVE_INFINITY : this.session.safeUntil;
  }

  isSafe(): boolean {
    return !this.signal.aborted && this.session.isSafe();
  }

  /** Internal: leadership ended for `reason` (the key went). */
  end(reason: Error): void {
    this.ended.abort(reason);
  }

  /** Publishes a new value without giving up leadership; LockNotHeldError if no longer leader. */
  async proclaim(value: string): Promise<{ revision: number }> {
    if (this.signal.aborted) throw this.signal.reason;
    checkBytes(value, 'election value', electionValueBytesMax);
    try {
      const answer = await streamCall<{ revision: number; term: number }>(
        this.client,
        { type: 'proclaim', name: this.name, key: this.key, value },
        { mutation: true },
      );
      this.currentValue = value;
      return { revision: answer.revision };
    } catch (error) {
      if (error instanceof LockNotHeldError) this.ended.abort(error);
      throw error;
    }
  }

  /** Aborts the signal, then gives leadership up. Idempotent. */
  resign(): Promise<{ resigned: boolean }> {
    this.resigning ??= this.doResign();
    return this.resigning;
  }

  private async doResign(): Promise<{ resigned: boolean }> {
    this.ended.abort(new ClosedError(`resigned from ${this.name}`));
    const frame = { type: 'resign', name: this.name, key: this.key };
    const requestId = newRequestId();
    try {
      await streamCall(this.client, frame, { mutation: true, requestId });
      return { resigned: true };
    } catch (error) {
      if (error instanceof LockNotHeldError) return { resigned: false };
      // Maybe still leading (and renewed): keep resigning in the background until it is definite.
      if (isUnknownOutcome(error)) settleInBackground(this.client, { frame, requestId, session: this.session });
      throw error;
    }
  }
}

const reopenPolicy = {
  attemptsMax: 0,
  delayMsBase: 100,
  delayMsMax: 3_000,
  deadlineMs: 0,
  attemptTimeoutMs: 5_000,
};
const queuedChangesMax = 1_000;
let observationCounter = 0;

/**
 * An async iterator of leadership changes (see Election.observe), fed by an `observe` frame on
 * the client's stream. The server ends an observation with its connection; on the next
 * connection (maybe another node) it is opened again and starts with the current leadership,
 * which `deliver` drops when already seen.
 */
export class LeaderObserver implements AsyncIterable<LeadershipChange> {
  private readonly controller = new AbortController();
  private readonly queue: LeadershipChange[] = [];
  private readonly stream: StreamConnection;
  private failure: Error | null = null;
  private wake: (() => void) | null = null;
  private last: LeadershipChange | null = null;
  /** The id of the observation now open (null between observations). */
  private currentId: string | null = null;
  private failures = 0;
  private verifying = false;
  private timer: NodeJS.Timeout | null = null;
  private forget: () => void = () => undefined;
  /** Observations opened (1 + reopenings after reconnections, ends and corrections). */
  connections = 0;
  /** Changes found by the periodic leader read that the observation had not delivered. */
  corrections = 0;

  constructor(
    private readonly client: BatonClient,
    private readonly name: string,
    options: ObserveOptions = {},
  ) {
    this.stream = client.stream;
    const verifyMs = options.verifyMs ?? 10_000;
    this.timer = verifyMs > 0 ? setInterval(() => void this.verify(), verifyMs) : null;
    this.timer?.unref();
    this.forget = client.onClose(() => this.cancel()); // cancels at once if the client is closed
    const { signal } = options;
    signal?.addEventListener('abort', () => this.cancel(), { once: true });
    if (signal?.aborted === true || this.controller.signal.aborted) this.cancel();
    else this.open();
  }

  cancel(): void {
    if (!this.controller.signal.aborted) this.controller.abort(new ClosedError('observer canceled'));
    this.close();
    this.forget();
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    this.notify();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<LeadershipChange> {
    try {
      for (;;) {
        const next = this.queue.shift();
        if (next !== undefined) {
          yield next;
          continue;
        }
        if (this.failure !== null) throw this.failure;
        if (this.controller.signal.aborted) return;
        await new Promise<void>((resolve) => (this.wake = resolve));
      }
    } finally {
      this.cancel();
    }
  }

  /** Opens a new observation under a fresh id (an old id may still be closing on the server). */
  private open(): void {
    if (this.controller.signal.aborted) return;
    const id = `o${++observationCounter}`;
    this.currentId = id;
    this.stream.subscribe(id, {
      onConnected: () => {
        this.connections++;
        this.stream.send({ id, type: 'observe', name: this.name });
      },
      onDisconnected: () => undefined, // the server ended it; onConnected opens it there again
      onFrame: (frame) => this.onFrame(id, frame),
    });
  }

  private close(): void {
    const id = this.currentId;
    if (id === null) return;
    this.currentId = null;
    this.stream.send({ id, type: 'observeCancel' });
    this.stream.unsubscribe(id);
  }

  private onFrame(id: string, frame: ServerFrame): void {
    if (id !== this.currentId || this.controller.signal.aborted) return;
    if (frame.type === 'leadership') {
      this.failures = 0;
      this.deliver({ revision: Number(frame['revision']), leader: (frame['leader'] as LeaderInfo | null) ?? null });
      return;
    }
    if (frame.type !== 'error') return;
    const error = errorFromWire(frame['error']);
    this.stream.unsubscribe(id);
    this.currentId = null;
    if (error.code === 'invalid_argument' || error.code === 'too_large') {
      this.failure = error;
      this.cancel();
      return;
    }
    // Ended on the server (its node cannot serve it now): open again after a jittered pause.
    const delayMs = backoffDelayMs(reopenPolicy, this.failures++, this.client.random);
    void sleep(delayMs, this.controller.signal).then(() => this.open());
  }

  /** A linearizable read of the leader; a change the observation missed is delivered, and it reopens. */
  private async verify(): Promise<void> {
    if (this.verifying || this.controller.signal.aborted || this.last === null) return;
    this.verifying = true;
    try {
      const current = await streamCall<LeadershipChange>(
        this.client,
        { type: 'leader', name: this.name },
        { mutation: false, signal: this.controller.signal },
      );
      const last = this.last;
      if (this.controller.signal.aborted || last === null) return;
      if (current.revision > last.revision && !sameLeader(last.leader, current.leader)) {
        this.corrections++;
        this.deliver({ revision: current.revision, leader: current.leader });
        this.close();
        this.open();
      }
    } catch {
      // No answer now: the observation (or the next read) will tell.
    } finally {
      this.verifying = false;
    }
  }

  /** Only real changes pass: a reopened observation starts with the current state, maybe seen already. */
  private deliver(change: LeadershipChange): void {
    const last = this.last;
    if (last !== null && change.revision < last.revision) return;
    if (last !== null && sameLeader(last.leader, change.leader)) return;
    this.last = change;
    if (this.queue.length >= queuedChangesMax) this.queue.shift(); // keep the newest: it is state
    this.queue.push(change);
    this.notify();
  }

  private notify(): void {
    this.wake?.();
    this.wake = null;
  }
}

function sameLeader(a: LeaderInfo | null, b: LeaderInfo | null): boolean {
  if (a === null || b === null) return a === b;
  return a.key === b.key && a.value === b.value && a.term === b.term;
}
