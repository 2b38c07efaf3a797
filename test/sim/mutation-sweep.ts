// Issue 23's planted mutations and how often the plain sweep (sweep.ts: no profile, workload or
// scenario chosen for the bug) catches each. Shared by mutations.test.ts (a few seeds, in npm
// test) and sim-mutations.ts (`npm run sim:mutations`, every switch over many seeds).
import type { SimOptions, SimResult } from '../../src/sim/index.js';
import { plainSweepOptions, simulate, simulateAsync } from '../../src/sim/index.js';

export type PlantedBug = Pick<SimOptions, 'bugs' | 'storeBugs' | 'leaseBugs' | 'lockBugs' | 'watchBugs'>;

/** Every switch, as SimOptions fields (src/raft bugs, the MVCC store's, the lease and lock services'). */
export const mutations: ReadonlyMap<string, PlantedBug> = new Map<string, PlantedBug>([
  ['commitOldTermEntries', { bugs: { commitOldTermEntries: true } }],
  ['doubleVote', { bugs: { doubleVote: true } }],
  ['applyUncommitted', { bugs: { applyUncommitted: true } }],
  ['readWithoutQuorum', { bugs: { readWithoutQuorum: true } }],
  ['voteWithoutPersist', { bugs: { voteWithoutPersist: true } }],
  ['appendPastGap', { bugs: { appendPastGap: true } }],
  ['dedupOff', { storeBugs: { dedupOff: true } }],
  ['lockWithoutLeaseCheck', { storeBugs: { lockWithoutLeaseCheck: true } }],
  ['promoteAtZero', { leaseBugs: { promoteAtZero: true } }],
  ['renewWithoutQuorum', { leaseBugs: { renewWithoutQuorum: true } }],
  ['revokeOnLocalTimer', { leaseBugs: { revokeOnLocalTimer: true } }],
  ['notFoundWhileRevoking', { leaseBugs: { notFoundWhileRevoking: true } }],
  ['grantOnWake', { lockBugs: { grantOnWake: true } }],
  ['withdrawRetriedEntry', { lockBugs: { withdrawRetriedEntry: true } }],
  ['skipCutRevision', { watchBugs: { skipCutRevision: true } }],
]);

/** Violations the core's own assertions raise, not the sim's checkers. */
const coreAssertions = new Set(['assertion failed', 'exception']);

export async function runPlain(options: SimOptions): Promise<SimResult> {
  return options.driver === 'server' ? simulateAsync(options) : simulate(options);
}

export interface SeedOutcome {
  readonly seed: bigint;
  /** 'caught' only if the seed also runs clean without the bug; 'finding' if it fails without it. */
  readonly outcome: 'caught' | 'missed' | 'finding';
  /** The first violation's invariant when caught or a finding. */
  readonly invariant?: string;
  /** Caught by a sim checker, not only by a core assertion. */
  readonly byChecker?: boolean;
}

/**
 * Whether the bug can act in this run at all: the store, lease and lock switches live in the MVCC
 * store and the lease and lock services, which kv seeds (the register machine) never build.
 */
function reachable(plain: SimOptions, bug: PlantedBug): boolean {
  return bug.bugs !== undefined || plain.workload === 'locks';
}

/** A seed's clean run is the same every time: its first violation (null: clean), run once. */
const cleanRuns = new Map<bigint, string | null>();

async function cleanRun(seed: bigint, plain: SimOptions): Promise<string | null> {
  const known = cleanRuns.get(seed);
  if (known !== undefined) return known;
  const first = (await runPlain(plain)).violations[0]?.invariant ?? null;
  cleanRuns.set(seed, first);
  return first;
}

/** One plain sweep seed with the bug planted, and (only if it fails) without it as the control. */
export async function tryMutation(seed: bigint, bug: PlantedBug): Promise<SeedOutcome> {
  const plain = plainSweepOptions(seed);
  // Run as it would be, such a seed is identical to the clean run: counted, not run again.
  if (!reachable(plain, bug)) return { seed, outcome: 'missed' };
  const broken = await runPlain({ ...plain, ...bug });
  if (broken.violations.length === 0) return { seed, outcome: 'missed' };
  const control = await cleanRun(seed, plain);
  const invariant = control ?? broken.violations[0]?.invariant ?? '';
  if (control !== null) return { seed, outcome: 'finding', invariant };
  return { seed, outcome: 'caught', invariant, byChecker: broken.violations.some((v) => !coreAssertions.has(v.invariant)) };
}
