// The nemesis: one fault at a time, drawn from a seed, each healed before the next so a majority
// comes back between faults. Kinds: kill -9 (and restart from disk), pause (SIGSTOP, then
// SIGCONT after longer than an election), and partitions (one member, often the leader, cut off
// from its peers through the fault proxies).
import { SeededRandom, randomInt } from '../../src/base/random.js';
import { findLeader, sleep, type TestCell } from '../cluster/harness.js';

export type FaultKind = 'kill' | 'pause' | 'partition-leader' | 'partition-one';

export interface Nemesis {
  readonly counts: Map<FaultKind, number>;
  readonly log: string[];
  /** Stop after the current fault, heal everything, and wait for every member to be ready. */
  stop(): Promise<void>;
}

export function startNemesis(
  cell: TestCell,
  seed: bigint,
  now: () => number,
  faultMsMax = 4_000,
): Nemesis {
  const random = new SeededRandom(seed ^ 0x6e656d65n);
  const counts = new Map<FaultKind, number>();
  const log: string[] = [];
  let stopping = false;
  const kinds: FaultKind[] = ['kill', 'pause', 'partition-leader', 'partition-one'];
  const loop = (async () => {
    for (let round = 0; round < 100_000 && !stopping; round++) {
      await sleep(randomInt(random, 1_000, 3_000));
      if (stopping) break;
      const kind = kinds[randomInt(random, 0, kinds.length - 1)] as FaultKind;
      const duration = randomInt(random, 1_000, faultMsMax);
      let victim = cell.names[randomInt(random, 0, cell.names.length - 1)] as string;
      if (kind === 'partition-leader') {
        victim = await findLeader(cell, cell.names, 3_000).catch(() => victim);
      }
      counts.set(kind, (counts.get(kind) ?? 0) + 1);
      log.push(`${now().toFixed(0)} ms: ${kind} ${victim} for ${duration} ms`);
      await inject(cell, kind, victim, duration);
    }
  })();
  return {
    counts,
    log,
    async stop() {
      stopping = true;
      await loop;
      heal(cell);
      await cell.cell.waitReady(30_000);
    },
  };
}

async function inject(cell: TestCell, kind: FaultKind, victim: string, durationMs: number) {
  switch (kind) {
    case 'kill':
      await cell.cell.kill9(victim);
      await sleep(durationMs);
      cell.cell.start(victim);
      return;
    case 'pause':
      cell.cell.signal(victim, 'SIGSTOP');
      await sleep(durationMs);
      cell.cell.signal(victim, 'SIGCONT');
      return;
    case 'partition-leader':
    case 'partition-one':
      cell.isolate(victim);
      await sleep(durationMs);
      cell.healAll();
      return;
  }
}

function heal(cell: TestCell): void {
  cell.healAll();
  for (const name of cell.names) {
    if (cell.cell.isRunning(name)) cell.cell.signal(name, 'SIGCONT');
    else cell.cell.start(name);
  }
}
