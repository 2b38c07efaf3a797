// A fault run across cells (`--cells 2`, issue 24): a control plane, data cells and a router as
// real processes (cells-setup.ts); the kv workload's clients go through the router with their
// keys in two namespaces, which the mover (cells-mover.ts) moves back and forth between the cells
// while the nemesis (cells-nemesis.ts) kills the router, the control leader and data cells'
// members. Then every fault heals, final reads are taken through the router, and the history is
// checked per namespace: linearizability per key and durability need no revisions, so they hold
// across a move unchanged (a key's history is one register wherever its namespace lives).
// The lock workload (lock-client.ts) runs on the lock's own namespace, moved like the others, with
// its leases on the namespace's cell (namespace-lease-client.ts); lock safety needs no revisions
// either: tokens are compared among themselves, and a move keeps them increasing.
// Watches (cells-watch-run.ts): per kv namespace a watcher through the router and one directly on
// the cells, from revision 1, resumed after wrong_cell ends and dropped connections; checked
// against the run's history, since revisions are per cell (cells-watch-check.ts).
// Not yet here: the lease workload (its keys would need the same namespaced leases).
import { isOwnKey, nestedNamespaces } from '../../src/base/namespaces.js';
import { performance } from 'node:perf_hooks';
import { SeededRandom } from '../../src/base/random.js';
import type { BatonClient } from '../../src/client/index.js';
import {
  checkDurability,
  checkLinearizable,
  checkLockSafety,
  isKvRecord,
  pairHistory,
  type HistoryEvent,
  type OperationRecord,
  type KvOperation,
  type Verdict,
} from '../../src/check/index.js';
import { describeWindows, startMover, type MoveOutcome } from './cells-mover.js';
import { startCellsNemesis, type CellsFaultKind } from './cells-nemesis.js';
import { startCells } from './cells-setup.js';
import { checkNamespaceWatchers, startNamespaceWatchers, type NamespaceWatchers } from './cells-watch-run.js';
import type { WatchTeeth } from './cells-watcher.js';
import { MemoryFencingGuard } from '../../src/fencing/index.js';
import { faultClient, faultClientOptions, type ReadConsistency, type Recorder } from './kv-client.js';
import { lockLoop, lockName } from './lock-client.js';
import { NamespaceLeaseClient, historyLeaseId } from './namespace-lease-client.js';
import { clientLoop, finalReads } from './runner.js';

export interface CellsRunOptions {
  readonly timeS: number;
  readonly seed: bigint;
  readonly cellCount?: number;
  readonly clients?: number;
  readonly lockClients?: number;
  /** Keys per namespace. */
  readonly keys?: number;
  readonly kinds?: readonly CellsFaultKind[];
  /** `serializable`: the checker's self-test (stale reads from a cut-off member must be caught). */
  readonly reads?: ReadConsistency;
  readonly onHistory?: (events: readonly HistoryEvent[]) => void;
  /** The watch checker's self-test: one watcher loses (`drop`) or repeats (`dup`) one event. */
  readonly watchTeeth?: WatchTeeth;
  /** A namespace nested in another on the other cell (/faults/a/n/ in /faults/a/): each moves without the other. */
  readonly nested?: boolean;
}

export interface CellsRunSummary {
  readonly verdict: Verdict;
  readonly lines: string[];
  /** `moves 9 released, 0 aborted; windows p50 ..; violations 0`. */
  readonly result: string;
  readonly moves: readonly MoveOutcome[];
}

/** The namespaces, as key names under the kv workload's prefix (/faults/); `nested` adds a/n/ in a/. */
const flatNamespaces = ['a/', 'b/'] as const;
const withNested = ['a/', 'a/n/', 'b/'] as const;

export async function runCellsFaults(options: CellsRunOptions): Promise<CellsRunSummary> {
  const cellCount = options.cellCount ?? 2;
  const namespaces: readonly string[] = options.nested === true ? withNested : flatNamespaces;
  // A watch of a prefix with a namespace nested in it on another cell is refused (cross_cell): watchers watch the others.
  const leaves = namespaces.filter((ns) => nestedNamespaces(namespaces, ns).length === 0);
  const keys = namespaces.flatMap((ns) => Array.from({ length: options.keys ?? 3 }, (_, i) => `${ns}k${i}`));
  const lockPrefix = `/locks/${lockName}/`;
  const prefixes = [...namespaces.map((ns) => `/faults/${ns}`), lockPrefix];
  const setup = await startCells({ cellCount, prefixes });
  const started = performance.now();
  const events: HistoryEvent[] = [];
  const recorder: Recorder = { now: () => performance.now() - started, record: (e) => events.push(e) };
  const random = new SeededRandom(options.seed ^ 0x636c6965n);
  const clients: BatonClient[] = Array.from({ length: options.clients ?? 5 }, () =>
    faultClient([setup.router.url], () => random.uint32() / 2 ** 32, 1_500),
  );
  const lockClients = Array.from({ length: options.lockClients ?? 3 }, () =>
    new NamespaceLeaseClient(setup.router.url, lockPrefix, faultClientOptions([setup.router.url], () => random.uint32() / 2 ** 32, 1_500)),
  );
  const guard = new MemoryFencingGuard();
  let watchers: NamespaceWatchers[] = [];
  try {
    watchers = startNamespaceWatchers(setup, leaves, recorder.now, options.watchTeeth ?? 'none');
    const deadline = recorder.now() + options.timeS * 1_000;
    const nemesis = startCellsNemesis(setup, options.seed, recorder.now, options.kinds);
    const mover = startMover({
      controlUrls: () => setup.control.cell.clientUrls(),
      cellIds: [...setup.cells.keys()],
      prefixes,
      deadline,
      now: recorder.now,
      seed: options.seed,
    });
    await Promise.all([
      ...clients.map((client, process) =>
        clientLoop({ recorder, process, client, keys, deadline, seed: options.seed, reads: options.reads ?? 'linearizable' }),
      ),
      ...lockClients.map((client, i) => {
        const process = clients.length + 2 * i;
        return lockLoop({ recorder, process, renewProcess: process + 1, client, guard, deadline, seed: options.seed, leaseHistoryId: historyLeaseId });
      }),
    ]);
    await nemesis.stop();
    await mover.done;
    const finalValues = await finalReads(recorder, clients.length + 2 * lockClients.length, clients[0] as BatonClient, keys);
    options.onHistory?.(events);
    const all = pairHistory(events);
    const records = all.filter(isKvRecord);
    const lines = [`faults: ${[...nemesis.counts].map(([kind, n]) => `${kind}=${n}`).join(' ') || 'none'}`];
    const verdicts: Verdict[] = [];
    let violations = 0;
    for (const ns of namespaces) {
      const checked = checkNamespace(ns, namespaces, records, finalValues);
      lines.push(...checked.lines);
      verdicts.push(...checked.verdicts);
      violations += checked.violations;
    }
    const watched = await checkNamespaceWatchers(setup, watchers, records, finalValues);
    lines.push(...watched.lines);
    verdicts.push(...watched.verdicts);
    violations += watched.violations;
    const locks = checkLockSafety(all);
    const writes = all.filter((r) => r.operation.type === 'guarded-write' && r.status === 'ok');
    const rejected = writes.filter((r) => r.result?.type === 'guarded-write' && !r.result.accepted).length;
    const grants = all.filter((r) => r.operation.type === 'acquire' && r.status === 'ok').length;
    lines.push(`namespace ${lockPrefix}: locks ${locks.verdict} (${grants} grants, ${writes.length} fenced writes, ${rejected} stale ones rejected)`);
    for (const violation of locks.violations.slice(0, 10)) lines.push(`  ${violation.kind}: ${violation.message}`);
    verdicts.push(locks.verdict);
    violations += locks.violations.length;
    lines.push(...mover.outcomes.map((o) => `  ${o.startedMs.toFixed(0)}-${o.endedMs.toFixed(0)} ms: move ${o.prefix} -> ${o.to}: ${o.phase}${o.windowMs !== undefined ? ` (window ${o.windowMs} ms)` : ''}${o.error !== undefined ? ` ${o.error}` : ''}`));
    lines.push(...nemesis.log.map((line) => `  nemesis ${line}`));
    const count = (phase: string): number => mover.outcomes.filter((o) => o.phase === phase).length;
    const result =
      `moves ${count('released')} released, ${count('aborted')} aborted, ${count('refused') + count('unfinished')} refused or unfinished; ` +
      `write windows ${describeWindows(mover.outcomes)}; watch events checked ${watched.events}; violations ${violations}`;
    const verdict: Verdict = verdicts.includes('violation') ? 'violation' : verdicts.every((v) => v === 'ok') ? 'ok' : 'unknown';
    return { verdict, lines, result, moves: mover.outcomes };
  } finally {
    // Watchers first: with the cells gone they would only retry their connections.
    await Promise.all(watchers.flatMap((w) => w.watchers).map((w) => w.finish('', 0, 0)));
    await Promise.all([...clients, ...lockClients].map((client) => client.close()));
    await setup.close();
  }
}

/** The checkers over one namespace's keys: its history is one register space per key. */
function checkNamespace(
  ns: string,
  all: readonly string[],
  records: readonly OperationRecord<KvOperation>[],
  finalValues: ReadonlyMap<string, string | null>,
): { lines: string[]; verdicts: Verdict[]; violations: number } {
  // A key is the longest namespace's that starts it (a/n/k0 is a/n/'s, not a/'s).
  const nested = nestedNamespaces(all, ns);
  const owns = (key: string): boolean => isOwnKey(ns, nested, key);
  const mine = records.filter((r) => owns(r.operation.key));
  const finals = new Map([...finalValues].filter(([key]) => owns(key)));
  const linear = checkLinearizable(mine, { stepsMax: 20_000_000 });
  const durable = checkDurability({ records: mine, finalValues: finals });
  const ok = mine.filter((r) => r.status === 'ok').length;
  const lines = [
    `namespace /faults/${ns}: ${mine.length} operations (${ok} ok); linearizability ${linear.verdict} ` +
      `(${linear.keysChecked} keys, ${linear.steps} steps); durability ${durable.verdict} (${durable.keysChecked} keys, ${finals.size} final reads)`,
  ];
  for (const failure of linear.failures) lines.push(failure.explanation);
  if (linear.unknownKeys.length > 0) lines.push(`  unknown (budget): ${linear.unknownKeys.join(', ')}`);
  for (const violation of durable.violations) lines.push(`  ${violation.kind}: ${violation.message}`);
  const violations = linear.failures.length + durable.violations.length;
  return { lines, verdicts: [linear.verdict, durable.verdict], violations };
}
