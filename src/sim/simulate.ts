// One whole run from a seed: draw the scenario, start the members, run the client and the fault
// schedule, then stop the faults and require the cell to recover (the liveness phase). The
// result lists violations; an empty list means every checker held after every step.
import { WatchWorkload } from './watch-workload.js';
import { assert } from '../base/assert.js';
import { SeededRandom } from '../base/random.js';
import { pick, randomInt } from '../base/random.js';
import type { MemberId, RaftApi } from '../raft/index.js';
import { catchUpAfterFaults } from './catch-up.js';
import { createCore } from './core-factory.js';
import { Nemesis } from './nemesis.js';
import { registerStateMachine } from './register.js';
import { LeaseWorkload, simLeaseLimits } from './lease-workload.js';
import { TenantQuotaCheck } from './tenant-quota-check.js';
import { LockWorkload, drawProgressNotes } from './lock-workload.js';
import { mvccStateMachine } from './mvcc-machine.js';
import { drawScenario } from './scenario.js';
import type { Scenario, ScriptedFault, SimOptions, SimResult, SimStats } from './types.js';
import { Workload } from './workload.js';
import type { CoreFactory } from './types.js';
import { World } from './world.js';

export const livenessBudgetMsDefault = 8_000;
const stepsMaxDefault = 3_000_000;
const probeEveryMs = 25;
/** Half the production driver's request timeout in the sim (server-driver.ts: 2 s). */
const kvQueueDelayMsMax = 1_000;

/** One run with the sim's own driver: synchronous from start to end. */
export function simulate(options: SimOptions, coreFactory: CoreFactory = createCore): SimResult {
  assert(options.driver !== 'server', 'runs with the production driver go through simulateAsync');
  const run = prepareRun(options, coreFactory);
  while (run.step()) {
    // Every step runs the checkers inside it.
  }
  return run.result();
}

/**
 * One run that may use the production driver, whose client promises settle as microtasks: after
 * each step the loop awaits once, which runs every continuation that step queued (in the order it
 * queued them, so the run stays deterministic) before the next step begins.
 */
export async function simulateAsync(
  options: SimOptions,
  coreFactory: CoreFactory = createCore,
): Promise<SimResult> {
  const run = prepareRun(options, coreFactory);
  await null;
  while (run.step()) await null;
  return run.result();
}

interface PreparedRun {
  /** Run one step; false once the run is over (done, violated, or out of events). */
  step(): boolean;
  result(): SimResult;
}

function prepareRun(options: SimOptions, coreFactory: CoreFactory): PreparedRun {
  const root = new SeededRandom(options.seed);
  // One fork per subsystem, always in this order, so changing one model leaves the others' draws alone.
  const scenarioRandom = root.fork(1);
  const randoms = {
    network: root.fork(2),
    disk: root.fork(3),
    cores: root.fork(6),
    ticks: root.fork(7),
  };
  const nemesisRandom = root.fork(4);
  const workloadRandom = root.fork(5);
  const drawn = drawScenario(scenarioRandom, options.profile);
  // The lock clients' progress-notes region: drawn from a stream of its own (no other draw moves),
  // before the scenario is final because its drops need a longer fault phase.
  const progressNotes = options.workload === 'locks' ? drawProgressNotes(options.seed, drawn.profile) : null;
  const scenario: Scenario = {
    ...drawn,
    ...(progressNotes === null ? {} : { faultPhaseMs: Math.max(drawn.faultPhaseMs, progressNotes.faultPhaseMsMin) }),
    deferCommitNotices: options.seed % 2n === 1n,
    // Lease runs apply real MVCC commands, whose snapshots and hashes cost a pass over the
    // store: fewer kv writes and compactions keep a seed fast while leases get the faults.
    ...(options.workload === 'leases' || options.workload === 'locks'
      ? {
          proposeIntervalMs: drawn.proposeIntervalMs * 3,
          proposeBatchMax: Math.min(2, drawn.proposeBatchMax),
          compactEveryEntries: Math.max(100, drawn.compactEveryEntries),
        }
      : {}),
    ...options.scenario,
  };
  const stats = emptyStats();
  // Locks need leases: a lock run is a lease run plus lock contenders.
  const withLocks = options.workload === 'locks';
  const withLeases = options.workload === 'leases' || withLocks;
  assert(!withLeases || options.driver === 'server', 'the lease and lock workloads run on the server driver');
  assert(options.tenants !== true || (withLeases && options.stateMachine === undefined), 'tenants ride on the lease workload\'s own store');
  const tenantCheck = options.tenants === true ? new TenantQuotaCheck() : null;
  const stateMachine =
    options.stateMachine ?? (withLeases ? mvccStateMachine(simLeaseLimits, 32, options.storeBugs, tenantCheck) : registerStateMachine);
  const world = new World(scenario, randoms, options, coreFactory, stateMachine, stats);
  if (tenantCheck !== null) {
    tenantCheck.report = (invariant, detail) => world.report(invariant, detail);
    stats.tenants = tenantCheck.counts;
  }
  // Forked after every other subsystem's draw, so kv runs are unchanged by its existence.
  const leaseWorkload = withLeases ? new LeaseWorkload(world, root.fork(8), options.leaseBugs) : null;
  // The kv client keeps the cell's queueing delay within half the tightest timeout of the run's
  // clients (the production driver's 2 s for writes; the lease service's for lease and lock
  // calls, which wait in the same log), so a saturated cell still answers them in time.
  const queueDelayMsMax =
    leaseWorkload === null ? kvQueueDelayMsMax : leaseWorkload.options.requestTimeoutMs / 2;
  const client = new Workload(world, workloadRandom, options.driverBugs?.localReads === true, queueDelayMsMax);
  world.hooks = client;
  world.leases = leaseWorkload;
  const lockWorkload = withLocks && leaseWorkload !== null ? new LockWorkload(world, root.fork(9), leaseWorkload, options.lockBugs) : null;
  world.locks = lockWorkload;
  // Watchers ride on lock seeds (the plain sweep's MVCC runs), from their own fork.
  const watchWorkload = lockWorkload !== null ? new WatchWorkload(world, root.fork(10), options.watchBugs ?? {}) : null;
  world.watches = watchWorkload;
  world.trace('-', `seed ${options.seed} scenario ${JSON.stringify(scenario)}`);

  const voters = range(1, scenario.voterCount);
  const learners = range(scenario.voterCount + 1, scenario.learnerCount);
  const conf = { voters, votersOutgoing: [], learners };
  for (const id of [...voters, ...learners]) world.addMember(id, conf);
  const nemesis = new Nemesis(world, nemesisRandom, voters.length + learners.length + 1);
  world.onLeaderElected = (node) => nemesis.onLeaderElected(node);

  // The kv writer goes quiet in lock seeds once the kv liveness probe passed: "no waiter sleeps
  // forever" is a property of the lock queue, judged on a healed cell with room for the lock
  // traffic. Swarm shapes with one 64-byte append in flight commit ~60 entries/s while the writer
  // offers more, so contenders starved behind a full uncommitted budget or had leases of 200-600 ms
  // outlived by commit latency (plain seeds 80, 160, 50247, 50269, 142056), a capacity limit that
  // fair admission (#28) addresses, not a lost wakeup. The lease workload stops at the same point.
  let kvWriterQuiet = false;
  repeat(world, scenario.proposeIntervalMs, () => {
    if (!kvWriterQuiet) client.propose();
  });
  repeat(world, scenario.readIntervalMs, () => client.read());
  leaseWorkload?.start();
  lockWorkload?.start();
  watchWorkload?.start();
  scheduleFaults(world, nemesis, nemesisRandom);
  if (options.olderCopy === true) scheduleOlderCopies(world, root.fork(11));
  if (scenario.leaderIsolation !== undefined) scheduleLeaderIsolations(world, root.fork(12), scenario.leaderIsolation);
  if (progressNotes !== null) lockWorkload?.useProgressNotes(progressNotes);
  for (const scripted of options.script ?? []) scheduleScripted(world, scripted);
  const progressEveryMs = options.progressEveryMs;
  if (progressEveryMs !== undefined) repeat(world, progressEveryMs, () => emitProgress(world));
  let done = false;
  let kvLive = false;
  const budgetMs = options.livenessBudgetMs ?? livenessBudgetMsDefault;
  const liveness = { startMs: scenario.faultPhaseMs, deadlineMs: 0, budget: '' };
  let leasesDeadlineMs = 0;
  let locksDeadlineMs = 0;
  /** When every lock contender was done (null: not yet; at once without the lock workload). */
  let locksSettledAtMs: number | null = lockWorkload === null ? 0 : null;
  /** The revision every watcher must reach once the locks settled (null: not yet known). */
  let watchTarget: { revision: number; deadlineMs: number } | null = null;
  world.at(scenario.faultPhaseMs, 'FAULTS END: heal, resume, restart', () => {
    nemesis.active = false;
    if (options.skipLiveness === true) {
      done = true;
      return;
    }
    endFaults(world);
    // The budget is for recovering; shipping the log the faults left behind comes on top.
    const catchUp = catchUpAfterFaults(world.nodes.values(), scenario);
    liveness.deadlineMs = scenario.faultPhaseMs + budgetMs + catchUp.allowanceMs;
    liveness.budget =
      catchUp.allowanceMs === 0
        ? `${budgetMs} ms`
        : `${budgetMs} ms + ${catchUp.allowanceMs} ms to ship ${catchUp.entries} entries (${catchUp.messages} appends)`;
    world.trace('-', `liveness deadline ${liveness.deadlineMs} ms: ${liveness.budget}`);
    leasesDeadlineMs = liveness.deadlineMs + LeaseWorkload.settleBudgetMs();
    locksDeadlineMs = liveness.deadlineMs + LockWorkload.settleBudgetMs();
    client.startProbe();
    repeat(world, probeEveryMs, () => {
      if (done) return;
      // A member leaves once its removal completed, also after the kv probe: a removed member
      // left running gets no more entries, so the lease and lock checks would wait on it forever.
      nemesis.decommissionRemoved();
      if (!kvLive) {
        kvLive = checkLiveness(world, client, liveness);
        if (kvLive && lockWorkload !== null) kvWriterQuiet = true;
      }
      if (locksSettledAtMs === null && lockWorkload?.settled(locksDeadlineMs) === true) locksSettledAtMs = world.nowMs;
      if (locksSettledAtMs === null) return;
      if (watchWorkload !== null) {
        watchTarget ??= { revision: maxRevision(world), deadlineMs: world.nowMs + WatchWorkload.settleBudgetMs() };
        if (!watchWorkload.settled(watchTarget.revision, watchTarget.deadlineMs)) return;
      }
      // Lock contenders take new leases and drop lost ones until they are done (one whose leases
      // kept expiring between renewals did so past the lease deadline, seed 19979): the leases
      // they dropped get the whole budget to expire from then.
      const leasesBy = Math.max(leasesDeadlineMs, locksSettledAtMs + LeaseWorkload.settleBudgetMs());
      done = kvLive && (leaseWorkload === null || leaseWorkload.settled(leasesBy, lockWorkload?.liveLeases() ?? []));
    });
  });

  const stepsMax = options.stepsMax ?? stepsMaxDefault;
  return {
    step: () => {
      if (done || world.violations.length > 0 || !world.runStep()) return false;
      if (world.step >= stepsMax) {
        world.report('step budget', `still running after ${stepsMax} steps at ${world.nowMs} ms`);
      }
      return true;
    },
    result: () => ({
      seed: options.seed,
      scenario,
      violations: world.violations,
      steps: world.step,
      timeMs: world.nowMs,
      stats,
    }),
  };
}

/** The highest revision any running member's store has applied. */
function maxRevision(world: World): number {
  let revision = 0;
  for (const node of world.runningNodes()) revision = Math.max(revision, node.serverDriver?.mvccStore?.revision ?? 0);
  return revision;
}

export function scheduleFaults(world: World, nemesis: Nemesis, random: SeededRandom): void {
  const s = world.scenario;
  const next = (): void => {
    const atMs =
      world.nowMs + randomInt(random, s.faultIntervalMs >> 1, (s.faultIntervalMs * 3) >> 1);
    if (atMs < s.faultPhaseMs) world.at(atMs, '', () => (nemesis.act(), next()));
  };
  next();
}

/** A few times during the faults: copy a member's data directory, later restart it on the copy. */
/** Members restarted on an older copy: the only ones the peer ledger may find regressed. */
const restoredMembers = new WeakMap<World, Set<MemberId>>();

function scheduleOlderCopies(world: World, random: SeededRandom): void {
  const s = world.scenario;
  // A durable state machine would be newer than the copy of the log it was restored with.
  if (world.serverDriver || s.durableStateMachine) return;
  const restored = new Set<MemberId>();
  restoredMembers.set(world, restored);
  const next = (): void => {
    // One member per seed goes back in time: a lost disk is one of the faults a cell of 2f+1
    // tolerates f of, and the peers that would notice are the ones that must not lose theirs too.
    if (restored.size > 0) return;
    const atMs = world.nowMs + randomInt(random, 200, Math.max(400, s.faultPhaseMs >> 2));
    if (atMs >= s.faultPhaseMs) return;
    world.at(atMs, '', () => {
      const running = world.runningNodes();
      if (running.length > 0) {
        const node = pick(random, running);
        const copy = node.disk.durableCopy();
        const incarnation = node.incarnation;
        world.trace('-', `OLDER COPY of n${node.id} taken (term ${copy.hardState.term}, vote ${copy.hardState.vote}, ${copy.entries.length} entries)`);
        world.at(world.nowMs + randomInt(random, 100, 1500), '', () => {
          if (node.state === 'removed' || node.incarnation !== incarnation) return;
          if (restored.size > 0) return;
          restored.add(node.id);
          world.crash(node);
          node.disk.restoreCopy(copy);
          world.trace('-', `OLDER COPY restored on n${node.id}`);
          world.restart(node);
        });
      }
      next();
    });
  };
  next();
}

/**
 * Now and then cut the current leader off from every peer for long, while clients still reach it
 * (Scenario.leaderIsolation), one isolation at a time; from its own fork, so the other subsystems'
 * draws are those of the same seed without it.
 */
function scheduleLeaderIsolations(
  world: World,
  random: SeededRandom,
  plan: NonNullable<Scenario['leaderIsolation']>,
): void {
  // The leader struck is one that has served a while (plan.servedMs in one term), so clients
  // hold leases and locks through it: a leader isolated right after its election has nobody to
  // mislead. Looked for every 50 ms from the drawn time on.
  let seen: { key: string | null; sinceMs: number } = { key: null, sinceMs: 0 };
  const look = (): void => {
    if (world.nowMs >= world.scenario.faultPhaseMs) return;
    const leader = world.leader();
    const key = leader === null ? null : `${leader.id}/${leader.hard.term}`;
    if (key !== seen.key) seen = { key, sinceMs: world.nowMs };
    if (leader === null || world.network.isolatedCount() > 0 || world.nowMs - seen.sinceMs < plan.servedMs) {
      world.at(world.nowMs + 50, '', look);
      return;
    }
    const untilMs = Math.min(world.nowMs + randomInt(random, plan.durationMsMin, plan.durationMsMax), world.scenario.faultPhaseMs);
    world.network.isolate(leader.id);
    world.stats.leaderIsolations++;
    const description = `leader ${leader.id} isolated from its peers until ${untilMs} ms (clients still reach it)`;
    world.trace('-', `ISOLATE ${description}`);
    world.emit({ type: 'fault', timeMs: world.nowMs, description });
    world.at(untilMs, `REJOIN n${leader.id}`, () => {
      world.network.rejoin(leader.id);
      next(world.nowMs + randomInt(random, plan.everyMs >> 1, plan.everyMs * 2));
    });
  };
  const next = (atMs: number): void => {
    if (atMs < world.scenario.faultPhaseMs) world.at(atMs, '', look);
  };
  next(randomInt(random, 100, plan.everyMs));
}

function scheduleScripted(world: World, scripted: ScriptedFault): void {
  world.at(scripted.atMs, `SCRIPT ${scripted.fault}`, () => {
    const leader = world.leader();
    if (scripted.fault === 'crashLeader' && leader !== null) world.crash(leader);
    if (scripted.fault === 'isolateLeader' && leader !== null) {
      for (const id of world.nodes.keys())
        (world.network.block(leader.id, id), world.network.block(id, leader.id));
      world.emit({
        type: 'fault',
        timeMs: world.nowMs,
        description: `leader ${leader.id} isolated`,
      });
    }
    if (scripted.fault === 'heal') {
      world.network.heal();
      world.emit({ type: 'fault', timeMs: world.nowMs, description: 'network healed' });
    }
    if (scripted.fault === 'restartCrashed') {
      for (const node of world.nodes.values()) if (node.state === 'crashed') world.restart(node);
    }
  });
}

function emitProgress(world: World): void {
  const leader = world.leader();
  world.emit({
    type: 'progress',
    timeMs: world.nowMs,
    leader: leader?.id ?? 0,
    term: leader?.hard.term ?? 0,
    commitIndex: leader?.commitIndex ?? 0,
    acknowledged: world.stats.acknowledged,
  });
}

/** Heal everything: no partitions, no loss, every paused member resumed, every crashed one up. */
export function endFaults(world: World): void {
  world.cancelPendingCrashes();
  world.network.healAll();
  world.network.faults.lossRate = 0;
  world.network.faults.duplicateRate = 0;
  world.network.faults.reorderRate = 0;
  if (world.network.faults.tailRate !== undefined) world.network.faults.tailRate = 0;
  for (const node of world.nodes.values()) {
    if (node.state === 'paused') world.resume(node);
    else if (node.state === 'crashed') world.restart(node);
  }
}

/** True once a leader committed a new proposal and every member of its configuration applied it. */
function checkLiveness(
  world: World,
  client: Workload,
  liveness: { startMs: number; deadlineMs: number; budget: string },
): boolean {
  const leader = world.leader();
  const ack = client.probeAck;
  // A member that found its data older than its promises stays out until replaced (the
  // operator's job): it need not catch up. Found anywhere else, the ledger check is wrong.
  const regressed = new Set<MemberId>();
  for (const node of world.nodes.values()) {
    if (node.state !== 'running' || node.core === null) continue;
    const reason = (node.core as RaftApi).status().regressed;
    if (reason === null) continue;
    regressed.add(node.id);
    world.stats.regressedMembers = regressed.size;
    if (restoredMembers.get(world)?.has(node.id) !== true) {
      world.report('peer ledger', `member ${node.id} says its data went back in time, and no older copy was restored on it: ${reason}`);
      return true;
    }
  }
  let lagging: string[] = [];
  if (leader !== null && ack !== null) {
    const conf = (leader.core as RaftApi).status().confState;
    const members = new Set<MemberId>([...conf.voters, ...conf.votersOutgoing, ...conf.learners]);
    lagging = [...members]
      .sort((a, b) => a - b)
      .filter((id) => {
        const node = world.nodes.get(id);
        if (regressed.has(id)) return false;
        return node === undefined || node.state !== 'running' || node.appliedIndex < ack.index;
      })
      .map((id) => `${id}@${world.nodes.get(id)?.appliedIndex ?? 'absent'}`);
    if (lagging.length === 0) {
      world.stats.livenessMs = world.nowMs - liveness.startMs;
      world.trace('-', `LIVENESS ok after ${world.stats.livenessMs} ms (index ${ack.index})`);
      return true;
    }
  }
  if (world.nowMs >= liveness.deadlineMs) {
    const what =
      leader === null
        ? 'no leader'
        : ack === null
          ? `leader ${leader.id} (term ${leader.hard.term}) committed no new proposal`
          : `members not caught up to ${ack.index}: ${lagging.join(' ')}`;
    world.report(
      'liveness',
      `${liveness.deadlineMs - liveness.startMs} ms after the faults stopped (${liveness.budget}): ${what}`,
    );
    return true;
  }
  return false;
}

function repeat(world: World, everyMs: number, run: () => void): void {
  const again = (): void => {
    run();
    world.at(world.nowMs + everyMs, '', again);
  };
  world.at(world.nowMs + everyMs, '', again);
}

function range(first: number, count: number): MemberId[] {
  return Array.from({ length: count }, (_, i) => first + i);
}

export function emptyStats(): SimStats {
  return {
    proposals: 0,
    acknowledged: 0,
    committedOnLeader: 0,
    reads: 0,
    readsServed: 0,
    elections: 0,
    crashes: 0,
    partitions: 0,
    leaderIsolations: 0,
    pauses: 0,
    membershipChanges: 0,
    transfers: 0,
    snapshotsSent: 0,
    messagesDelivered: 0,
    messagesDropped: 0,
    livenessMs: -1,
    regressedMembers: 0,
  };
}
