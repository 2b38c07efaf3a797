// The lock workload: lock workers contend for one lock through the client library's Locks
// (POST /v1/locks/{name}/acquire and /release), each on a lease it grants and renews itself, so
// every grant and renewal is in the history as evidence for the lock-safety checker. A holder
// writes to a protected resource through the fencing guard (src/fencing) with its token. Now
// and then a holder "pauses" like a long GC: it stops renewing, sleeps past its TTL (the cell
// hands the lock on) and then writes with its old token, which the guard must reject once a
// newer holder wrote. History processes: the worker's own, and a second one for its renewals.
import { SeededRandom, randomInt } from '../../src/base/random.js';
import { Locks, monotonicNowMs, type BatonClient, type LeaseGrant, type Lock, type OwnerSession } from '../../src/client/index.js';
import type { LockResult } from '../../src/check/index.js';
import type { FencingGuard } from '../../src/fencing/index.js';
import { sleep } from '../cluster/harness.js';
import { recorded, type Recorder } from './kv-client.js';

export const lockName = 'faults-lock';
export const lockResource = 'faults-resource';
const ttlMs = 5_000;
/** Below TTL: what the worker believes of its lease, as the client's own sessions do. */
const safetyMarginMs = 1_000;

export interface LockLoopOptions {
  readonly recorder: Recorder;
  /** The worker's process; its renewals are recorded as `renewProcess`. */
  readonly process: number;
  readonly renewProcess: number;
  readonly client: BatonClient;
  readonly guard: FencingGuard;
  readonly deadline: number;
  readonly seed: bigint;
  /** One hold in this many pauses past its TTL (default 4). */
  readonly pauseOneIn?: number;
  /** A lease's name in the history (default its id; across cells ids repeat, so id@cell). */
  readonly leaseHistoryId?: (grant: LeaseGrant) => string;
}

/** A lease this worker renews itself, seen by Locks as its session. */
class RecordedSession implements OwnerSession {
  private readonly lost = new AbortController();
  readonly signal = this.lost.signal;
  safeUntil: number;
  constructor(
    readonly leaseId: number,
    grantSentMs: number,
    /** The lease's name in the history. */
    readonly historyId: string = String(leaseId),
  ) {
    this.safeUntil = grantSentMs + ttlMs - safetyMarginMs;
  }
  isSafe(): boolean {
    return !this.signal.aborted && monotonicNowMs() < this.safeUntil;
  }
  end(reason: string): void {
    this.lost.abort(new Error(reason));
  }
}

export async function lockLoop(options: LockLoopOptions): Promise<void> {
  const { recorder, process, client } = options;
  const random = new SeededRandom(options.seed * 104_729n + BigInt(process));
  for (let n = 0; n < 10_000 && recorder.now() < options.deadline; n++) {
    const sentMs = monotonicNowMs();
    const granted = await recorded<LockResult>(recorder, process, { type: 'lease-grant', ttlMs }, async () => {
      const grant = await client.leaseGrant(ttlMs / 1000);
      return { type: 'lease-grant', leaseId: options.leaseHistoryId?.(grant) ?? String(grant.id) };
    });
    if (granted.type !== 'ok' || granted.result.type !== 'lease-grant') {
      await sleep(200);
      continue;
    }
    const leaseId = granted.result.leaseId;
    const session = new RecordedSession(Number.parseInt(leaseId, 10), sentMs, leaseId);
    const renewing = renew(options, session);
    try {
      await holdOnce(options, random, session, leaseId);
    } finally {
      session.end('the worker is done with this lease');
      await renewing;
    }
  }
}

async function holdOnce(
  options: LockLoopOptions,
  random: SeededRandom,
  session: RecordedSession,
  leaseId: string,
): Promise<void> {
  const { recorder, process, client, guard } = options;
  let lock: Lock | null = null;
  const acquired = await recorded<LockResult>(recorder, process, { type: 'acquire', lock: lockName, leaseId }, async () => {
    lock = await new Locks(client, session).acquire(lockName, { waitMs: 3_000, owner: `p${process}` });
    return { type: 'acquire', fencingToken: lock.token };
  });
  const held = lock as Lock | null;
  if (acquired.type !== 'ok' || held === null) {
    await revoke(options, leaseId);
    return;
  }
  const token = held.token;
  const write = (): Promise<unknown> =>
    recorded<LockResult>(recorder, process, { type: 'guarded-write', resource: lockResource, fencingToken: token }, async () => ({
      type: 'guarded-write',
      accepted: guard.check(lockResource, token).accepted,
    }));
  for (let i = randomInt(random, 1, 4); i > 0 && session.isSafe(); i--) {
    await write();
    await sleep(randomInt(random, 50, 400));
  }
  if (randomInt(random, 1, options.pauseOneIn ?? 4) === 1) {
    // A long pause: the lease runs out and the lock moves on; then a late write, fenced off.
    session.end('paused past the TTL');
    await sleep(ttlMs + randomInt(random, 1_000, 2_000));
    await write();
  }
  // released: false when the lease had ended meanwhile (nothing to release): still an answer.
  await recorded<LockResult>(recorder, process, { type: 'release', lock: lockName, fencingToken: token }, async () => {
    await held.release();
    return { type: 'release' };
  });
  if (session.isSafe()) await revoke(options, leaseId);
}

/** Renews every ~TTL/4 while the session is wanted; each renewal is a recorded keepalive. */
async function renew(options: LockLoopOptions, session: RecordedSession): Promise<void> {
  const { recorder, renewProcess, client } = options;
  const leaseId = session.historyId;
  while (!session.signal.aborted) {
    await Promise.race([sleep(ttlMs / 4), new Promise((resolve) => session.signal.addEventListener('abort', resolve))]);
    if (session.signal.aborted) return;
    const sentMs = monotonicNowMs();
    const answer = await recorded<LockResult>(recorder, renewProcess, { type: 'lease-keepalive', leaseId, ttlMs }, async () => {
      const result = await client.leaseKeepalive([session.leaseId]);
      const item = result.leases.find((lease) => lease.id === session.leaseId);
      return { type: 'lease-keepalive', expired: item === undefined || 'error' in item };
    });
    if (answer.type === 'ok' && answer.result.type === 'lease-keepalive') {
      if (answer.result.expired) session.end('lease expired');
      else session.safeUntil = Math.max(session.safeUntil, sentMs + ttlMs - safetyMarginMs);
    }
  }
}

async function revoke(options: LockLoopOptions, leaseId: string): Promise<void> {
  await recorded<LockResult>(options.recorder, options.process, { type: 'lease-revoke', leaseId }, async () => {
    await options.client.leaseRevoke(Number.parseInt(leaseId, 10));
    return { type: 'lease-revoke' };
  });
}
