// Lease settings of a node. The limits that decide what a committed entry does (TTL bounds,
// leases per cell, keys per lease) go into MvccLimits and must be equal on every member: they
// come from BATON_LEASE_* variables, which a cell's members share. The rest (expiry batch sizes,
// intervals, budgets) is the leader's local business.
import { defaultExpiryTrackerOptions, type ExpiryTrackerOptions } from '../lease/index.js';
import { defaultMvccLimits, type MvccLimits } from '../mvcc/index.js';

export interface LeaseServiceOptions {
  readonly tracker: ExpiryTrackerOptions;
  /** How often the leader proposes checkpoints of leases that went quiet. */
  readonly checkpointIntervalMs: number;
  /** Revocation proposals awaiting their commit; expiry waits when this many are in flight. */
  readonly revokesInFlightMax: number;
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

export interface LeaseBugs {
  /** A new leader starts every lease at 0 remaining instead of its checkpointed TTL. */
  readonly promoteAtZero?: boolean;
  /** Renew without confirming leadership with a quorum first (a deposed leader may promise). */
  readonly renewWithoutQuorum?: boolean;
}

export const defaultLeaseServiceOptions: LeaseServiceOptions = {
  // Per expiry pass (every tick): with 50-100 ms ticks, thousands of revocations per second at
  // most, so a mass expiry is spread out instead of stalling the log.
  tracker: { ...defaultExpiryTrackerOptions, expireBatchMax: 200 },
  checkpointIntervalMs: 500,
  revokesInFlightMax: 1_000,
  keepalivesInFlightMax: 8_192,
  keepaliveIdsMax: 1_000,
  requestTimeoutMs: 5_000,
  confirmIntervalMs: 10,
};

function envInteger(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number): number {
  const text = env[name];
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < min) throw new Error(`${name} must be an integer >= ${min}`);
  return value;
}

/** The replicated lease limits (equal on every member of a cell). */
export function leaseLimitsFromEnv(env: NodeJS.ProcessEnv): Partial<MvccLimits> {
  const leaseTtlMsMin = envInteger(env, 'BATON_LEASE_TTL_MS_MIN', defaultMvccLimits.leaseTtlMsMin, 1_000);
  const leaseTtlMsMax = envInteger(env, 'BATON_LEASE_TTL_MS_MAX', defaultMvccLimits.leaseTtlMsMax, leaseTtlMsMin);
  return {
    leaseTtlMsMin,
    leaseTtlMsMax,
    leasesMax: envInteger(env, 'BATON_LEASES_MAX', defaultMvccLimits.leasesMax, 1),
    leaseKeysMax: envInteger(env, 'BATON_LEASE_KEYS_MAX', defaultMvccLimits.leaseKeysMax, 1),
  };
}
