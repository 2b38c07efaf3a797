// One cells run from a seed (issue 24): N data cells and a control cell, each a simulated Raft
// group of three running the production driver and the real MVCC store (ownership tables,
// imports; the control cell holds the cell map), each under its own drawn nemesis; a routing
// layer; clients per namespace; a move driver moving namespaces back and forth. Setup gives every cell its table; then faults, moves
// and writes run until the fault phase ends; then the cells heal, the last move and the clients
// finish, and every namespace is read on its owner. The checkers run inside every step.
import { nestedNamespaces } from '../../base/namespaces.js';
import { SeededRandom, randomInt } from '../../base/random.js';
import { emptyCellMap, nestedIn, withCell, withNamespace, type CellMap } from '../../control/cell-map.js';
import { defaultMvccLimits } from '../../mvcc/index.js';
import { defaultWatchLimits } from '../../watch/index.js';
import type { MemberId } from '../../raft/index.js';
import { createCore } from '../core-factory.js';
import { mvccStateMachine } from '../mvcc-machine.js';
import { Nemesis } from '../nemesis.js';
import { drawScenario } from '../scenario.js';
import { emptyStats, endFaults, scheduleFaults } from '../simulate.js';
import type { Scenario } from '../types.js';
import { World } from '../world.js';
import { CellsLoop } from './cells-loop.js';
import { CellsWatchers } from './cells-watchers.js';
import { CellsWorkload } from './cells-workload.js';
import { OwnerChecker } from './owner-checker.js';
import { SimCell } from './sim-cell.js';
import { SimControl } from './sim-control.js';
import { SimMover } from './sim-mover.js';
import { RealMoverDriver } from './real-mover.js';
import { SimRouter } from './sim-router.js';
import { emptyCellsStats, type CellsOptions, type CellsResult, type CellsStats } from './types.js';
import { assert } from '../../base/assert.js';

const membersPerCell = 3;
const setupWaitMs = 20_000;
/** After the faults: the open move and the clients must finish within this (then the final reads). */
const settleBudgetMs = 20_000;
/** Moves go on a while on healed cells (each seed moves something), the clients a little longer. */
const movesAfterFaultsMs = 1_500;
const clientsAfterFaultsMs = 2_000;
const stepsMaxDefault = 4_000_000;
/** Cells' clocks run up to this far apart (Request-ID records moved between them are re-stamped). */
const clockSpreadMs = 2 * 3_600_000;

export async function simulateCells(options: CellsOptions): Promise<CellsResult> {
  const root = new SeededRandom(options.seed);
  const cellCount = options.cells ?? 2;
  const prefixes = options.namespaces ?? ['/a/', '/b/', '/c/'];
  const faultPhaseMs = options.faultPhaseMs ?? randomInt(root.fork(1), 3_000, 7_000);
  const stats = emptyCellsStats();
  // The data cells, then the control cell (the last world).
  const names = [...Array.from({ length: cellCount }, (_, i) => `cell-${i + 1}`), 'control'];
  const created = names.map((name, i) => createWorld(options, root.fork(name === 'control' ? 200 : 100 + i), name, faultPhaseMs));
  const worlds = created.map((c) => c.world);
  const loop = new CellsLoop(worlds, options.trace);
  const ids = names.slice(0, cellCount);
  const checker = new OwnerChecker(loop, prefixes, ids);
  const started = startCells(options, loop, checker, names, created);
  let map = started.map;
  for (const [i, prefix] of prefixes.entries()) map = withNamespace(map, prefix, ids[i % ids.length] as string);
  const bugs = options.bugs ?? {};
  const control = new SimControl(map, started.cells, loop, bugs, started.controlCell);
  const router = new SimRouter(control, loop, stats);
  const parts: Actors = {
    options, loop, prefixes, faultPhaseMs, stats, checker, control, router, cells: started.cells,
    workload: new CellsWorkload(loop, router, root.fork(2), prefixes, stats, options.mover !== 'sim'),
    mover: options.mover === 'sim' ? new SimMover(control, loop, root.fork(3), stats, bugs) : new RealMoverDriver(control, loop, root.fork(3), stats, bugs, options.feed !== false ? root.fork(9) : null),
    watchers: new CellsWatchers(loop, control, router, checker, root.fork(4)),
  };
  loop.at(faultPhaseMs, () => {
    for (const [i, world] of worlds.entries()) {
      (started.nemeses[i] as Nemesis).active = false;
      endFaults(world);
    }
  });
  let done = false;
  runActors(parts).then(
    () => (done = true),
    (error: unknown) => {
      loop.report('exception', error instanceof Error ? `${error.message}\n${error.stack ?? ''}` : String(error));
      done = true;
    },
  );
  const stepsMax = options.stepsMax ?? stepsMaxDefault;
  const violated = (): boolean => loop.violations.length > 0 || worlds.some((world) => world.violations.length > 0);
  await null;
  while (!done && !violated() && loop.step()) {
    if (loop.steps >= stepsMax) loop.report('step budget', `still running after ${stepsMax} steps at ${loop.nowMs} ms`);
    // The drivers' answers and the actors' continuations settle as microtasks: let them run in order.
    await null;
    await null;
    await null;
  }
  for (const world of worlds) {
    stats.crashes += world.stats.crashes;
    stats.elections += world.stats.elections;
  }
  return {
    seed: options.seed, violations: loop.allViolations(), steps: loop.steps, timeMs: loop.nowMs, faultPhaseMs, stats,
    windowsMs: parts.mover.windowsMs,
  };
}

/** One cell's world: its scenario drawn from its own fork (members fixed at three). */
function createWorld(options: CellsOptions, cellRoot: SeededRandom, name: string, faultPhaseMs: number): { world: World; random: SeededRandom } {
  const drawn = drawScenario(cellRoot.fork(1), options.profile);
  const scenario: Scenario = {
    ...drawn, voterCount: membersPerCell, learnerCount: 0, faultPhaseMs,
    compactEveryEntries: Math.max(100, drawn.compactEveryEntries),
    // A move's imports are kilobytes: under a 512-byte uncommitted budget the clients' small
    // writes, always in flight, refuse them for good (seed 2: the landing never got in).
    uncommittedBytesMax: Math.max(64 * 1024, drawn.uncommittedBytesMax),
  };
  const randoms = { network: cellRoot.fork(2), disk: cellRoot.fork(3), cores: cellRoot.fork(6), ticks: cellRoot.fork(7) };
  const trace = options.trace;
  const simOptions = { seed: options.seed, driver: 'server' as const, ...(trace === undefined ? {} : { trace: (line: string) => trace(`${name} ${line}`) }) };
  return { world: new World(scenario, randoms, simOptions, createCore, mvccStateMachine(defaultMvccLimits, 32), emptyStats()), random: cellRoot };
}

/** Starts every cell's members and nemesis; the data cells join the map (root on the first). */
function startCells(
  options: CellsOptions, loop: CellsLoop, checker: OwnerChecker, names: readonly string[], created: readonly { world: World; random: SeededRandom }[],
): { cells: Map<string, SimCell>; controlCell: SimCell; map: CellMap; nemeses: Nemesis[] } {
  const cells = new Map<string, SimCell>();
  const nemeses: Nemesis[] = [];
  let controlCell: SimCell | null = null;
  let map: CellMap = emptyCellMap;
  for (const [i, { world, random }] of created.entries()) {
    const id = names[i] as string;
    const data = id !== 'control';
    // Before the members start: their drivers take the hooks and watch hubs at boot.
    if (data) world.hooks = checker.hooksFor(id);
    // Every member runs the production watch hub (watch-member.ts); the reference history is the checker's.
    if (data && (options.watches === true || options.feed !== false)) {
      const limits = options.watchBugs === undefined ? defaultWatchLimits : { ...defaultWatchLimits, readEventsMax: 2 };
      world.watches = { limits, bugs: options.watchBugs ?? {}, recordHistory: () => {} };
    }
    const voters: MemberId[] = [1, 2, 3];
    for (const member of voters) world.addMember(member, { voters, votersOutgoing: [], learners: [] });
    const nemesisRandom = random.fork(4);
    const nemesis = new Nemesis(world, nemesisRandom, membersPerCell + 1);
    world.onLeaderElected = (node) => nemesis.onLeaderElected(node);
    scheduleFaults(world, nemesis, nemesisRandom);
    nemeses.push(nemesis);
    // Clocks up to two hours apart (a fork of its own: the other draws stay as they were).
    const cell = new SimCell(id, world, loop, random.fork(5), randomInt(random.fork(11), 0, clockSpreadMs));
    if (!data) {
      controlCell = cell;
      continue;
    }
    cells.set(id, cell);
    map = withCell(map, { id, endpoints: voters.map((m) => `http://${id}.sim:${m}`) });
  }
  assert(controlCell !== null && cells.size === names.length - 1, 'the data cells and one control cell');
  return { cells, controlCell, map, nemeses };
}

interface Actors {
  readonly options: CellsOptions;
  readonly loop: CellsLoop;
  readonly prefixes: readonly string[];
  readonly faultPhaseMs: number;
  readonly stats: CellsStats;
  readonly checker: OwnerChecker;
  readonly control: SimControl;
  readonly router: SimRouter;
  readonly cells: ReadonlyMap<string, SimCell>;
  readonly workload: CellsWorkload;
  readonly mover: SimMover | RealMoverDriver;
  readonly watchers: CellsWatchers;
}

/** Setup, then clients and moves until past the faults, then the end's checks. */
async function runActors(a: Actors): Promise<void> {
  // Setup: the control cell holds the map, every data cell applies its first table (before it, a
  // cell owns every key).
  await a.control.bootstrap();
  await Promise.all([...a.cells.keys()].map((id) => a.control.pushUntil(a.control.map, id, setupWaitMs)));
  if (a.options.ownerChecks !== false) a.checker.arm();
  a.control.startReconciler();
  a.router.startRefreshing();
  // A watch of a prefix with namespaces nested in it spans them all (cross_cell once they are
  // apart): the watchers, checked per namespace, watch the namespaces that have none.
  if (a.options.watches === true) a.watchers.start(a.prefixes.filter((p) => nestedNamespaces(a.prefixes, p).length === 0));
  a.workload.start(Math.max(a.loop.nowMs, a.faultPhaseMs) + clientsAfterFaultsMs);
  await a.mover.run(a.faultPhaseMs + movesAfterFaultsMs);
  await finish(a, Math.max(a.loop.nowMs, a.faultPhaseMs) + settleBudgetMs);
}

/** The clients finish; checker (3) reads every namespace on its owner; checker (4) waits for the watchers. */
async function finish(a: Actors, deadline: number): Promise<void> {
  const { loop } = a;
  while (!a.workload.idle()) {
    if (loop.nowMs > deadline) return loop.report('liveness', `clients still waiting ${settleBudgetMs} ms after the faults`);
    await loop.sleep(50);
  }
  for (const prefix of a.prefixes) {
    const owner = a.control.map.namespaces.find((n) => n.prefix === prefix)?.cell as string;
    const nested = nestedIn(a.control.map, prefix);
    let read = null;
    while (read === null) {
      if (loop.nowMs > deadline) return loop.report('liveness', `no read of ${prefix} on ${owner} served ${settleBudgetMs} ms after the faults`);
      read = await (a.cells.get(owner) as SimCell).readNamespace(prefix, nested);
      if (read === null) await loop.sleep(50);
    }
    a.workload.checkFinal(prefix, read.kvs, owner, nested);
  }
  while (a.options.watches === true && !a.watchers.settled(deadline)) await loop.sleep(50);
  a.stats.watchesEndedByMoves = a.watchers.movedEnds;
  a.stats.watchRereads = a.watchers.rereads;
}
