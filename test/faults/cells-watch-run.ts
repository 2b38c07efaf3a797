// The watch part of a fault run across cells: per namespace, one watcher through the router and
// one directly on the cells (cells-watcher.ts), both from revision 1 for the whole run. After the
// run they catch up on the namespace's final owner through the revision of a final read there,
// and the checker (cells-watch-check.ts) compares what each saw with the run's history.
import type { KvOperation, OperationRecord, Verdict } from '../../src/check/index.js';
import { http, sleep } from '../cluster/harness.js';
import { checkNamespaceWatches, type NamespaceWatchReport } from './cells-watch-check.js';
import { CellsWatcher, describeSegment, type WatchTeeth } from './cells-watcher.js';
import type { CellsSetup } from './cells-setup.js';
import { keyPath } from './kv-client.js';

export interface NamespaceWatchers {
  /** The namespace as the workload names its keys (`a/`). */
  readonly ns: string;
  readonly watchers: readonly CellsWatcher[];
}

const finishMs = 20_000;

/** Starts the watchers of each namespace; `teeth` applies to the first namespace's router watcher. */
export function startNamespaceWatchers(
  setup: CellsSetup,
  namespaces: readonly string[],
  now: () => number,
  teeth: WatchTeeth,
): NamespaceWatchers[] {
  return namespaces.map((ns, i) => {
    const prefix = keyPath(ns);
    const first = setup.owners.get(prefix) as string;
    const cells = (cell: string): readonly string[] => setup.cells.get(cell)?.cell.clientUrls() ?? [];
    return {
      ns,
      watchers: [
        new CellsWatcher(`${ns}router`, prefix, { router: setup.router.url }, first, now, i === 0 ? teeth : 'none'),
        new CellsWatcher(`${ns}direct`, prefix, { cells }, first, now),
      ],
    };
  });
}

/**
 * Ends the watchers (each caught up on its namespace's final owner, or after 20 s) and checks
 * them against `records` (the kv history) and `finals` (each key's final read).
 */
export async function checkNamespaceWatchers(
  setup: CellsSetup,
  all: readonly NamespaceWatchers[],
  records: readonly OperationRecord<KvOperation>[],
  finals: ReadonlyMap<string, string | null>,
): Promise<{ lines: string[]; verdicts: Verdict[]; violations: number; events: number }> {
  const lines: string[] = [];
  const verdicts: Verdict[] = [];
  let violations = 0;
  let events = 0;
  for (const { ns, watchers } of all) {
    const end = await finalPoint(setup.router.url, keyPath(ns));
    const complete = await Promise.all(watchers.map((w) => (end === null ? w.finish('', 0, 0) : w.finish(end.cell, end.revision, finishMs))));
    const report = checkNamespaceWatches({
      watches: watchers.map((w, i) => ({
        id: w.id, events: w.events(), complete: complete[i] as boolean,
        snapshots: w.snapshots().map(({ afterEvents, snapshot }) => ({ afterEvents, ...snapshot })),
      })),
      records: records.filter((r) => r.operation.key.startsWith(ns)),
      finals: new Map([...finals].filter(([key]) => key.startsWith(ns))),
      keyOf: (key) => workloadKey(ns, key),
    });
    const verdict = verdictOf(report, watchers.length);
    verdicts.push(verdict);
    violations += report.violations.length;
    events += report.eventsChecked;
    const through = end === null ? 'no final revision' : `through ${end.cell}@${end.revision}`;
    lines.push(
      `namespace /faults/${ns}: watch ${verdict} (${report.eventsChecked} events checked, ` +
        `${report.completeWatchers}/${watchers.length} watchers complete ${through}` +
        `${report.rereadWatchers > 0 ? `, ${report.rereadWatchers} of them re-read after compacted (checked from their last read)` : ''})`,
    );
    lines.push(...watchers.map((w) => `  watcher ${w.describe()}`));
    for (const v of report.violations.slice(0, 10)) lines.push(`  ${v.kind} (${v.watcher}): ${v.message}`);
    for (const w of watchers) lines.push(...w.crossedMoves().map((c) => `  ${w.id} resumed across a move without its end: ${c}`));
    // Not ok: each watcher's connections, to set beside the moves and the faults.
    if (verdict !== 'ok') {
      for (const w of watchers) lines.push(...w.segments.slice(0, 40).map((s) => `    ${w.id}: ${describeSegment(s)}`));
    }
  }
  return { lines, verdicts, violations, events };
}

/** `/faults/a/k0` -> `a/k0`; keys the workload does not write (the setup's `ready`) -> null. */
function workloadKey(ns: string, watchedKey: string): string | null {
  const name = watchedKey.slice(keyPath('').length);
  return name.startsWith(ns) && /^k\d+$/.test(name.slice(ns.length)) ? name : null;
}

/** A gap check needs every watcher complete; an incomplete one leaves the verdict undecided. */
function verdictOf(report: NamespaceWatchReport, watchers: number): Verdict {
  if (report.violations.length > 0) return 'violation';
  return report.completeWatchers === watchers ? 'ok' : 'unknown';
}

/** The owner and its revision, from a linearizable read through the router once faults healed. */
async function finalPoint(routerUrl: string, prefix: string): Promise<{ cell: string; revision: number } | null> {
  for (let attempt = 0; attempt < 30; attempt++) {
    const read = await http(`${routerUrl}/v1/kv${prefix}ready`, { timeoutMs: 3_000 }).catch(() => null);
    const cell = read?.headers.get('baton-cell');
    const revision = Number(read?.headers.get('baton-revision'));
    if (read !== null && read !== undefined && read.status < 300 && cell && Number.isInteger(revision)) return { cell, revision };
    await sleep(200);
  }
  return null;
}
