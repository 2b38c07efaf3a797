// etcd's v3lock and v3election services over the node's LockApi and ElectionApi (src/lock), so
// a gRPC Lock waits in the same server-side queue as the native API's acquire. Names must be
// UTF-8 Baton lock names; the key handed back is the Baton contender key in etcd form
// (`locks/{name}/{12-digit revision}`), which Unlock and Resign take back.
import { status } from '@grpc/grpc-js';
import { electionKeyPrefix, lockKeyPrefix, type ElectionApi, type LeaderInfo, type LockApi } from '../../lock/api.js';
import { GrpcStatusError, etcdMessages, hasCode } from './errors.js';
import type { HeaderSource, ResponseHeader } from './header.js';
import { batonKey, etcdKey, utf8 } from './keys.js';
import { int } from './wire.js';

/** The longest single acquire the server allows (lock-http-contract: waitMs max 300 000). */
export const acquireWaitMsMax = 300_000;

/** A Baton contender key (`{prefix}{name}/{12 digits}`, names hold no '/') back to its name. */
export function nameOfKey(key: string, prefixOf: (name: string) => string): string | null {
  const root = prefixOf('').slice(0, -1);
  if (!key.startsWith(root)) return null;
  const parts = key.slice(root.length).split('/');
  if (parts.length !== 2 || !/^\d+$/.test(parts[1] as string)) return null;
  const name = parts[0] as string;
  return name !== '' && key === `${prefixOf(name)}${parts[1]}` ? name : null;
}

/**
 * Waits like etcd's Lock: until granted or the call ends. The server bounds one wait, so a long
 * wait is several acquires in a row (each timeout leaves the queue, the next rejoins at its end).
 */
export async function untilGranted<T>(
  attempt: (waitMs: number, signal: AbortSignal) => Promise<T>,
  signal: AbortSignal,
  deadlineMs: number,
): Promise<T> {
  for (;;) {
    const left = deadlineMs - Date.now();
    if (signal.aborted || left <= 0) throw new GrpcStatusError(status.DEADLINE_EXCEEDED, 'context deadline exceeded');
    try {
      return await attempt(Math.max(1, Math.min(acquireWaitMsMax, left)), signal);
    } catch (error) {
      if (!hasCode(error, 'lock_held')) throw error;
    }
  }
}

export class LockFacade {
  constructor(
    private readonly locks: LockApi,
    private readonly headers: HeaderSource,
  ) {}

  async lock(request: { name: Buffer; lease: string }, signal: AbortSignal, deadlineMs: number, principal: string): Promise<{ header: ResponseHeader; key: Buffer }> {
    const name = utf8(request.name, 'lock name');
    const lease = int(request.lease, 'lease', 1);
    const owner = `etcd v3lock, lease ${lease}`;
    const result = await untilGranted((waitMs, s) => this.locks.acquire(name, { lease, owner, waitMs, signal: s }, undefined, principal), signal, deadlineMs);
    return { header: this.headers.header(result.revision), key: etcdKey(result.key) };
  }

  async unlock(request: { key: Buffer }, principal: string): Promise<{ header: ResponseHeader }> {
    const key = batonKey(request.key);
    const name = nameOfKey(key, lockKeyPrefix);
    // etcd's Unlock deletes the key whatever it is; a key that is not a held lock is a no-op there.
    if (name === null) throw new GrpcStatusError(status.INVALID_ARGUMENT, 'etcdserver: not a lock key from Lock');
    try {
      const released = await this.locks.release(name, key, undefined, principal);
      return { header: this.headers.header(released.revision) };
    } catch (error) {
      if (hasCode(error, 'lock_not_held')) return { header: this.headers.header() };
      throw error;
    }
  }
}

interface LeaderKeyMsg {
  name: Buffer;
  key: Buffer;
  rev: string;
  lease: string;
}

export class ElectionFacade {
  constructor(
    private readonly elections: ElectionApi,
    private readonly headers: HeaderSource,
  ) {}

  async campaign(
    request: { name: Buffer; lease: string; value: Buffer },
    signal: AbortSignal,
    deadlineMs: number,
    principal: string,
  ): Promise<{ header: ResponseHeader; leader: LeaderKeyMsg }> {
    const name = utf8(request.name, 'election name');
    const lease = int(request.lease, 'lease', 1);
    const value = request.value ?? Buffer.alloc(0);
    const result = await untilGranted(
      (waitMs, s) => this.elections.campaign(name, { lease, value, waitMs, signal: s }, undefined, principal),
      signal,
      deadlineMs,
    );
    return {
      header: this.headers.header(result.revision),
      leader: { name: request.name, key: etcdKey(result.key), rev: String(result.term), lease: String(lease) },
    };
  }

  async proclaim(request: { leader: LeaderKeyMsg | null; value: Buffer }, principal: string): Promise<{ header: ResponseHeader }> {
    const { name, key } = this.leaderKey(request.leader);
    try {
      const done = await this.elections.proclaim(name, key, request.value ?? Buffer.alloc(0), undefined, principal);
      return { header: this.headers.header(done.revision) };
    } catch (error) {
      if (hasCode(error, 'lock_not_held')) throw new GrpcStatusError(status.UNKNOWN, etcdMessages.notLeader);
      throw error;
    }
  }

  async resign(request: { leader: LeaderKeyMsg | null }, principal: string): Promise<{ header: ResponseHeader }> {
    const { name, key } = this.leaderKey(request.leader);
    try {
      const done = await this.elections.resign(name, key, undefined, principal);
      return { header: this.headers.header(done.revision) };
    } catch (error) {
      // etcd's Resign of a key that no longer leads succeeds (nothing to give up).
      if (hasCode(error, 'lock_not_held')) return { header: this.headers.header() };
      throw error;
    }
  }

  async leader(request: { name: Buffer }, principal: string): Promise<{ header: ResponseHeader; kv: unknown }> {
    const answer = await this.elections.leader(utf8(request.name, 'election name'), principal);
    // etcd's election server returns concurrency.ErrElectionNoLeader as is: UNKNOWN, no "etcdserver:".
    if (answer.leader === null) throw new GrpcStatusError(status.UNKNOWN, etcdMessages.noLeader);
    return { header: this.headers.header(answer.revision), kv: leaderKv(answer.leader) };
  }

  /** Streams every leadership (etcd's Observe sends leaders only, never "no leader"). */
  observe(name: Buffer, write: (message: unknown) => void, signal: AbortSignal, principal: string): Promise<void> {
    return this.elections.observe(
      utf8(name, 'election name'),
      (change) => {
        if (change.leader !== null) write({ header: this.headers.header(change.revision), kv: leaderKv(change.leader) });
      },
      signal,
      principal,
    );
  }

  private leaderKey(leader: LeaderKeyMsg | null): { name: string; key: string } {
    if (leader === null || leader === undefined) throw new GrpcStatusError(status.INVALID_ARGUMENT, 'etcdserver: leader key is required');
    const key = batonKey(leader.key);
    const name = nameOfKey(key, electionKeyPrefix);
    if (name === null) throw new GrpcStatusError(status.UNKNOWN, etcdMessages.notLeader);
    return { name, key };
  }
}

/**
 * The leader's key as an etcd KeyValue. LeaderInfo carries no mod revision or version: they
 * read as the term and 1 (docs/etcd-compat.md).
 */
function leaderKv(leader: LeaderInfo): Record<string, unknown> {
  return {
    key: etcdKey(leader.key),
    value: Buffer.from(leader.value),
    create_revision: String(leader.term),
    mod_revision: String(leader.term),
    version: '1',
    lease: String(leader.lease),
  };
}
