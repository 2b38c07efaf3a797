// Lease settings of a node. The limits that decide what a committed entry does (TTL bounds,
// leases per cell, keys per lease) go into MvccLimits and must be equal on every member: they
// come from BATON_LEASE_* variables (read in src/node/config.ts), which a cell's members share. The rest (expiry batch sizes,
// intervals, budgets) is the leader's local business.
import { defaultExpiryTrackerOptions, type ExpiryTrackerOptions } from './expiry-tracker.js';
import * as limits from '../base/limits.js';

export interface LeaseServiceOptions {
  readonly tracker: ExpiryTrackerOptions;
  /** How often the leader proposes checkpoints of leases that went quiet. */
  readonly checkpointIntervalMs: number;
  /** Revocation proposals awaiting their commit; expiry waits when this many are in flight. */
  readonly revokesInFlightMax: number;
  /**
   * Expiry in a format-4 store: leaseRevokeBatch entries (op 21) of at most `leasesMax` leases
   * whose keys add up to at most `keysMax` (a lease with more goes alone), at most `inFlightMax`
   * entries awaiting their commit. The key bound keeps one entry's apply short (every member
   * applies it in one pass of its event loop: heartbeats wait behind it); absent: the defaults.
   */
  readonly revokeBatch?: RevokeBatchOptions;
  /** Keepalive calls being answered at once (their own budget, apart from reads): past it 429. */
  readonly keepalivesInFlightMax: number;
  /** Lease IDs in one keepalive call. */
  readonly keepaliveIdsMax: number;
  readonly requestTimeoutMs: number;
  /**
   * Minimum time between the starts of two leadership confirmations for renewals (each is a
   * quorum round shared by every renewal that arrived before it); default 10 ms.
   */
  readonly confirmIntervalMs?: number;
  /** Deliberately broken rules, for the simulator's teeth tests only. */
  readonly bugs?: LeaseBugs;
}

export interface RevokeBatchOptions {
  readonly leasesMax: number;
  readonly keysMax: number;
  readonly inFlightMax: number;
}

/**
 * Keys per entry: a quarter of what a watcher may have undelivered (watchBufferedEventsMax), so
 * the entries in flight, applied together by a member, never end a watcher on all the keys (a
 * service registry's prefix watch) as a slow consumer: at 2,000 keys an entry, two entries
 * applied in one batch ended such a watcher at once (bench:capacity, 50,000 sessions lost).
 */
export const defaultRevokeBatchOptions: RevokeBatchOptions = {
  leasesMax: limits.leaseRevokeBatchMax,
  keysMax: limits.watchBufferedEventsMax / 4,
  inFlightMax: 2,
};

export interface LeaseBugs {
  /** A new leader starts every lease at 0 remaining instead of its checkpointed TTL. */
  readonly promoteAtZero?: boolean;
  /** Renew without confirming leadership with a quorum first (a deposed leader may promise). */
  readonly renewWithoutQuorum?: boolean;
  /**
   * Every member also expires leases on its own timer, counted from the grant it applied (renewals
   * reach only the leader, so a follower's timer never hears of them), and proposes their
   * revocation: the deadline is no longer the leader's alone.
   */
  readonly revokeOnLocalTimer?: boolean;
  /**
   * A renewal of a lease whose revocation was proposed is answered lease_not_found at once, before
   * the revocation commits: if it is lost (a leadership change), the lease and its keys live on
   * after their holder was told they are gone (the bug fault run seed 19105 found).
   */
  readonly notFoundWhileRevoking?: boolean;
}

export const defaultLeaseServiceOptions: LeaseServiceOptions = {
  // Per expiry pass (every tick): with 50-100 ms ticks, thousands of revocations per second at
  // most, so a mass expiry is spread out instead of stalling the log.
  tracker: { ...defaultExpiryTrackerOptions, expireBatchMax: 200 },
  checkpointIntervalMs: 500,
  revokesInFlightMax: 1_000,
  revokeBatch: defaultRevokeBatchOptions,
  keepalivesInFlightMax: limits.keepalivesInFlightMax,
  keepaliveIdsMax: limits.keepaliveIdsMax,
  requestTimeoutMs: 5_000,
  confirmIntervalMs: 10,
};
