// `npm run faults -- --cells 2 --time 60 --seed S [--clients 5] [--lock-clients 3] [--keys 3]
//   [--kinds K,...] [--reads serializable] [--watch-teeth drop|dup] [--nested true] [--history FILE]`: the fault
// run across cells (cells-run.ts). --kinds keeps the kinds it names that a run across cells has
// (cells-nemesis.ts) and says which it leaves out, so one command line serves both modes. Prints the summary and one
// result line (moves, write windows, violations); exits 1 on a violation, 2 when a checker could
// not decide. `--reads serializable` is the self-test: stale reads must be reported; so is
// `--watch-teeth drop|dup`: a watcher's recorder loses or repeats one event, which must be reported.
// `--nested true`: /faults/a/n/ (on the other cell) inside /faults/a/, each moved without the other.
import { writeFileSync } from 'node:fs';
import { runCellsFaults } from './cells-run.js';
import { cellsFaultKinds, type CellsFaultKind } from './cells-nemesis.js';
import type { WatchTeeth } from './cells-watcher.js';

export async function cellsMain(flag: (name: string, fallback: string) => string): Promise<number> {
  const seed = BigInt(flag('seed', String(Date.now() % 100_000)));
  const timeS = Number(flag('time', '60'));
  const cellCount = Number(flag('cells', '2'));
  if (cellCount !== 2) throw new Error('--cells is 1 or 2');
  const asked = flag('kinds', '') === '' ? [...cellsFaultKinds] : flag('kinds', '').split(',');
  const kinds = asked.filter((k): k is CellsFaultKind => (cellsFaultKinds as readonly string[]).includes(k));
  const left = asked.filter((k) => !(cellsFaultKinds as readonly string[]).includes(k));
  // The cells' own kinds always run: they are what this mode is for.
  for (const kind of ['router-kill', 'control-leader-kill', 'cell-leader-kill'] as const) if (!kinds.includes(kind)) kinds.push(kind);
  const summary = await runCellsFaults({
    seed,
    timeS,
    cellCount,
    clients: Number(flag('clients', '5')),
    lockClients: Number(flag('lock-clients', '3')),
    keys: Number(flag('keys', '3')),
    kinds,
    reads: flag('reads', 'linearizable') === 'serializable' ? 'serializable' : 'linearizable',
    watchTeeth: watchTeeth(flag('watch-teeth', 'none')),
    nested: flag('nested', 'false') === 'true',
    onHistory: (events) => {
      const path = flag('history', '');
      if (path !== '') writeFileSync(path, events.map((e) => JSON.stringify(e)).join('\n') + '\n');
    },
  });
  console.log(`faults run across ${cellCount} cells: seed ${seed}, ${timeS} s, kinds ${kinds.join(',')}` +
    (left.length > 0 ? ` (not run across cells: ${left.join(',')})` : ''));
  for (const line of summary.lines) console.log(line);
  console.log(`result: ${summary.verdict === 'ok' ? 'ok' : summary.verdict.toUpperCase()}; ${summary.result}` +
    (summary.verdict === 'ok' ? '' : ` (run again: npm run faults -- --cells ${cellCount} --time ${timeS} --seed ${seed}${flag('nested', 'false') === 'true' ? ' --nested true' : ''})`));
  return summary.verdict === 'ok' ? 0 : summary.verdict === 'violation' ? 1 : 2;
}

function watchTeeth(text: string): WatchTeeth {
  if (text !== 'none' && text !== 'drop' && text !== 'dup') throw new Error(`--watch-teeth is drop or dup, not ${text}`);
  return text;
}
