// `baton sim --world cells`: seeds of the cells world (src/sim/cells: data cells, moves between
// them under each cell's nemesis), one line per seed with its moves and violations, and the
// command that replays a failing one. Wall-clock time is read here, at the edge.
import { simulateCells, type CellsBugs } from '../sim/cells/index.js';
import type { Scenario } from '../sim/index.js';

export interface SimCellsFlags {
  readonly seeds: readonly bigint[];
  readonly cells: number;
  readonly bugs: readonly string[];
  readonly profile: Scenario['profile'] | undefined;
  readonly faultPhaseMs: number | undefined;
  readonly trace: boolean;
  readonly watches: boolean;
  readonly mover: 'real' | 'sim';
  /** A namespace nested in another (/a/n/ in /a/): each moves without the other. */
  readonly nested: boolean;
  /** The real mover's source feed on the members' watch hubs (sim-feed.ts). */
  readonly feed: boolean;
}

/** The namespaces of a seed: three side by side, and with `nested` one inside the first. */
const flatNamespaces = ['/a/', '/b/', '/c/'];
const nestedNamespaces = ['/a/', '/a/n/', '/b/', '/c/'];

export const cellsBugNames = ['skip-fence', 'skip-floor', 'skip-restamp', 'late-dedup-clock'] as const;

export async function simCellsCommand(flags: SimCellsFlags): Promise<number> {
  const bugs: CellsBugs = {
    skipFence: flags.bugs.includes('skip-fence'), skipFloor: flags.bugs.includes('skip-floor'),
    skipRestamp: flags.bugs.includes('skip-restamp'), lateDedupClock: flags.bugs.includes('late-dedup-clock'),
  };
  const extra = [
    ...(flags.cells === 2 ? [] : [`--cells ${flags.cells}`]),
    ...(flags.profile === undefined ? [] : [`--profile ${flags.profile}`]),
    ...(flags.faultPhaseMs === undefined ? [] : [`--fault-phase-ms ${flags.faultPhaseMs}`]),
    ...flags.bugs.map((bug) => `--cells-bug ${bug}`),
    ...(flags.watches ? ['--watches'] : []),
    ...(flags.mover === 'sim' ? ['--mover sim'] : []),
    ...(flags.nested ? ['--nested'] : []),
    ...(flags.feed ? [] : ['--no-feed']),
  ].join(' ');
  const started = performance.now();
  let failed = 0;
  let released = 0;
  let aborted = 0;
  for (const seed of flags.seeds) {
    const result = await simulateCells({
      seed, cells: flags.cells, bugs, watches: flags.watches, mover: flags.mover, namespaces: flags.nested ? nestedNamespaces : flatNamespaces, feed: flags.feed,
      ...(flags.profile === undefined ? {} : { profile: flags.profile }),
      ...(flags.faultPhaseMs === undefined ? {} : { faultPhaseMs: flags.faultPhaseMs }),
      ...(flags.trace ? { trace: (line: string) => console.log(line) } : {}),
    });
    const s = result.stats;
    released += s.movesReleased;
    aborted += s.movesAborted;
    console.log(`seed ${seed}: moves ${s.movesReleased} released, ${s.movesAborted} aborted; writes ${s.writesAcknowledged} acknowledged, ` +
      `${s.writesUnknown} unknown; lock grants ${s.lockGrants}; wrong_cell followed ${s.wrongCellFollowed}; crashes ${s.crashes}; ` +
      (flags.watches ? `watches ended by moves ${s.watchesEndedByMoves}, read again at a floor ${s.watchRereads}; ` : '') +
      `violations ${result.violations.length}`);
    if (result.violations.length === 0) continue;
    failed++;
    for (const violation of result.violations) {
      console.log(`  ${violation.invariant} at step ${violation.step} (${violation.timeMs} ms): ${violation.detail.split('\n')[0] ?? ''}`);
    }
    console.log(`  replay: npm run sim -- --world cells --seed ${seed} --trace${extra === '' ? '' : ` ${extra}`}`);
  }
  const seconds = (performance.now() - started) / 1000;
  console.log(`${flags.seeds.length} seeds, ${released} moves released, ${aborted} aborted, ${failed} seeds with violations, ${seconds.toFixed(1)} s`);
  return failed === 0 ? 0 : 1;
}
