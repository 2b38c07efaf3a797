// The nemesis of a fault run across cells: one fault at a time, drawn from a seed, each healed
// before the next. Kinds:
// - router-kill: kill -9 of the router, started again on its port after the fault's duration;
// - control-leader-kill: kill -9 of the control plane's leader (the mover's moves are open then,
//   often), restarted from its data after the duration;
// - cell-leader-kill: kill -9 of one data cell's leader, restarted after the duration;
// - kill / partition-leader: the one-cell kinds (nemesis.ts), applied to a data cell drawn per
//   fault: any member killed, or the leader cut off from its peers.
// The one-cell kinds that change a cell's members (membership, grow-first, older-copy) are not
// run here: the control plane's cell registry would need the new endpoints (left for later).
import { SeededRandom, randomInt } from '../../src/base/random.js';
import { findLeader, sleep, type TestCell } from '../cluster/harness.js';
import type { CellsSetup } from './cells-setup.js';

export const cellsFaultKinds = ['router-kill', 'control-leader-kill', 'cell-leader-kill', 'kill', 'partition-leader'] as const;
export type CellsFaultKind = (typeof cellsFaultKinds)[number];

export interface CellsNemesis {
  readonly counts: Map<CellsFaultKind, number>;
  readonly log: string[];
  /** Stop after the current fault, heal, and wait for every member and the router. */
  stop(): Promise<void>;
}

export function startCellsNemesis(
  setup: CellsSetup,
  seed: bigint,
  now: () => number,
  kinds: readonly CellsFaultKind[] = cellsFaultKinds,
): CellsNemesis {
  const random = new SeededRandom(seed ^ 0x63656c6cn);
  const counts = new Map<CellsFaultKind, number>();
  const log: string[] = [];
  let stopping = false;
  const pick = <T>(items: readonly T[]): T => items[randomInt(random, 0, items.length - 1)] as T;
  const cellIds = [...setup.cells.keys()];
  const loop = (async () => {
    for (let round = 0; round < 100_000 && !stopping; round++) {
      await sleep(randomInt(random, 1_000, 3_000));
      if (stopping) break;
      const kind = pick(kinds);
      const duration = randomInt(random, 1_000, 4_000);
      const cellId = pick(cellIds);
      const cell = setup.cells.get(cellId) as TestCell;
      const anyone = pick(cell.names);
      counts.set(kind, (counts.get(kind) ?? 0) + 1);
      const note = (what: string): void => {
        log.push(`${now().toFixed(0)} ms: ${kind} ${what} for ${duration} ms`);
      };
      switch (kind) {
        case 'router-kill':
          note('router');
          await setup.router.kill9();
          await sleep(duration);
          setup.router.start();
          break;
        case 'control-leader-kill':
          await killAndRestart(setup.control, await findLeader(setup.control, setup.control.names, 3_000).catch(() => pick(setup.control.names)), duration, (v) => note(`control ${v}`));
          break;
        case 'cell-leader-kill':
          await killAndRestart(cell, await findLeader(cell, cell.names, 3_000).catch(() => anyone), duration, (v) => note(`${cellId} ${v}`));
          break;
        case 'kill':
          await killAndRestart(cell, anyone, duration, (v) => note(`${cellId} ${v}`));
          break;
        case 'partition-leader': {
          const victim = await findLeader(cell, cell.names, 3_000).catch(() => anyone);
          note(`${cellId} ${victim}`);
          cell.isolate(victim);
          await sleep(duration);
          cell.healAll();
          break;
        }
      }
    }
  })();
  return {
    counts,
    log,
    async stop() {
      stopping = true;
      await loop;
      setup.router.start();
      for (const cell of [setup.control, ...setup.cells.values()]) {
        cell.healAll();
        for (const name of cell.names) if (!cell.cell.isRunning(name)) cell.cell.start(name);
        await cell.cell.waitReady(30_000, cell.names);
      }
    },
  };
}

async function killAndRestart(cell: TestCell, victim: string, durationMs: number, note: (victim: string) => void): Promise<void> {
  note(victim);
  await cell.cell.kill9(victim);
  await sleep(durationMs);
  cell.cell.start(victim);
}
