// The state machine's side of a lock queue: W contenders queued on one lock name (one seqCreate
// entry each, applied one entry per batch as a busy leader would), then a seqCheck by the last
// contender and a release/re-check cycle at the head. Each create reads the contender's place
// (owner and predecessor) in the same step, so this measures how that read grows with the queue;
// "head read" is a limit-1 read of the queue's prefix (it counts the whole queue).
// In process, on LMDB (deferred commits, as a node runs) and on the in-memory engine; medians
// of --runs runs.
//
//   node dist/bench/seq-queue.bench.js                     1,000 and 10,000 waiters, 3 runs
// Flags: --waiters 1000,10000 --runs N --engine lmdb,memory
//        --prefill: all but the last 100 contenders are written as plain puts of the same keys (the
//        same state, built in linear time): only the per-operation figures, no queue time
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { MemoryEngine, MvccStore, defaultMvccLimits, encodeCommand, type Command, type KvEngine } from '../src/mvcc/index.js';
import { EntryType } from '../src/raft/types.js';
import { LmdbEngine } from '../src/storage/index.js';

const { values } = parseArgs({
  options: {
    waiters: { type: 'string', default: '1000,10000' },
    runs: { type: 'string', default: '3' },
    engine: { type: 'string', default: 'lmdb,memory' },
    prefill: { type: 'boolean', default: false },
  },
  strict: true,
});
const waiterCounts = values.waiters.split(',').map(Number);
if (!waiterCounts.every((n) => Number.isInteger(n) && n >= 1 && n <= 100_000)) {
  throw new Error('--waiters takes integers in [1, 100000], comma-separated');
}
const runs = Number(values.runs);
const engines = values.engine.split(',') as ('lmdb' | 'memory')[];
const root = mkdtempSync(join(tmpdir(), 'baton-seq-bench-'));
const prefix = '/locks/bench/';
const value = new TextEncoder().encode('holder');

function median(samples: readonly number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

class Applier {
  private index = 0;
  constructor(readonly store: MvccStore) {
    this.index = store.appliedIndex;
  }
  apply(op: Command): unknown {
    this.index++;
    const data = encodeCommand({ proposedAtMs: 1_000 + this.index, op }, defaultMvccLimits);
    const [outcome] = this.store.applyBatch([{ index: this.index, term: 1, type: EntryType.normal, data }]);
    if (outcome?.type !== 'applied') throw new Error(`${op.type} failed: ${JSON.stringify(outcome)}`);
    return outcome.result;
  }
}

interface RunFigures {
  queueMs: number;
  lastHundredCreateUs: number;
  checkLastUs: number;
  handoffUs: number;
  headReadUs: number;
}

function oneRun(engine: KvEngine, waiters: number): RunFigures {
  const applier = new Applier(new MvccStore(engine));
  const lease = (applier.apply({ type: 'leaseGrant', ttlMs: 3_600_000 }) as { id: number }).id;
  const keys: string[] = [];
  const started = performance.now();
  let lastHundredStarted = started;
  const measuredFrom = waiters - Math.min(100, waiters);
  for (let i = 0; i < waiters; i++) {
    if (i === measuredFrom) lastHundredStarted = performance.now();
    if (values.prefill && i < measuredFrom) {
      const key = `${prefix}${String(applier.store.revision + 1).padStart(12, '0')}`;
      applier.apply({ type: 'put', key, value, lease });
      keys.push(key);
      continue;
    }
    const result = applier.apply({ type: 'seqCreate', prefix, value, lease, ifEmpty: false }) as { kv: { key: string } };
    keys.push(result.kv.key);
  }
  const ended = performance.now();
  const last = keys[keys.length - 1] as string;
  const checkStarted = performance.now();
  const checks = 100;
  for (let i = 0; i < checks; i++) applier.apply({ type: 'seqCheck', prefix, key: last, lease });
  const checkEnded = performance.now();
  // Hand-offs at the head: the owner releases, the next one checks (is granted).
  const handoffs = Math.min(100, waiters - 1);
  const handoffStarted = performance.now();
  for (let i = 0; i < handoffs; i++) {
    applier.apply({ type: 'seqRelease', prefix, key: keys[i] as string });
    applier.apply({ type: 'seqCheck', prefix, key: keys[i + 1] as string, lease });
  }
  const handoffEnded = performance.now();
  // What a waiting node reads at each hand-off to see whether it now owns (src/lock/queue.ts's
  // ownsInAppliedState): the first key under the prefix, whose answer also counts the whole queue.
  const headReads = 100;
  const headStarted = performance.now();
  for (let i = 0; i < headReads; i++) applier.store.range({ type: 'get', key: prefix, prefix: true, limit: 1 });
  const headEnded = performance.now();
  return {
    queueMs: values.prefill ? Number.NaN : ended - started,
    lastHundredCreateUs: ((ended - lastHundredStarted) * 1000) / Math.min(100, waiters),
    checkLastUs: ((checkEnded - checkStarted) * 1000) / checks,
    handoffUs: handoffs === 0 ? 0 : ((handoffEnded - handoffStarted) * 1000) / handoffs,
    headReadUs: ((headEnded - headStarted) * 1000) / headReads,
  };
}

let directories = 0;
function freshEngine(kind: 'lmdb' | 'memory'): { engine: KvEngine; close(): Promise<void> } {
  if (kind === 'memory') return { engine: new MemoryEngine(), close: async () => {} };
  const directory = join(root, `db-${directories++}`);
  const engine = LmdbEngine.open({ directory, commits: 'deferred' });
  return {
    engine,
    close: async () => {
      await engine.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

try {
  console.log('engine  waiters  queue ms  create us (last 100)  check last us  release+check us  head read us');
  for (const kind of engines) {
    for (const waiters of waiterCounts) {
      const figures: RunFigures[] = [];
      for (let run = 0; run < runs; run++) {
        const { engine, close } = freshEngine(kind);
        try {
          figures.push(oneRun(engine, waiters));
        } finally {
          await close();
        }
      }
      const m = (pick: (f: RunFigures) => number): string => median(figures.map(pick)).toFixed(1);
      console.log(
        `${kind.padEnd(7)} ${String(waiters).padStart(7)} ${m((f) => f.queueMs).padStart(9)} ` +
          `${m((f) => f.lastHundredCreateUs).padStart(21)} ${m((f) => f.checkLastUs).padStart(14)} ` +
          `${m((f) => f.handoffUs).padStart(17)} ${m((f) => f.headReadUs).padStart(13)}`,
      );
    }
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}
