// Space freed by deletes and compaction is reused (issue 22): on a real MvccStore over a real
// LmdbEngine (deferred commits and checkpoints, as a node has them), load N keys (32-byte keys,
// 256-byte values),
// then for each cycle: delete half the live keys, compact at the last revision (its bounded steps
// ride on the entries that follow: here empty ones, in batches, until the history below it is
// gone), and write the same volume again under new names. Reports the data file's size after each
// phase and every apply batch's time: with no stop-the-world defrag and no NOSPACE state, each
// rewrite must fit in the space the deletes and the compaction freed, later cycles must not grow
// the file, and no batch may pause apply for long. Used by `npm run bench:bytes -- --reuse` and
// by test/unit/storage/space-reuse.test.ts.
//
// Checkpoints matter here: a checkpoint pins its tree, so LMDB reuses a page freed after it only
// once the next checkpoint is durable (storage/checkpointer.ts). Without checkpoints nothing freed
// is ever reused (measured: 100K keys took 2.1 GB after the load, 6.5 GB after two cycles).
import { statSync } from 'node:fs';
import { EntryType, type Entry } from '../src/raft/types.js';
import { MvccStore, defaultMvccLimits, encodeCommand, type Command } from '../src/mvcc/index.js';
import { LmdbEngine } from '../src/storage/index.js';
import { checkpointEntriesMax } from '../src/base/limits.js';

export interface SpaceReuseOptions {
  /** A directory of its own for the store (created). */
  readonly directory: string;
  readonly keyCount: number;
  /** Entries per apply batch (one LMDB write transaction each, like a node's Ready). */
  readonly batchEntries: number;
  /** Delete-compact-rewrite cycles after the load (default 1). */
  readonly cycles?: number;
  readonly keyBytes?: number;
  readonly valueBytes?: number;
  /** The store's compaction step (MvccLimits.compactEventsPerEntryMax); default the store's. */
  readonly compactEventsPerEntryMax?: number;
  /**
   * When to checkpoint. `entries` (default, every 500: a node's 100 ms --checkpoint-ms at the
   * 5,000 writes/s the proposal times model): waiting for each, so every run gives the same
   * figures. `interval`: as a node does, every `ms` or 50,000 entries without waiting, the event
   * loop turning between batches; its figures depend on the machine (apply here runs faster than
   * a cell commits, and a slow fdatasync keeps more pages pinned).
   */
  readonly checkpoints?: { readonly type: 'interval'; readonly ms: number } | { readonly type: 'entries'; readonly entries: number };
}

export interface SpaceFigures {
  readonly fileBytes: number;
  /** LMDB's pages up to the last one used (the file never needs to be larger). */
  readonly usedBytes: number;
  readonly liveKeys: number;
}

export interface CycleFigures {
  readonly afterDelete: SpaceFigures;
  readonly afterCompaction: SpaceFigures;
  readonly afterRewrite: SpaceFigures;
  /** Entries that carried the compaction's steps. */
  readonly compactionEntries: number;
  /** afterRewrite / afterCompaction file bytes: did the rewrite fit in the freed space? */
  readonly rewriteGrowth: number;
}

export interface SpaceReuseResult {
  readonly afterLoad: SpaceFigures;
  readonly cycles: readonly CycleFigures[];
  /** The largest rewriteGrowth of any cycle. */
  readonly rewriteGrowthMax: number;
  /** The last cycle's end / the first cycle's end, file bytes (1: no growth after the first). */
  readonly steadyGrowth: number;
  /** The end / after the load, file bytes (the deletes' own history and compaction's peak are in it). */
  readonly loadGrowth: number;
  readonly batches: number;
  readonly batchMsMax: number;
  readonly batchMsP99: number;
  /** The phase of the longest batch, and the longest of each phase. */
  readonly batchMsMaxPhase: string;
  readonly batchMsMaxByPhase: Readonly<Record<string, number>>;
  /**
   * The most CPU one batch took (user + system, this process): on a shared machine the wall
   * time includes waiting for a core; this is what the batch itself costs.
   */
  readonly batchCpuMsMax: number;
  readonly batchCpuMsMaxPhase: string;
  readonly batchCpuMsMaxByPhase: Readonly<Record<string, number>>;
  /** Whether history below the compact revision remains at the end (false: compaction finished). */
  readonly compactionPending: boolean;
  readonly checkpoints: number;
  readonly seconds: number;
}

const defaultCheckpoints = { type: 'entries', entries: 500 } as const;

interface BatchTiming {
  readonly ms: number;
  readonly cpuMs: number;
  readonly phase: string;
}

export async function measureSpaceReuse(options: SpaceReuseOptions): Promise<SpaceReuseResult> {
  const started = performance.now();
  const engine = LmdbEngine.open({ directory: options.directory, commits: 'deferred' });
  const step = options.compactEventsPerEntryMax ?? defaultMvccLimits.compactEventsPerEntryMax;
  const store = new MvccStore(engine, { ...defaultMvccLimits, compactEventsPerEntryMax: step });
  const writer = new BatchWriter(store, engine, options.batchEntries, options.checkpoints ?? defaultCheckpoints);
  const value = new Uint8Array(options.valueBytes ?? 256);
  for (let i = 0; i < value.length; i++) value[i] = (i * 31 + 7) & 0xff;
  const keyOf = (generation: number, i: number): string => keyName(generation, i, options.keyBytes ?? 32);
  let live: string[] = [];
  const figures = (): SpaceFigures => {
    const env = engine.stats().env;
    const usedBytes = ((env['lastPageNumber'] as number) + 1) * (env['pageSize'] as number);
    return { fileBytes: statSync(engine.path).size, usedBytes, liveKeys: live.length };
  };
  try {
    for (let i = 0; i < options.keyCount; i++) live.push(keyOf(0, i));
    for (const key of live) await writer.add({ type: 'put', key, value }, 'load');
    await writer.flush('load');
    const afterLoad = figures();
    const cycles: CycleFigures[] = [];
    for (let cycle = 1; cycle <= (options.cycles ?? 1); cycle++) {
      const doomed = live.filter((_, i) => i % 2 === 0);
      live = live.filter((_, i) => i % 2 === 1);
      for (const key of doomed) await writer.add({ type: 'delete', key }, 'delete');
      await writer.flush('delete');
      const afterDelete = figures();
      const compactionEntries = await writer.compact();
      const afterCompaction = figures();
      const fresh = doomed.map((_, i) => keyOf(cycle, i));
      for (const key of fresh) await writer.add({ type: 'put', key, value }, 'rewrite');
      await writer.flush('rewrite');
      live.push(...fresh);
      const afterRewrite = figures();
      const rewriteGrowth = afterRewrite.fileBytes / afterCompaction.fileBytes;
      cycles.push({ afterDelete, afterCompaction, afterRewrite, compactionEntries, rewriteGrowth });
    }
    const end = (cycles.at(-1) as CycleFigures).afterRewrite;
    return {
      afterLoad,
      cycles,
      rewriteGrowthMax: Math.max(...cycles.map((c) => c.rewriteGrowth)),
      steadyGrowth: end.fileBytes / (cycles[0] as CycleFigures).afterRewrite.fileBytes,
      loadGrowth: end.fileBytes / afterLoad.fileBytes,
      ...pauses(writer.timings),
      compactionPending: store.compactionPending(),
      checkpoints: writer.checkpointCount,
      seconds: (performance.now() - started) / 1000,
    };
  } finally {
    await engine.close();
  }
}

/**
 * Frames commands as committed entries and applies them `batchEntries` at a time, timing each
 * batch, and checkpoints the store between batches.
 */
class BatchWriter {
  readonly timings: BatchTiming[] = [];
  checkpointCount = 0;
  private index: number;
  private pending: Entry[] = [];
  private entriesSinceCheckpoint = 0;
  private lastCheckpointMs = performance.now();
  private running: Promise<void> | null = null;

  constructor(
    private readonly store: MvccStore,
    private readonly engine: LmdbEngine,
    private readonly batchEntries: number,
    private readonly checkpoints: NonNullable<SpaceReuseOptions['checkpoints']>,
  ) {
    this.index = store.appliedIndex + 1;
  }

  async add(op: Command, phase: string): Promise<void> {
    // Proposal times 0.2 ms apart (5,000 writes/s), as the bytes bench.
    const envelope = { proposedAtMs: 1_700_000_000_000 + Math.floor(this.index / 5), source: 1, op };
    const data = encodeCommand(envelope, defaultMvccLimits);
    await this.push({ index: this.index++, term: 1, type: EntryType.normal, data }, phase);
  }

  /** Compacts at the last revision, then applies empty entries until the history below it is gone. */
  async compact(): Promise<number> {
    await this.add({ type: 'compact', revision: this.store.revision }, 'compaction');
    await this.flush('compaction');
    const from = this.index - 1;
    while (this.store.compactionPending()) {
      for (let i = 0; i < this.batchEntries; i++) {
        await this.push({ index: this.index++, term: 1, type: EntryType.normal, data: new Uint8Array(0) }, 'compaction');
      }
    }
    return this.index - from;
  }

  async flush(phase: string): Promise<void> {
    if (this.pending.length === 0) return;
    const startedMs = performance.now();
    const startedCpu = process.cpuUsage();
    this.store.applyBatch(this.pending);
    const cpu = process.cpuUsage(startedCpu);
    this.timings.push({ ms: performance.now() - startedMs, cpuMs: (cpu.user + cpu.system) / 1000, phase });
    this.entriesSinceCheckpoint += this.pending.length;
    this.pending = [];
    await this.maybeCheckpoint();
  }

  private async push(entry: Entry, phase: string): Promise<void> {
    this.pending.push(entry);
    if (this.pending.length >= this.batchEntries) await this.flush(phase);
  }

  private async maybeCheckpoint(): Promise<void> {
    const policy = this.checkpoints;
    if (policy.type === 'entries') {
      if (this.entriesSinceCheckpoint < policy.entries) return;
      this.entriesSinceCheckpoint = 0;
      this.checkpointCount++;
      await this.engine.checkpoint();
      return;
    }
    const nowMs = performance.now();
    const due = nowMs - this.lastCheckpointMs >= policy.ms || this.entriesSinceCheckpoint >= checkpointEntriesMax;
    if (this.running === null && due) {
      this.lastCheckpointMs = nowMs;
      this.entriesSinceCheckpoint = 0;
      this.checkpointCount++;
      this.running = this.engine.checkpoint().finally(() => (this.running = null));
    }
    // The checkpoint's fdatasync and record complete on the event loop, as in a node.
    await new Promise((resolve) => setImmediate(resolve));
  }
}

function pauses(timings: readonly BatchTiming[]) {
  const sorted = timings.map((t) => t.ms).sort((a, b) => a - b);
  const longest = timings.reduce((a, b) => (b.ms > a.ms ? b : a));
  const costliest = timings.reduce((a, b) => (b.cpuMs > a.cpuMs ? b : a));
  const phases = [...new Set(timings.map((t) => t.phase))];
  const byPhase = (field: 'ms' | 'cpuMs'): Record<string, number> => Object.fromEntries(phases.map((phase) =>
    [phase, Math.max(...timings.filter((t) => t.phase === phase).map((t) => t[field]))]));
  return {
    batches: timings.length,
    batchMsMax: longest.ms,
    batchMsP99: sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))] as number,
    batchMsMaxPhase: longest.phase,
    batchMsMaxByPhase: byPhase('ms'),
    batchCpuMsMax: costliest.cpuMs,
    batchCpuMsMaxPhase: costliest.phase,
    batchCpuMsMaxByPhase: byPhase('cpuMs'),
  };
}

/** `/reuse/<generation>/` and 8 hex digits in an order unrelated to `i`, padded to `bytes`. */
function keyName(generation: number, i: number, bytes: number): string {
  const hex = (Math.imul(i + 1, 0x9e3779b1) >>> 0).toString(16).padStart(8, '0');
  return `/reuse/${generation}/${hex}`.padEnd(bytes, '-');
}

export function printSpaceReuse(result: SpaceReuseResult, options: SpaceReuseOptions): void {
  const mib = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(1)} MiB`.padStart(10);
  const percent = (ratio: number): string => `${((ratio - 1) * 100).toFixed(1)}%`;
  const line = (name: string, f: SpaceFigures): string =>
    `${name.padEnd(40)} file ${mib(f.fileBytes)}  used pages ${mib(f.usedBytes)}  live keys ${f.liveKeys}`;
  console.log(`space reuse: ${options.keyCount} keys (${options.keyBytes ?? 32}-byte keys, ${options.valueBytes ?? 256}-byte values), ` +
    `${options.batchEntries} entries per apply batch, compaction step ` +
    `${options.compactEventsPerEntryMax ?? defaultMvccLimits.compactEventsPerEntryMax} events per entry, ` +
    `checkpoints ${checkpointsText(options)} (${result.checkpoints} taken), node ${process.version}`);
  console.log(line('after the load', result.afterLoad));
  result.cycles.forEach((cycle, i) => {
    console.log(line(`cycle ${i + 1}: after deleting half`, cycle.afterDelete));
    console.log(line(`cycle ${i + 1}: after compaction (${cycle.compactionEntries} entries)`, cycle.afterCompaction));
    console.log(line(`cycle ${i + 1}: after writing half again`, cycle.afterRewrite));
  });
  console.log(`file growth while writing the freed volume again: at most ${percent(result.rewriteGrowthMax)} (limit 10%); ` +
    `after the first cycle ${percent(result.steadyGrowth)}; since the load ${percent(result.loadGrowth)}` +
    `${result.compactionPending ? '; compaction still pending' : ''}`);
  console.log(`apply batches ${result.batches}: longest ${result.batchMsMax.toFixed(1)} ms (${result.batchMsMaxPhase}; limit 100 ms), ` +
    `p99 ${result.batchMsP99.toFixed(1)} ms; most CPU in one batch ${result.batchCpuMsMax.toFixed(1)} ms ` +
    `(${result.batchCpuMsMaxPhase}); ${result.seconds.toFixed(1)} s in all`);
  const phases = (figures: Readonly<Record<string, number>>): string =>
    Object.entries(figures).map(([phase, ms]) => `${phase} ${ms.toFixed(1)} ms`).join(', ');
  console.log(`longest batch by phase: ${phases(result.batchMsMaxByPhase)}; CPU: ${phases(result.batchCpuMsMaxByPhase)}`);
}

function checkpointsText(options: SpaceReuseOptions): string {
  const policy = options.checkpoints ?? defaultCheckpoints;
  return policy.type === 'interval'
    ? `every ${policy.ms} ms or ${checkpointEntriesMax} entries`
    : `every ${policy.entries} entries, each awaited`;
}
