// Shared by the sharded seed tests: which seeds a shard runs, and a readable failure message
// that names every failing seed with its replay command.
import type { SimOptions, SimResult } from '../../src/sim/index.js';
import { parseSeed, simulate } from '../../src/sim/index.js';

export const seedShardCount = 4;
const defaultSeedCount = 2000;

/**
 * Seeds for shard `shard` of `seedShardCount`. BATON_SEED runs one seed (in shard 0 only);
 * BATON_SEEDS=N (from BATON_SEED_START, default 1) splits N seeds across the shards.
 */
export function shardSeeds(
  shard: number,
  env: Readonly<Record<string, string | undefined>>,
): bigint[] {
  const one = env['BATON_SEED'];
  if (one !== undefined && one !== '') return shard === 0 ? [parseSeed(one)] : [];
  const count = Number(env['BATON_SEEDS'] ?? defaultSeedCount);
  const start = parseSeed(env['BATON_SEED_START'] ?? '1');
  const seeds: bigint[] = [];
  for (let i = shard; i < count; i += seedShardCount) seeds.push(start + BigInt(i));
  return seeds;
}

export interface SeedsOutcome {
  readonly runs: number;
  readonly failures: readonly string[];
  readonly results: readonly SimResult[];
}

export function runSeeds(
  seeds: readonly bigint[],
  options: Omit<SimOptions, 'seed'> = {},
): SeedsOutcome {
  const failures: string[] = [];
  const results: SimResult[] = [];
  for (const seed of seeds) {
    const result = simulate({ ...options, seed });
    results.push(result);
    for (const violation of result.violations) {
      failures.push(
        `seed ${seed}: ${violation.invariant} at step ${violation.step}: ${violation.detail.split('\n')[0]}\n` +
          `  reproduce with: npm run sim -- --seed ${seed} --trace`,
      );
    }
  }
  return { runs: seeds.length, failures, results };
}
