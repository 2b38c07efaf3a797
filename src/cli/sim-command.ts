// `baton sim`: run seeds through the simulator and report each violation with the command that
// replays it. Wall-clock time is read here, at the edge, never inside src/sim.
import { parseArgs } from 'node:util';
import { drawSweep, mvccStateMachine, parseSeed, simulate, simulateAsync } from '../sim/index.js';
import { defaultMvccLimits } from '../mvcc/index.js';
import type { RaftBugs } from '../raft/index.js';
import type { MvccBugs, SimOptions, SimResult } from '../sim/index.js';
import { cellsBugNames, simCellsCommand } from './sim-cells-command.js';

const usage = `usage: baton sim [--seeds N] [--seed-start S] [--seed S] [--trace]
                 [--profile classic|calm|mixed|chaos|swarm] (swarm: each seed draws its own fault
                   mix: which faults are on, their rates, and wider cell/network/disk/workload
                   knobs; classic: the draw among calm, mixed and chaos that was the default
                   before the plain sweep became a swarm) [--fault-phase-ms MS] (a soak: e.g. 60000)
                 With no --profile, --workload, --driver, --snapshots or --state-machine, each
                 seed is a swarm seed that also draws its workload (kv, or kv with leases and
                 locks): the plain sweep.
                 [--catch-rate] (with a --bug: count the seeds that catch it, each checked to
                   run clean without it, instead of listing violations; prints seeds, caught,
                   fraction, first catching seed)
                 [--driver sim|server] (server: the production driver of src/driver)
                 [--snapshots inline|background|checkpoint] (server driver; background: written
                   later from a newer view, as a node's snapshot thread does; checkpoint: the
                   store is the durable state, checkpointed, snapshots made for followers)
                 [--state-machine register|mvcc] (mvcc: the real MVCC store, in memory)
                 [--workload kv|leases|locks] (leases: lease holders on the production lease
                   service; locks: lock contenders on the production lock service, with
                   leases; both imply --driver server and the MVCC store)
                 [--bug commitOldTermEntries|doubleVote|applyUncommitted|readWithoutQuorum|
                   voteWithoutPersist|appendPastGap|ignoreRegressed]
                 [--lease-bug promoteAtZero|renewWithoutQuorum|revokeOnLocalTimer|notFoundWhileRevoking] [--lock-bug grantOnWake|withdrawRetriedEntry]
                 [--store-bug dedupOff|lockWithoutLeaseCheck|tenantQuotaOff] (the MVCC store: --state-machine mvcc, leases, locks)
                 [--tenants] (leases, locks: a tenant owns the lease keys with limits the workload
                   reaches; checked after every applied entry: no hard quota grown past its limit)
                 [--watch-bug skipCutRevision] (the watch hub; watchers run with the lock workload)
                 [--older-copy] (opt-in fault: members restarted on an older copy of their data;
                   kv seeds on the sim's driver; implies --ledger-check: docs/design/older-copy.md)
                 [--ledger-check] (members ask their peers what they promised after each restart,
                   as real nodes do; off by default so that seeds replay as before it existed)
       baton sim --world cells [--seeds N] [--seed-start S] [--seed S] [--trace] [--cells N]
                 [--profile calm|mixed|chaos|swarm] [--fault-phase-ms MS]
                 [--cells-bug skip-fence|skip-floor] [--watches] [--nested] [--no-feed] [--mover real|sim] (issue 24: N data cells of three members,
                   namespaces moved between them under each cell's nemesis; prints each seed's
                   moves and violations; --watches adds watchers per namespace, checked exact
                   across moves: it finds open bugs, so it is off by default; --nested adds /a/n/
                   inside /a/, each moved without the other; --no-feed: no source feed for the
                   mover (it catches up by reads, as seeds ran before session 28); --mover sim: the
                   simulator's own move driver instead of the control plane's Mover)`;

export async function simCommand(args: readonly string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseSimArgs(args);
  } catch (error) {
    console.error(`baton sim: ${(error as Error).message}\n\n${usage}`);
    return 2;
  }
  const { values } = parsed;
  if (values.help) {
    console.log(usage);
    return 0;
  }
  const seeds =
    values.seed !== undefined
      ? [parseSeed(values.seed)]
      : Array.from(
          { length: Number(values.seeds ?? '100') },
          (_, i) => parseSeed(values['seed-start'] ?? '1') + BigInt(i),
        );
  if (values.world !== undefined) return simWorld(values, seeds);
  const profileFlag = values.profile;
  if (profileFlag !== undefined && profileFlag !== 'classic' && profileFlag !== 'calm' && profileFlag !== 'mixed' && profileFlag !== 'chaos' && profileFlag !== 'swarm') {
    console.error(usage);
    return 2;
  }
  // classic is the older default: no profile forced, the run draws calm, mixed or chaos.
  const profile = profileFlag === 'classic' ? undefined : profileFlag;
  // The plain sweep: nothing chosen, so each seed draws its profile and workload (sweep.ts).
  const plainSweep =
    profileFlag === undefined &&
    values.workload === undefined &&
    values.driver === undefined &&
    values.snapshots === undefined &&
    values['state-machine'] === undefined;
  const bugs: Record<string, boolean> = {};
  for (const bug of values.bug ?? []) bugs[bug] = true;
  const workloadFlag = values.workload ?? 'kv';
  if (workloadFlag !== 'kv' && workloadFlag !== 'leases' && workloadFlag !== 'locks') {
    console.error(usage);
    return 2;
  }
  const leaseBugs: Record<string, boolean> = {};
  for (const bug of values['lease-bug'] ?? []) {
    if (bug !== 'promoteAtZero' && bug !== 'renewWithoutQuorum' && bug !== 'revokeOnLocalTimer' && bug !== 'notFoundWhileRevoking') {
      console.error(usage);
      return 2;
    }
    leaseBugs[bug] = true;
  }
  for (const bug of values['lock-bug'] ?? []) {
    if (bug !== 'grantOnWake' && bug !== 'withdrawRetriedEntry') {
      console.error(usage);
      return 2;
    }
  }
  const lockBugs = {
    grantOnWake: (values['lock-bug'] ?? []).includes('grantOnWake'),
    withdrawRetriedEntry: (values['lock-bug'] ?? []).includes('withdrawRetriedEntry'),
  };
  for (const bug of values['watch-bug'] ?? []) {
    if (bug !== 'skipCutRevision') {
      console.error(usage);
      return 2;
    }
  }
  const watchBugs = { skipCutRevision: (values['watch-bug'] ?? []).includes('skipCutRevision') };
  const storeBugs: { -readonly [K in keyof MvccBugs]: MvccBugs[K] } = {};
  for (const bug of values['store-bug'] ?? []) {
    if (bug !== 'dedupOff' && bug !== 'lockWithoutLeaseCheck' && bug !== 'tenantQuotaOff') {
      console.error(usage);
      return 2;
    }
    storeBugs[bug] = true;
  }
  const onServerFlag = workloadFlag === 'leases' || workloadFlag === 'locks';
  const driverFlag = values.driver ?? (onServerFlag ? 'server' : 'sim');
  if ((driverFlag !== 'sim' && driverFlag !== 'server') || (onServerFlag && driverFlag !== 'server')) {
    console.error(usage);
    return 2;
  }
  const snapshots = values.snapshots ?? 'inline';
  if ((snapshots !== 'inline' && snapshots !== 'background' && snapshots !== 'checkpoint') || (snapshots !== 'inline' && driverFlag !== 'server')) {
    console.error(usage);
    return 2;
  }
  const machine = values['state-machine'] ?? 'register';
  if (machine !== 'register' && machine !== 'mvcc') {
    console.error(usage);
    return 2;
  }
  const faultPhaseText = values['fault-phase-ms'];
  const faultPhaseMs = faultPhaseText === undefined ? undefined : Number(faultPhaseText);
  if (faultPhaseMs !== undefined && !(Number.isSafeInteger(faultPhaseMs) && faultPhaseMs > 0)) {
    console.error(usage);
    return 2;
  }
  // The plain sweep's replay line names no drawn option: the seed draws them again.
  const extra = [
    ...(profileFlag === undefined ? [] : [`--profile ${profileFlag}`]),
    ...(faultPhaseMs === undefined ? [] : [`--fault-phase-ms ${faultPhaseMs}`]),
    ...(workloadFlag === 'kv' ? [] : [`--workload ${workloadFlag}`]),
    ...(driverFlag === 'sim' || onServerFlag ? [] : [`--driver ${driverFlag}`]),
    ...(snapshots === 'inline' ? [] : [`--snapshots ${snapshots}`]),
    ...(machine === 'register' ? [] : [`--state-machine ${machine}`]),
    ...(values.bug ?? []).map((bug) => `--bug ${bug}`),
    ...(values['lease-bug'] ?? []).map((bug) => `--lease-bug ${bug}`),
    ...(values['lock-bug'] ?? []).map((bug) => `--lock-bug ${bug}`),
    ...(values['store-bug'] ?? []).map((bug) => `--store-bug ${bug}`),
    ...(values['watch-bug'] ?? []).map((bug) => `--watch-bug ${bug}`),
    ...(values['older-copy'] ? ['--older-copy'] : []),
    ...(values['ledger-check'] ? ['--ledger-check'] : []),
    ...(values.tenants ? ['--tenants'] : []),
  ].join(' ');
  const catchRate = values['catch-rate'];
  const started = performance.now();
  let failed = 0;
  let steps = 0;
  /** Seeds caught by a checker (not only by a core assertion), the first one, and by invariant. */
  let caughtByChecker = 0;
  let firstCaught: bigint | null = null;
  let firstCaughtIndex = 0;
  const byInvariant = new Map<string, number>();
  const caughtSeeds: bigint[] = [];
  const failingWithout: bigint[] = [];
  let caught = 0;
  let lockSeeds = 0;
  for (const seed of seeds) {
    const drawn = plainSweep ? drawSweep(seed) : null;
    const workload = drawn?.workload ?? workloadFlag;
    const onServer = workload === 'leases' || workload === 'locks';
    const driver = drawn === null ? driverFlag : onServer ? 'server' : 'sim';
    if (workload === 'locks') lockSeeds++;
    const options: SimOptions = {
      seed,
      driver,
      ...(snapshots === 'inline' ? {} : { snapshots }),
      ...(onServer ? { workload } : {}),
      ...(values['lock-bug'] === undefined ? {} : { lockBugs }),
      ...(values['lease-bug'] === undefined ? {} : { leaseBugs }),
      ...(values['watch-bug'] === undefined ? {} : { watchBugs }),
      ...(values['older-copy'] ? { olderCopy: true } : {}),
      ...(values['ledger-check'] ? { ledgerCheck: true } : {}),
      ...(values.tenants && onServer ? { tenants: true } : {}),
      ...(machine === 'mvcc' && workload === 'kv' ? { stateMachine: mvccStateMachine(defaultMvccLimits, 1, storeBugs) } : {}),
      ...(values['store-bug'] === undefined ? {} : { storeBugs }),
      ...(drawn !== null ? { profile: drawn.profile } : profile === undefined ? {} : { profile }),
      ...(faultPhaseMs === undefined ? {} : { scenario: { faultPhaseMs } }),
      ...(values.bug === undefined ? {} : { bugs: bugs as RaftBugs }),
      ...(values.trace ? { trace: (line: string) => console.log(line) } : {}),
    };
    const result: SimResult =
      driver === 'server' ? await simulateAsync(options) : simulate(options);
    steps += result.steps;
    if (result.violations.length === 0) continue;
    failed++;
    if (catchRate) {
      // Caught only if the same seed runs clean without the planted bugs: a seed that fails
      // either way found something else (and is listed, for it is a finding of its own).
      const { bugs: _bugs, leaseBugs: _leaseBugs, lockBugs: _lockBugs, storeBugs: _storeBugs, watchBugs: _watchBugs, trace: _trace, ...rest } = options;
      // A fresh state machine: the MVCC adapter remembers where each command applied in its run.
      const clean: SimOptions = machine === 'mvcc' && workload === 'kv' ? { ...rest, stateMachine: mvccStateMachine() } : rest;
      const control = driver === 'server' ? await simulateAsync(clean) : simulate(clean);
      if (control.violations.length > 0) {
        failingWithout.push(seed);
        continue;
      }
      caught++;
      const invariant = result.violations[0]?.invariant ?? '';
      byInvariant.set(invariant, (byInvariant.get(invariant) ?? 0) + 1);
      caughtSeeds.push(seed);
      if (result.violations.some((v) => !coreAssertions.has(v.invariant))) caughtByChecker++;
      if (firstCaught === null) {
        firstCaught = seed;
        firstCaughtIndex = seeds.indexOf(seed) + 1;
      }
      continue;
    }
    for (const violation of result.violations) {
      console.log(
        `seed ${seed}: ${violation.invariant} at step ${violation.step} (${violation.timeMs} ms): ${firstLine(violation.detail)}`,
      );
    }
    console.log(
      `  replay: npm run sim -- --seed ${seed} --trace${extra === '' ? '' : ` ${extra}`}`,
    );
  }
  const seconds = (performance.now() - started) / 1000;
  if (catchRate) {
    const fraction = seeds.length === 0 ? 0 : caught / seeds.length;
    console.log(
      `catch rate${extra === '' ? '' : ` (${extra})`}: ${seeds.length} seeds, ${caught} caught ` +
        `(${(fraction * 100).toFixed(2)}%), ${caughtByChecker} by a checker rather than a core assertion`,
    );
    if (firstCaught === null) console.log('first catching seed: none');
    else {
      console.log(`first catching seed: ${firstCaught} (seed ${firstCaughtIndex} of the run)`);
      const shown = caughtSeeds.slice(0, 20).join(' ');
      console.log(`  caught by: ${shown}${caughtSeeds.length > 20 ? ' ...' : ''}`);
      console.log(`  replay: npm run sim -- --seed ${firstCaught} --trace${extra === '' ? '' : ` ${extra}`}`);
    }
    if (failingWithout.length > 0) {
      console.log(
        `  not counted: ${failingWithout.length} seeds fail without the bug too (findings): ${failingWithout.slice(0, 20).join(' ')}`,
      );
    }
    for (const [invariant, count] of [...byInvariant].sort((a, b) => b[1] - a[1]))
      console.log(`  ${count} seeds first broke: ${invariant}`);
    if (plainSweep) console.log(`  plain sweep: ${lockSeeds} of the seeds drew the lock workload`);
    console.log(`${(seeds.length / seconds).toFixed(1)} seeds/s, ${seconds.toFixed(1)} s`);
    return 0;
  }
  console.log(`${seeds.length} seeds, ${failed} violations`);
  if (plainSweep) console.log(`plain sweep: ${lockSeeds} of the seeds drew the lock workload`);
  console.log(
    `${(seeds.length / seconds).toFixed(1)} seeds/s, ${Math.round(steps / seconds)} steps/s, ${seconds.toFixed(1)} s`,
  );
  return failed === 0 ? 0 : 1;
}

/** `--world cells` (the only other world): its own flags, checked here. */
async function simWorld(values: ReturnType<typeof parseSimArgs>['values'], seeds: readonly bigint[]): Promise<number> {
  const cells = Number(values.cells ?? '2');
  const profile = values.profile;
  const faultPhaseMs = values['fault-phase-ms'] === undefined ? undefined : Number(values['fault-phase-ms']);
  const bugs = values['cells-bug'] ?? [];
  const valid = values.world === 'cells' && Number.isSafeInteger(cells) && cells >= 2 && cells <= 8
    && (profile === undefined || profile === 'calm' || profile === 'mixed' || profile === 'chaos' || profile === 'swarm')
    && (faultPhaseMs === undefined || (Number.isSafeInteger(faultPhaseMs) && faultPhaseMs > 0))
    && bugs.every((bug) => (cellsBugNames as readonly string[]).includes(bug))
    && (values.mover === undefined || values.mover === 'real' || values.mover === 'sim');
  if (!valid) {
    console.error(usage);
    return 2;
  }
  return simCellsCommand({ seeds, cells, bugs, profile, faultPhaseMs, trace: values.trace === true, watches: values.watches === true,
    mover: values.mover === 'sim' ? 'sim' : 'real', nested: values.nested === true, feed: values['no-feed'] !== true });
}

/** Violations the core's own assertions raise, not the sim's checkers. */
const coreAssertions = new Set(['assertion failed', 'exception']);

function firstLine(text: string): string {
  return text.split('\n')[0] ?? text;
}

function parseSimArgs(args: readonly string[]) {
  return parseArgs({
    args: [...args],
    options: {
      seeds: { type: 'string' },
      'seed-start': { type: 'string' },
      seed: { type: 'string' },
      trace: { type: 'boolean', default: false },
      'catch-rate': { type: 'boolean', default: false },
      profile: { type: 'string' },
      'fault-phase-ms': { type: 'string' },
      'older-copy': { type: 'boolean', default: false },
      'ledger-check': { type: 'boolean', default: false },
      tenants: { type: 'boolean', default: false },
      driver: { type: 'string' },
      snapshots: { type: 'string' },
      'state-machine': { type: 'string' },
      workload: { type: 'string' },
      bug: { type: 'string', multiple: true },
      'lease-bug': { type: 'string', multiple: true },
      'lock-bug': { type: 'string', multiple: true },
      'store-bug': { type: 'string', multiple: true },
      'watch-bug': { type: 'string', multiple: true },
      world: { type: 'string' },
      cells: { type: 'string' },
      'cells-bug': { type: 'string', multiple: true },
      watches: { type: 'boolean', default: false },
      nested: { type: 'boolean', default: false },
      'no-feed': { type: 'boolean', default: false },
      mover: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  });
}
