// Locks on contender queues (api.md, Locks): acquire = queue under `/locks/{name}/` and wait for
// the entry ahead only; the fencing token is the entry's creation revision. Release, the operator
// listing and the fencing check (Chubby's CheckSequencer) are committed or linearizable.
import * as limits from '../base/limits.js';
import { InvalidArgumentError, LockHeldError, LockNotHeldError, TooLargeError } from '../base/errors.js';
import type { KeyValue } from '../mvcc/index.js';
import { lockAccesses, type AccessGuard } from '../auth/index.js';
import {
  lockKeyPrefix,
  type AcquireRequest,
  type AcquireResult,
  type FencingCheckResult,
  type LockApi,
  type LockEntry,
  type LockState,
} from './api.js';
import type { QueueCell, QueueContender } from './queue.js';

export interface LockLimits {
  /** An acquire waits at most this long, whatever it asks for. */
  readonly waitMsMax: number;
  readonly ownerBytesMax: number;
  /** GET /v1/locks/{name} lists at most this many entries. */
  readonly listMax: number;
}

export const defaultLockLimits: LockLimits = {
  waitMsMax: limits.lockWaitMsMax,
  ownerBytesMax: limits.lockOwnerBytesMax,
  listMax: limits.lockListMax,
};
export const defaultWaitMs = 30_000;

const nameBytesMax = 128;

/** A lock or election name: one path segment of 1..128 bytes. */
export function validateName(name: string, what: 'lock' | 'election'): string {
  const bytes = Buffer.byteLength(name);
  if (bytes === 0 || bytes > nameBytesMax || name.includes('/')) {
    throw new InvalidArgumentError(`a ${what} name is 1..${nameBytesMax} bytes without "/"`, { name });
  }
  return name;
}

export class LockService implements LockApi {
  constructor(
    private readonly cell: QueueCell,
    private readonly contender: QueueContender,
    /** Decides the reads (state, fencing check); acquires and releases are decided at apply. */
    private readonly guard: AccessGuard,
    private readonly nowMs: () => number,
    readonly limits: LockLimits = defaultLockLimits,
  ) {}

  async acquire(name: string, request: AcquireRequest, requestId: string | undefined, principal: string): Promise<AcquireResult> {
    const prefix = lockKeyPrefix(validateName(name, 'lock'));
    if (Buffer.byteLength(request.owner) > this.limits.ownerBytesMax) {
      throw new TooLargeError('owner', Buffer.byteLength(request.owner), this.limits.ownerBytesMax);
    }
    if (!Number.isSafeInteger(request.waitMs) || request.waitMs < 0 || request.waitMs > this.limits.waitMsMax) {
      throw new InvalidArgumentError(`waitMs is an integer in [0, ${this.limits.waitMsMax}]`, { waitMs: request.waitMs });
    }
    const value = new TextEncoder().encode(JSON.stringify({ owner: request.owner, since: this.nowMs() }));
    try {
      const grant = await this.contender.contend(
        { prefix, value, lease: request.lease, waitMs: request.waitMs, signal: request.signal, origin: principal },
        requestId,
      );
      return {
        key: grant.kv.key,
        fencingToken: grant.kv.createRevision,
        revision: grant.revision,
        owner: lockEntry(grant.kv).owner,
        lease: grant.kv.lease,
        waitedMs: grant.waitedMs,
      };
    } catch (error) {
      throw withReadableHolder(error);
    }
  }

  async release(name: string, key: string, requestId: string | undefined, principal: string): Promise<{ revision: number }> {
    const prefix = lockKeyPrefix(validateName(name, 'lock'));
    try {
      const { result } = await this.cell.propose({ type: 'seqRelease', prefix, key }, requestId, principal);
      return { revision: result.revision };
    } catch (error) {
      throw withReadableHolder(error);
    }
  }

  async state(name: string, principal: string): Promise<LockState> {
    const prefix = lockKeyPrefix(validateName(name, 'lock'));
    this.guard.check(principal, () => lockAccesses(name));
    const result = await this.cell.linearizableRange({ type: 'get', key: prefix, prefix: true, limit: this.limits.listMax });
    const entries = result.kvs.map(lockEntry);
    return { revision: result.revision, holder: entries[0] ?? null, queue: entries.slice(1) };
  }

  /** Fencing checks answered here: `stale` counts tokens that no longer hold the lock. */
  readonly fencingChecks = { valid: 0, stale: 0 };

  async check(name: string, token: number, principal: string): Promise<FencingCheckResult> {
    const prefix = lockKeyPrefix(validateName(name, 'lock'));
    this.guard.check(principal, () => lockAccesses(name));
    if (!Number.isSafeInteger(token) || token < 1) throw new InvalidArgumentError('token is an integer >= 1', { token });
    const result = await this.cell.linearizableRange({ type: 'get', key: prefix, prefix: true, limit: 1, skipCount: true });
    const holder = result.kvs[0] === undefined ? null : lockEntry(result.kvs[0]);
    if (holder?.fencingToken === token) this.fencingChecks.valid++;
    else this.fencingChecks.stale++;
    return { valid: holder?.fencingToken === token, currentToken: holder?.fencingToken ?? null, holder, revision: result.revision };
  }
}

/** A lock entry's value is {"owner", "since"} written by acquire; anything else shows as raw text. */
export function lockEntry(kv: KeyValue): LockEntry {
  const text = new TextDecoder().decode(kv.value);
  let owner = text;
  let since = 0;
  try {
    const parsed = JSON.parse(text) as { owner?: unknown; since?: unknown };
    if (typeof parsed.owner === 'string') owner = parsed.owner;
    if (typeof parsed.since === 'number') since = parsed.since;
  } catch {
    // not written by acquire: keep the raw text
  }
  return { key: kv.key, owner, fencingToken: kv.createRevision, lease: kv.lease, waitingSinceMs: since };
}

/** The state machine names a holder by its raw value; operators want the owner. */
function withReadableHolder(error: unknown): unknown {
  if (!(error instanceof LockHeldError || error instanceof LockNotHeldError)) return error;
  const holder = error.details['holder'] as { key: string; fencingToken: number; lease: number; value: string } | null | undefined;
  if (holder === undefined || holder === null || typeof holder.value !== 'string') return error;
  const entry = lockEntry({
    key: holder.key,
    value: new TextEncoder().encode(holder.value),
    version: 1,
    createRevision: holder.fencingToken,
    modRevision: holder.fencingToken,
    lease: holder.lease,
  });
  const Kind = error instanceof LockHeldError ? LockHeldError : LockNotHeldError;
  return new Kind(error.message, { ...error.details, holder: entry });
}
