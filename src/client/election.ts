// Elections over the cell's election API (POST /v1/elections/{name}/campaign, proclaim, resign,
// GET .../leader and the SSE .../observe). Like a lock, leadership is held by a session's lease;
// its `term` (the leader key's createRevision) is the fencing token of that leadership. Values
// are UTF-8 strings here (the API's default encoding).
import { InvalidArgumentError, LockNotHeldError } from '../base/errors.js';
import type { BatonClient } from './client.js';
import { monotonicNowMs } from './clock.js';
import {
  anySignal,
  checkBytes,
  checkName,
  followOwnKey,
  postJson,
  requireSafe,
  type OwnerSession,
} from './coordination.js';
import { ClosedError, errorFromWire } from './errors.js';
import { defaultLockWaitMs, lockWaitMsMax } from './lock.js';
import { backoffDelayMs } from './retry.js';
import { sseData } from './sse.js';

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
   * (linearizable). A node cut off from its quorum keeps an SSE stream open but silent; if the
   * read shows a change the stream did not, the change is delivered and the stream moves to
   * another node. Bounds how stale an observer can be, at one read per interval.
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
const answerSlackMs = 5_000;

const electionPath = (name: string, action: string): string =>
  `/v1/elections/${encodeURIComponent(name)}/${action}`;

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
    const lease = session.leaseId;
    const startMs = monotonicNowMs();
    const bodyFor = (attempt: number): string => {
      const left = attempt === 0 ? waitMs : Math.max(0, waitMs - Math.round(monotonicNowMs() - startMs));
      return JSON.stringify({ lease, value, waitMs: left });
    };
    const answer = await postJson<CampaignAnswer>(this.client, electionPath(this.name, 'campaign'), null, {
      mutation: true,
      requestId: options.requestId,
      signal: anySignal([session.signal, options.signal]),
      attemptTimeoutMs: waitMs + answerSlackMs,
      deadlineMs: waitMs + this.client.retryPolicy.deadlineMs,
      bodyFor,
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
    return this.client.request<LeadershipChange>({
      method: 'GET',
      path: electionPath(this.name, 'leader'),
      mutation: false,
    });
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
      const answer = await postJson<{ revision: number; term: number }>(
        this.client,
        electionPath(this.name, 'proclaim'),
        { key: this.key, value },
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
    try {
      await postJson(this.client, electionPath(this.name, 'resign'), { key: this.key }, { mutation: true });
      return { resigned: true };
    } catch (error) {
      if (error instanceof LockNotHeldError) return { resigned: false };
      throw error;
    }
  }
}

const reconnectPolicy = {
  attemptsMax: 0,
  delayMsBase: 100,
  delayMsMax: 3_000,
  deadlineMs: 0,
  attemptTimeoutMs: 5_000,
};
const queuedChangesMax = 1_000;

/** An async iterator of leadership changes (see Election.observe). */
export class LeaderObserver implements AsyncIterable<LeadershipChange> {
  private readonly controller = new AbortController();
  private readonly queue: LeadershipChange[] = [];
  private failure: Error | null = null;
  private wake: (() => void) | null = null;
  private last: LeadershipChange | null = null;
  /** The SSE connection now open (aborted to move elsewhere when it fell behind). */
  private connection: AbortController | null = null;
  /** Connections opened (1 + reconnections). */
  connections = 0;
  /** Changes found by the periodic leader read that the stream had not delivered. */
  corrections = 0;

  constructor(
    private readonly client: BatonClient,
    private readonly name: string,
    options: ObserveOptions = {},
  ) {
    const { signal } = options;
    signal?.addEventListener('abort', () => this.cancel(), { once: true });
    if (signal?.aborted === true) this.cancel();
    const forget = client.onClose(() => this.cancel());
    const verifyMs = options.verifyMs ?? 10_000;
    const timer = verifyMs > 0 ? setInterval(() => void this.verify(), verifyMs) : null;
    timer?.unref();
    void this.run().finally(() => {
      forget();
      if (timer !== null) clearInterval(timer);
    });
  }

  private verifying = false;

  /** A linearizable read of the leader; a change the stream missed is delivered, the stream moved. */
  private async verify(): Promise<void> {
    if (this.verifying || this.controller.signal.aborted || this.last === null) return;
    this.verifying = true;
    try {
      const current = await this.client.request<LeadershipChange>({
        method: 'GET',
        path: electionPath(this.name, 'leader'),
        mutation: false,
      });
      const last = this.last;
      if (this.controller.signal.aborted || last === null) return;
      if (current.revision > last.revision && !sameLeader(last.leader, current.leader)) {
        this.corrections++;
        this.deliver({ revision: current.revision, leader: current.leader });
        this.connection?.abort(new Error('the stream fell behind a linearizable read'));
      }
    } catch {
      // No answer now: the stream (or the next read) will tell.
    } finally {
      this.verifying = false;
    }
  }

  cancel(): void {
    if (!this.controller.signal.aborted) this.controller.abort(new ClosedError('observer canceled'));
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

  private async run(): Promise<void> {
    const signal = this.controller.signal;
    for (let failures = 0; !signal.aborted; ) {
      const endpoint = this.client.endpoints.pick();
      const connection = new AbortController();
      this.connection = connection;
      try {
        const url = `${endpoint}${electionPath(this.name, 'observe')}`;
        this.connections++;
        const both = AbortSignal.any([signal, connection.signal]);
        for await (const data of sseData(url, both, this.client.retryPolicy.attemptTimeoutMs)) {
          failures = 0;
          const frame = data as { error?: unknown; revision?: number; leader?: LeaderInfo | null };
          if (frame.error !== undefined) throw errorFromWire(frame.error);
          this.deliver({ revision: Number(frame.revision), leader: frame.leader ?? null });
        }
      } catch (error) {
        if (signal.aborted) break;
        const code = (error as { code?: string }).code;
        if (code === 'invalid_argument' || code === 'too_large') {
          this.failure = error as Error;
          break;
        }
      }
      if (signal.aborted) break;
      // The stream ended or failed: this node may be down or cut off; come back elsewhere, jittered.
      this.client.endpoints.failed(endpoint);
      await sleep(backoffDelayMs(reconnectPolicy, failures++, this.client.random), signal);
    }
    this.controller.abort(this.failure ?? new ClosedError('observer ended'));
    this.notify();
  }

  /** Only real changes pass: a reconnection restarts with the current state, maybe seen already. */
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

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
