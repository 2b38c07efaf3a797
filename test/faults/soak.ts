// npm run soak -- --minutes N [--seed S] [--members 3|5]
// A nightly-style soak (issue 23): until the time is up, simulator sweeps with fresh seeds
// (default, swarm, lock, lease and server-driver profiles in turn, each a child process of
// `baton sim`) alternate with 60 s real-process fault runs (runner.ts, with fresh seeds). Prints
// the totals: seeds and violations per sweep, histories, operations, faults by kind and each
// run's verdict; every failure with the command that replays it. Exits 1 on a violation, 2 when
// a checker could not decide (or a sweep did not finish in time), 0 otherwise. Bounded: every
// step has a deadline and nothing starts that cannot finish before the end (+ one step's slack).
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runFaults } from './runner.js';

function flag(name: string, fallback: string): string {
  const args = process.argv.slice(2);
  const at = args.indexOf(`--${name}`);
  return at >= 0 && args[at + 1] !== undefined ? (args[at + 1] as string) : fallback;
}

const minutes = Number(flag('minutes', ''));
if (!Number.isFinite(minutes) || minutes <= 0 || minutes > 24 * 60) {
  console.error('usage: npm run soak -- --minutes N [--seed S]   (N from 1 to 1440)');
  process.exit(2);
}
const baseSeed = Number(flag('seed', String(Date.now() % 1_000_000_000)));
const deadline = performance.now() + minutes * 60_000;
const cli = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src', 'cli', 'main.js');

interface Sweep {
  readonly name: string;
  readonly args: readonly string[];
  readonly seeds: number;
  /** Seeds per second on this machine kind (measured): how long one batch takes. */
  readonly seedsPerS: number;
}

const sweeps: readonly Sweep[] = [
  // The plain sweep: swarm seeds that draw their workload too (a third run locks: slower).
  { name: 'plain', args: [], seeds: 150, seedsPerS: 3 },
  { name: 'classic', args: ['--profile', 'classic'], seeds: 1000, seedsPerS: 100 },
  { name: 'swarm', args: ['--profile', 'swarm'], seeds: 600, seedsPerS: 50 },
  { name: 'locks', args: ['--workload', 'locks'], seeds: 60, seedsPerS: 5 },
  { name: 'leases', args: ['--workload', 'leases'], seeds: 200, seedsPerS: 10 },
  { name: 'server-checkpoint', args: ['--driver', 'server', '--snapshots', 'checkpoint'], seeds: 300, seedsPerS: 40 },
];

const totals = {
  seeds: new Map<string, number>(),
  simViolations: 0,
  histories: 0,
  operations: 0,
  faults: new Map<string, number>(),
  verdicts: new Map<string, number>(),
  failures: [] as string[],
  undecided: 0,
};

function remainingMs(): number {
  return deadline - performance.now();
}

function runSweep(sweep: Sweep, seedStart: number): Promise<void> {
  const seeds = Math.max(1, Math.min(sweep.seeds, Math.floor((remainingMs() / 1000) * sweep.seedsPerS)));
  const args = [cli, 'sim', '--seeds', String(seeds), '--seed-start', String(seedStart), ...sweep.args];
  const replay = `npm run sim -- --seeds ${seeds} --seed-start ${seedStart} ${sweep.args.join(' ')}`.trim();
  // Three times the expected time: a machine busier than the measurement still finishes.
  const timeout = Math.max(60_000, (3 * 1000 * seeds) / sweep.seedsPerS);
  return new Promise((resolve) => {
    execFile(process.execPath, args, { timeout, maxBuffer: 64 * 1024 * 1024 }, (error, stdout) => {
      const summary = /(\d+) seeds, (\d+) violations/.exec(stdout);
      if (summary === null) {
        totals.undecided++;
        totals.failures.push(`sim ${sweep.name}: did not finish (${error?.message ?? 'no summary'}); replay: ${replay}`);
      } else {
        totals.seeds.set(sweep.name, (totals.seeds.get(sweep.name) ?? 0) + Number(summary[1]));
        const violations = Number(summary[2]);
        totals.simViolations += violations;
        if (violations > 0) {
          const lines = stdout.split('\n').filter((line) => /VIOLATION|seed \d+|replay|npm run sim/.test(line)).slice(0, 20);
          totals.failures.push(`sim ${sweep.name}: ${violations} violations; replay: ${replay}\n    ${lines.join('\n    ')}`);
        }
      }
      resolve();
    });
  });
}

async function runFaultHistory(seed: number, members: 3 | 5): Promise<void> {
  const summary = await runFaults({ seed: BigInt(seed), timeS: 60, members });
  totals.histories++;
  totals.operations += summary.operations;
  for (const [kind, count] of summary.faults) totals.faults.set(kind, (totals.faults.get(kind) ?? 0) + count);
  totals.verdicts.set(summary.verdict, (totals.verdicts.get(summary.verdict) ?? 0) + 1);
  if (summary.verdict !== 'ok') {
    if (summary.verdict !== 'violation') totals.undecided++;
    totals.failures.push(`faults seed ${seed} (${members} members): ${summary.verdict}; replay: npm run faults -- --time 60 --seed ${seed} --members ${members}`);
  }
}

console.log(`soak: ${minutes} min from seed ${baseSeed} (replay a step with the command printed for it)`);
const faultRunMs = 90_000; // 60 s of load, the cell's start and the checkers
for (let round = 0; remainingMs() > 10_000; round++) {
  const sweep = sweeps[round % sweeps.length] as Sweep;
  await runSweep(sweep, baseSeed + round * 10_000);
  if (remainingMs() > faultRunMs) await runFaultHistory(baseSeed + round, round % 4 === 3 ? 5 : 3);
  const seeds = [...totals.seeds.values()].reduce((a, b) => a + b, 0);
  console.log(`soak: round ${round + 1}: ${seeds} seeds, ${totals.histories} fault histories, ${totals.failures.length} failures, ${Math.max(0, Math.round(remainingMs() / 1000))} s left`);
}

const seeds = [...totals.seeds.values()].reduce((a, b) => a + b, 0);
console.log('\nsoak totals');
console.log(`  simulator: ${seeds} seeds (${[...totals.seeds].map(([name, n]) => `${name} ${n}`).join(', ')}), ${totals.simViolations} violations`);
console.log(`  fault runs: ${totals.histories} histories of 60 s, ${totals.operations} operations, verdicts ${[...totals.verdicts].map(([v, n]) => `${v} ${n}`).join(', ') || 'none'}`);
console.log(`  faults by kind: ${[...totals.faults].sort().map(([kind, n]) => `${kind} ${n}`).join(', ') || 'none'}`);
for (const failure of totals.failures) console.log(`  FAILURE ${failure}`);
const violated = totals.simViolations > 0 || (totals.verdicts.get('violation') ?? 0) > 0;
process.exitCode = violated ? 1 : totals.undecided > 0 ? 2 : 0;
console.log(`result: ${violated ? 'VIOLATION' : totals.undecided > 0 ? 'UNDECIDED' : 'ok'}`);
