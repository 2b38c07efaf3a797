// The lease service's contract: what the HTTP routes, stream frames and gRPC facade call, and
// what a follower uses to pass renewals to the leader (renewals never go through the log, and
// only the leader holds deadlines). Types only, so api/ and lease/ meet here without a cycle.
import type { MemberId } from '../raft/index.js';
import type { Origin } from '../mvcc/index.js';

export type KeepaliveItem = { readonly id: number; readonly ttl: number } | { readonly id: number; readonly error: 'lease_not_found' };

export interface KeepaliveAnswer {
  /** The cell's revision when the leader answered. */
  readonly revision: number;
  readonly leases: readonly KeepaliveItem[];
}

export interface LeaseInfo {
  readonly id: number;
  /** Remaining seconds (whole seconds, rounded down); ttlMs is exact. */
  readonly ttl: number;
  readonly ttlMs: number;
  readonly grantedTtl: number;
  readonly keys: readonly string[];
  readonly revision: number;
  /** The cell that granted it, when a namespace move brought it to this cell (absent: granted here). */
  readonly origin?: string;
}

export interface LeaseListItem {
  readonly id: number;
  /** Remaining whole seconds (rounded down), as in the time-to-live answer. */
  readonly ttl: number;
  readonly grantedTtl: number;
}

export interface LeaseList {
  readonly revision: number;
  /** Ascending by id; at most `limit` of them. */
  readonly leases: readonly LeaseListItem[];
  /** More leases follow: ask again with after = the last id here. */
  readonly more: boolean;
}

/** Leases per page of GET /v1/leases when no limit is given, and the most a page may hold. */
export { leaseListLimitDefault, leaseListLimitMax } from '../base/limits.js';

/** One lease of a batch grant: granted, or why not (the others of the batch are unaffected). */
export type BatchGrantItem =
  | { readonly id: number; readonly ttl: number }
  | { readonly error: string; readonly message: string };

export interface BatchGrantAnswer {
  /** The highest revision among the grants' answers. */
  readonly revision: number;
  readonly leases: readonly BatchGrantItem[];
}

/** What the lease routes and stream frames need from the node (src/lease/lease-service.ts). */
export interface LeaseApi {
  grant(request: { ttlMs: number; id?: number }, requestId: string | undefined, principal: string): Promise<{ id: number; ttl: number; revision: number }>;
  /**
   * `count` grants of `ttlMs`, each its own command (Request-ID `{requestId}.{i}` when one is
   * given, so a retried batch grants nothing twice), proposed together.
   */
  grantMany(request: { ttlMs: number; count: number }, requestId: string | undefined, principal: string): Promise<BatchGrantAnswer>;
  revoke(id: number, requestId: string | undefined, principal: string): Promise<{ id: number; deleted: number; revision: number }>;
  /**
   * `forwarded`: the call came from another member, so it must not be forwarded again.
   * `principal`: the caller ('' anonymous); `cellWork` (undefined) only for a member's forward,
   * which that member decided.
   */
  keepalive(ids: readonly number[], forwarded: boolean, principal: Origin): Promise<KeepaliveAnswer>;
  /** Without `withKeys` the answer's key list is empty (and the keys need no read permission). */
  timeToLive(id: number, forwarded: boolean, principal: Origin, withKeys: boolean): Promise<LeaseInfo>;
  /** Leases with ids above `after`, ascending, at most `limit` (answered by the leader). */
  list(request: { after: number; limit: number }, forwarded: boolean, principal: Origin): Promise<LeaseList>;
  readonly keepaliveIdsMax: number;
}

/** Marks a member-to-member forward (a follower passing a keepalive to the leader). */
export const forwardedHeader = 'baton-forwarded';

/** How a follower reaches the leader's lease service (forward/: over peer frames or HTTP). */
export interface LeaseForwarder {
  keepalive(leader: MemberId, ids: readonly number[], timeoutMs: number): Promise<KeepaliveAnswer>;
  timeToLive(leader: MemberId, id: number, timeoutMs: number): Promise<LeaseInfo>;
  list(leader: MemberId, request: { after: number; limit: number }, timeoutMs: number): Promise<LeaseList>;
}
