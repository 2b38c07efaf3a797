// The plain sweep (issue 23): `baton sim --seeds N` with no profile or workload chosen. Each seed
// is a swarm seed (its own fault mix, see scenario.ts) that also draws its workload, so a bug in
// the lock or lease paths is found by the same sweep as a Raft bug, without being told where to
// look. The draw comes from the seed alone (a fork no other subsystem uses), so a failing seed
// replays with `--seed S` and nothing else; the replay line also names the drawn options.
import { SeededRandom, chance } from '../base/random.js';
import type { SimOptions } from './types.js';

export interface SweepDraw {
  readonly profile: 'swarm';
  /**
   * kv: the register client on the sim's driver (fast). locks: the kv client plus lease holders
   * and lock contenders on the production driver and MVCC store (about 20 times slower a seed).
   */
  readonly workload: 'kv' | 'locks';
}

/**
 * The share of sweep seeds that run the lock workload. Chosen so the lock and store mutations are
 * caught in at least 1% of all sweep seeds while the sweep keeps most of the kv seeds' speed.
 */
export const sweepLockShare = 0.35;

/** The fork of the seed's random stream that draws the sweep's choices (1-9 are the run's own). */
const sweepFork = 20;

export function drawSweep(seed: bigint): SweepDraw {
  const random = new SeededRandom(seed).fork(sweepFork);
  return { profile: 'swarm', workload: chance(random, sweepLockShare) ? 'locks' : 'kv' };
}

/** A plain sweep seed's run options (before any planted bug): what `baton sim --seed S` runs. */
export function plainSweepOptions(seed: bigint): SimOptions {
  const drawn = drawSweep(seed);
  return drawn.workload === 'locks'
    ? { seed, profile: drawn.profile, workload: 'locks', driver: 'server' }
    : { seed, profile: drawn.profile, driver: 'sim' };
}
