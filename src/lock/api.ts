// Locks, elections and the fencing check as the wire layers (HTTP, /v1/stream, the etcd gRPC
// facade) hand them to a node (api.md, "Locks, elections, services"). The server implements them
// on the MVCC state machine (src/lock), so every client gets the same queue discipline.
//
// Keys: a lock's contenders live under `/locks/{name}/`, an election's under
// `/elections/{name}/`, each as `{prefix}{createRevision, 12 digits zero-padded}`; the lowest
// key owns. A key's createRevision is its fencing token (an election's `term`).

/** One contender's entry as operators see it. */
export interface LockEntry {
  readonly key: string;
  readonly owner: string;
  readonly fencingToken: number;
  readonly lease: number;
  /** The proposing leader's wall clock (epoch ms) when the entry was created. */
  readonly waitingSinceMs: number;
}

export interface AcquireRequest {
  readonly lease: number;
  /** Free text naming the contender (≤ 256 bytes), shown to operators. */
  readonly owner: string;
  /** 0 = try once (409 lock_held when taken). Bounded by the server's maximum. */
  readonly waitMs: number;
  /** Aborted when the caller goes away: the queue entry is deleted, nobody waits behind a ghost. */
  readonly signal?: AbortSignal;
}

export interface AcquireResult {
  readonly key: string;
  readonly fencingToken: number;
  /** The cell revision at which the caller became the owner (≥ its predecessor's deletion). */
  readonly revision: number;
  readonly owner: string;
  readonly lease: number;
  readonly waitedMs: number;
}

export interface LockState {
  readonly revision: number;
  readonly holder: LockEntry | null;
  /** Waiters in grant order. */
  readonly queue: readonly LockEntry[];
}

export interface FencingCheckResult {
  readonly valid: boolean;
  /** The current holder's token, or null when nobody holds the lock. */
  readonly currentToken: number | null;
  readonly holder: LockEntry | null;
  readonly revision: number;
}

/** Lock operations, each as `principal` ('' anonymous) asks. Errors: lock_held (409), lock_not_held (409), lease_not_found (404). */
export interface LockApi {
  acquire(name: string, request: AcquireRequest, requestId: string | undefined, principal: string): Promise<AcquireResult>;
  /** Deletes the holder's key; 409 lock_not_held when `key` is not the current holder of `name`. */
  release(name: string, key: string, requestId: string | undefined, principal: string): Promise<{ revision: number }>;
  /** Linearizable. */
  state(name: string, principal: string): Promise<LockState>;
  /** Linearizable: is `token` the current holder's token? */
  check(name: string, token: number, principal: string): Promise<FencingCheckResult>;
}

export interface LeaderInfo {
  readonly key: string;
  readonly value: Uint8Array;
  /** The leader key's createRevision: the fencing token of this leadership. */
  readonly term: number;
  readonly lease: number;
}

export interface CampaignResult {
  readonly key: string;
  readonly term: number;
  readonly revision: number;
}

/** A change of leader or of the leader's value, in revision order (null = no leader). */
export interface LeadershipChange {
  readonly revision: number;
  readonly leader: LeaderInfo | null;
}

export interface ElectionApi {
  campaign(
    name: string,
    request: { lease: number; value: Uint8Array; waitMs: number; signal?: AbortSignal },
    requestId: string | undefined,
    principal: string,
  ): Promise<CampaignResult>;
  /** Updates the leader's value; 409 lock_not_held when `key` no longer leads. */
  proclaim(name: string, key: string, value: Uint8Array, requestId: string | undefined, principal: string): Promise<{ revision: number; term: number }>;
  resign(name: string, key: string, requestId: string | undefined, principal: string): Promise<{ revision: number }>;
  /** Linearizable. */
  leader(name: string, principal: string): Promise<{ revision: number; leader: LeaderInfo | null }>;
  /**
   * Calls `onChange` with the current leadership, then with every change in order, until the
   * signal aborts or the watch ends (the returned promise settles then; rejects with the cause).
   */
  observe(name: string, onChange: (change: LeadershipChange) => void, signal: AbortSignal, principal: string): Promise<void>;
}

export { lockKeyPrefix, electionKeyPrefix } from '../base/queue-prefixes.js';
/** The sequence part of a contender key: the creation revision, 12 digits (`r` and 16 digits from 10^12 on: mvcc/validate.ts). */
export const sequenceDigits = 12;
