// Throughput of the pure Raft core inside the simulator: committed entries per second of wall
// time for a calm 3-member cell (no faults), with proposals in batches of 1 and of 64, plus the
// simulator's own speed in seeds per second over the default mixed-fault sweep.
// Run with `npm run bench:sim`; medians of 3 runs.
import { simulate } from '../src/sim/index.js';
import type { Scenario } from '../src/sim/index.js';

function calmCell(batch: number): Partial<Scenario> {
  return {
    voterCount: 3,
    learnerCount: 0,
    networkDelayMsMin: 1,
    networkDelayMsMax: 2,
    diskLatencyMsMin: 0,
    diskLatencyMsMax: 1,
    proposeIntervalMs: 1,
    proposeBatchMin: batch,
    proposeBatchMax: batch,
    forwardRate: 0,
    clientOutstandingMax: 4096,
    readIntervalMs: 1_000_000,
    compactEveryEntries: 10_000,
    faultPhaseMs: batch === 1 ? 60_000 : 6_000,
    inflightMessagesMax: 256,
    appendBytesMax: 1024 * 1024,
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1] as number;
}

function committedPerSecond(batch: number): {
  perSecond: number;
  entries: number;
  seconds: number;
} {
  const started = performance.now();
  const result = simulate({
    seed: 1n,
    profile: 'calm',
    scenario: calmCell(batch),
    skipLiveness: true,
  });
  const seconds = (performance.now() - started) / 1000;
  if (result.violations.length > 0)
    throw new Error(`violations: ${JSON.stringify(result.violations)}`);
  const entries = result.stats.committedOnLeader;
  return { perSecond: entries / seconds, entries, seconds };
}

function seedsPerSecond(count: number): number {
  const started = performance.now();
  for (let seed = 1n; seed <= BigInt(count); seed++) {
    const result = simulate({ seed });
    if (result.violations.length > 0)
      throw new Error(`seed ${seed} violated ${result.violations[0]?.invariant}`);
  }
  return count / ((performance.now() - started) / 1000);
}

for (const batch of [1, 64]) {
  const runs = [0, 1, 2].map(() => committedPerSecond(batch));
  const best = median(runs.map((run) => run.perSecond));
  const sample = runs[0] as { entries: number; seconds: number };
  console.log(
    `3 members, no faults, batch ${String(batch).padStart(2)}: ${Math.round(best).toLocaleString('en-US')} committed entries/s ` +
      `(${sample.entries.toLocaleString('en-US')} entries in ${sample.seconds.toFixed(2)} s)`,
  );
}
const seedRuns = [0, 1, 2].map(() => seedsPerSecond(200));
console.log(`mixed-fault sweep: ${median(seedRuns).toFixed(1)} seeds/s (200 seeds, median of 3)`);
