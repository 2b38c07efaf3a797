// The five steps of the scale bench (issue 22), each against one `ScaleCell`, each returning its
// figures: load N keys in transactions; puts and linearizable gets with N keys held; restart a
// follower and replace a wiped one; back up the store under a put load; delete half the keys,
// compact and write the same volume again. The bench (bench/scale.bench.ts) runs them in order
// on Baton and on etcd and compares.
import { ClosedLoop, pacer, withRetries, type Lane, type LoopResult, type Step, type TimelineSecond } from './closed-loop.js';
import { closeEndpoints, openEndpoints, send, type Endpoint } from './http-client.js';
import { diskBytes, fileBytes, memoryOf, type MemoryFigures } from './host-stats.js';
import { benchKey, defaultKeyPrefix, runLoad, type LoadResult } from './load.js';
import { cpuSeconds } from './proc-cpu.js';
import { KeyBatches, scaleValue } from './scale-keys.js';
import { pollUntil, type BackupFigures, type ReplaceTimings, type ScaleCell } from './scale-cell.js';

export type Log = (line: string) => void;

export interface MemberFootprint {
  readonly name: string;
  readonly diskBytes: number;
  readonly storeFileBytes: number;
  readonly diskBytesPerKey: number;
  readonly memory: MemoryFigures;
}

export interface LoadFigures {
  readonly keys: number;
  readonly seconds: number;
  readonly keysPerSecond: number;
  readonly txnP50Ms: number;
  readonly txnP99Ms: number;
  readonly retries: Readonly<Record<string, number>>;
  readonly clientCpuCores: number;
  readonly clientCpuUsPerKey: number;
  readonly serverCpuCores: number;
  readonly serverCpuUsPerKey: number;
  readonly members: readonly MemberFootprint[];
}

/** Step 1: N keys in transactions of `batch` puts, `workers` transactions in flight. */
export async function loadKeys(cell: ScaleCell, options: { keys: number; batch: number; workers: number; log: Log }): Promise<LoadFigures> {
  const source = new KeyBatches(options.keys, options.batch);
  const cpuBefore = serverCpu(cell);
  const result = await runBatches(cell, { workers: options.workers, take: () => source.take(), kind: 'put', log: options.log, phase: 'load' });
  const serverSeconds = serverCpu(cell) - cpuBefore;
  const phase = result.phases[0];
  const items = result.totals['bulk']?.items ?? 0;
  return {
    keys: items,
    seconds: result.seconds,
    keysPerSecond: items / result.seconds,
    txnP50Ms: (phase?.latency.p50Us ?? 0) / 1000,
    txnP99Ms: (phase?.latency.p99Us ?? 0) / 1000,
    retries: result.errors,
    clientCpuCores: result.clientCpuCores,
    clientCpuUsPerKey: (result.clientCpuCores * result.seconds * 1e6) / items,
    serverCpuCores: serverSeconds / result.seconds,
    serverCpuUsPerKey: (serverSeconds * 1e6) / items,
    members: footprints(cell, options.keys),
  };
}

export function footprints(cell: ScaleCell, keys: number): MemberFootprint[] {
  return cell.names().map((name) => {
    const disk = diskBytes(cell.dataDir(name));
    return {
      name,
      diskBytes: disk,
      storeFileBytes: fileBytes(cell.storeFile(name)),
      diskBytesPerKey: disk / keys,
      memory: memoryOf(cell.pids(name)),
    };
  });
}

/**
 * Transactions from `take` until it runs dry (lane "bulk"), retried on overload, with progress
 * every 10 s; with `probe`, that many clients put single held keys beside them (lane "probe").
 */
async function runBatches(
  cell: ScaleCell,
  options: {
    workers: number; take: () => string[] | null; kind: 'put' | 'delete'; log: Log; phase: string; probe?: Probe;
    pace?: () => Promise<void>;
  },
): Promise<LoopResult> {
  let loop: ClosedLoop | null = null;
  let done = 0;
  const step = async (worker: number): Promise<number | null> => {
    const keys = options.take();
    if (keys === null) return null;
    await withRetries(() => (options.kind === 'put' ? cell.putTxn(keys, worker) : cell.deleteTxn(keys, worker)), {
      retryable: (error) => cell.retryable(error),
      onRetry: (reason) => loop?.countError('bulk', reason),
    });
    done += keys.length;
    return keys.length;
  };
  const bulk: Lane = { name: 'bulk', workers: options.workers, step, drives: true };
  const lanes: Lane[] = [options.pace === undefined ? bulk : { ...bulk, pace: options.pace }];
  const probe = options.probe;
  if (probe !== undefined) {
    lanes.push({ name: 'probe', workers: probe.clients, step: putStep(cell, probe.endpoints, probe.keys, 'probe', () => loop), drives: false });
  }
  loop = new ClosedLoop(lanes, options.phase);
  const began = performance.now();
  const progress = setInterval(() => {
    const seconds = (performance.now() - began) / 1000;
    options.log(`  ${cell.system} ${options.phase}: ${done} keys in ${seconds.toFixed(0)} s (${(done / seconds).toFixed(0)} keys/s)`);
  }, 10_000);
  try {
    return await loop.run();
  } finally {
    clearInterval(progress);
  }
}

/** Single puts beside a bulk load: what a client sees meanwhile. */
interface Probe { readonly clients: number; readonly endpoints: Endpoint[]; readonly keys: number }

function serverCpu(cell: ScaleCell): number {
  return cpuSeconds(cell.names().flatMap((name) => cell.pids(name)));
}

/** Step 2: one closed-loop workload at `clients` clients over the keys held (load.ts). */
export async function steadyLoad(
  cell: ScaleCell, options: { workload: 'put' | 'get-lin'; keys: number; clients: number; seconds: number },
): Promise<LoadResult> {
  let before = 0;
  let after = 0;
  const result = await runLoad({
    protocol: cell.protocol,
    endpoints: cell.clientUrls(),
    workload: options.workload,
    clients: options.clients,
    durationMs: options.seconds * 1000,
    warmupMs: 2000,
    keyCount: options.keys,
    valueBytes: scaleValue.length,
    requestTimeoutMs: 15_000,
    onWindow: (edge) => {
      if (edge === 'start') before = serverCpu(cell);
      else after = serverCpu(cell);
    },
  });
  const serverSeconds = after - before;
  result.serverCpuCores = serverSeconds / result.seconds;
  result.serverCpuUsPerOp = (serverSeconds * 1e6) / Math.max(1, result.completed);
  return result;
}

export interface RestartFigures {
  readonly member: string;
  readonly signal: string;
  readonly stopSeconds: number;
  /** From starting the process until `probe` said ready. */
  readonly readySeconds: number;
}

/** Step 3a: stop a follower with `signal`, start it again, time it to ready. */
export async function restartMember(
  cell: ScaleCell, options: { signal: NodeJS.Signals; timeoutMs: number },
): Promise<RestartFigures> {
  const member = await follower(cell);
  const stopping = performance.now();
  await cell.stopMember(member, options.signal);
  const stopSeconds = (performance.now() - stopping) / 1000;
  const started = performance.now();
  cell.startMember(member);
  await pollUntil(`${cell.system} ${member} ready after ${options.signal}`, options.timeoutMs, 50, async () =>
    (await cell.probe(member)) === 'ready' ? true : null, () => cell.tail(member));
  return { member, signal: options.signal, stopSeconds, readySeconds: (performance.now() - started) / 1000 };
}

/** Step 3b: a wiped follower removed, added back as a learner, caught up and promoted. */
export async function replaceMember(cell: ScaleCell, log: Log): Promise<ReplaceTimings & { member: string }> {
  const member = await follower(cell);
  await cell.stopMember(member, 'SIGTERM');
  const timings = await cell.replaceMember(member, (step) => log(`  ${cell.system}: ${step}`));
  return { member, ...timings };
}

export async function follower(cell: ScaleCell): Promise<string> {
  const leader = await cell.leader();
  const name = cell.names().find((n) => n !== leader);
  if (name === undefined) throw new Error('no follower');
  return name;
}

export interface BackupStepFigures extends BackupFigures {
  readonly via: string;
  readonly before: { readonly putsPerSecond: number; readonly p50Ms: number; readonly p99Ms: number; readonly seconds: number };
  readonly during: { readonly putsPerSecond: number; readonly p50Ms: number; readonly p99Ms: number; readonly seconds: number };
  readonly p99Ratio: number;
  readonly errors: Readonly<Record<string, number>>;
}

/** Step 4: puts at `clients` for `seconds`, then a backup from a follower while they go on. */
export async function backupUnderLoad(
  cell: ScaleCell, options: { keys: number; clients: number; seconds: number; file: string; log: Log },
): Promise<BackupStepFigures> {
  const via = await follower(cell);
  const endpoints = openEndpoints(cell.clientUrls(), options.clients);
  const lane: Lane = { name: 'put', workers: options.clients, step: putStep(cell, endpoints, options.keys, 'put', () => loop), drives: false };
  const loop: ClosedLoop = new ClosedLoop([lane], 'warm-up');
  const running = loop.run();
  try {
    await sleepMs(2000);
    loop.mark('before');
    await sleepMs(options.seconds * 1000);
    loop.mark('during');
    options.log(`  ${cell.system}: backup from ${via} while ${options.clients} clients put`);
    const backup = await cell.backup(options.file, via);
    loop.mark('after');
    loop.stop();
    const result = await running;
    const figures = (name: string) => {
      const phase = result.phases.find((p) => p.phase === name && p.lane === 'put');
      return {
        putsPerSecond: phase?.itemsPerSecond ?? 0,
        p50Ms: (phase?.latency.p50Us ?? 0) / 1000,
        p99Ms: (phase?.latency.p99Us ?? 0) / 1000,
        seconds: phase?.seconds ?? 0,
      };
    };
    const before = figures('before');
    const during = figures('during');
    return { ...backup, via, before, during, p99Ratio: during.p99Ms / before.p99Ms, errors: result.errors };
  } finally {
    loop.stop();
    await running.catch(() => undefined);
    closeEndpoints(endpoints);
  }
}

/** One put of a random held key per step (the put workload of load.ts, same spelling). */
function putStep(cell: ScaleCell, endpoints: Endpoint[], keys: number, lane: string, loop: () => ClosedLoop | null): Step {
  let seed = 0x2545f491;
  return async (worker) => {
    seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0;
    const spec = cell.protocol.put(benchKey(defaultKeyPrefix, seed % keys), scaleValue);
    const endpoint = endpoints[worker % endpoints.length] as Endpoint;
    try {
      const answer = await send(endpoint, spec, false, 15_000);
      if (answer.status >= 200 && answer.status < 300) return 1;
      loop()?.countError(lane, String(answer.status));
    } catch (error) {
      loop()?.countError(lane, (error as Error).message.slice(0, 40));
      await sleepMs(20);
    }
    return 0;
  };
}

export interface ProbeFigures {
  readonly putsPerSecond: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

export interface ChurnFigures {
  readonly deleted: number;
  readonly deleteSeconds: number;
  readonly deleteKeysPerSecond: number;
  readonly compactRevision: number;
  readonly compactSeconds: number;
  readonly compactNote: string;
  /** The rewrite's offered rate (keys/s) and what it achieved. */
  readonly rewriteOfferedKeysPerSecond: number;
  readonly rewritten: number;
  readonly rewriteSeconds: number;
  readonly rewriteKeysPerSecond: number;
  /** Per member: the store file before the deletes, after them, after the rewrite; growth. */
  readonly files: readonly { name: string; beforeBytes: number; afterDeleteBytes: number; afterBytes: number; growth: number; diskAfterBytes: number }[];
  readonly probeClients: number;
  /** The single puts beside everything else, in each phase. */
  readonly probe: { readonly delete: ProbeFigures; readonly compact: ProbeFigures; readonly rewrite: ProbeFigures };
  readonly timeline: readonly TimelineSecond[];
  /** Over the compaction and the paced rewrite (the deletes saturate the cell on purpose). */
  readonly pausesOver100Ms: number;
  readonly longestGapMs: number;
  readonly worstTxnMs: number;
  readonly worstProbeMs: number;
  /** Seconds of the rewrite (but its last) that wrote under half the offered rate. */
  readonly secondsUnderHalfRate: number;
  readonly retries: Readonly<Record<string, number>>;
  readonly shrink?: { seconds: number; note: string; member: string; fileBytes: number };
}

/**
 * Step 5: delete every other key (half) as fast as the cell takes it, compact at the revision
 * after the deletes (awaited: etcd answers once its backend is compacted, Baton at once, its
 * history then deleted by later entries), then put the same keys again at an offered rate
 * (`rewriteKeysPerSecond`, below what the cell can take, so a stall shows as one). Meanwhile
 * `probeClients` put single keys all along. The store files before and after, a per-second
 * timeline (keys/s, longest txn, the probe's puts and longest put, the longest time in which
 * nothing at all completed), and its pauses over the compaction and the rewrite.
 */
export async function churn(
  cell: ScaleCell,
  options: { keys: number; batch: number; workers: number; probeClients: number; rewriteKeysPerSecond: number; log: Log },
): Promise<ChurnFigures> {
  const before = new Map(cell.names().map((name) => [name, fileBytes(cell.storeFile(name))]));
  const endpoints = openEndpoints(cell.clientUrls(), options.probeClients);
  const probe = { clients: options.probeClients, endpoints, keys: options.keys };
  try {
    const deletes = new KeyBatches(options.keys, options.batch, 0, 2);
    const deleted = await runBatches(cell, { workers: options.workers, take: () => deletes.take(), kind: 'delete', log: options.log, phase: 'delete', probe });
    const afterDelete = new Map(cell.names().map((name) => [name, fileBytes(cell.storeFile(name))]));
    const compactRevision = await cell.revision();
    const compacted = await compactWithProbe(cell, compactRevision, probe);
    const rewrites = new KeyBatches(options.keys, options.batch, 0, 2);
    const pace = pacer((1000 * options.batch) / options.rewriteKeysPerSecond);
    const rewritten = await runBatches(cell, { workers: options.workers, take: () => rewrites.take(), kind: 'put', log: options.log, phase: 'rewrite', probe, pace });
    const files = cell.names().map((name) => {
      const beforeBytes = before.get(name) ?? 0;
      const afterBytes = fileBytes(cell.storeFile(name));
      return {
        name, beforeBytes, afterDeleteBytes: afterDelete.get(name) ?? 0, afterBytes,
        growth: afterBytes / beforeBytes - 1, diskAfterBytes: diskBytes(cell.dataDir(name)),
      };
    });
    const timeline = joinTimelines([deleted.timeline, compacted.loop.timeline, rewritten.timeline]);
    const watched = timeline.filter((s) => s.phase !== 'delete');
    const laneMax = (lane: string) => Math.max(0, ...watched.map((s) => s.lanes[lane]?.maxLatencyMs ?? 0));
    const rewriteSeconds = timeline.filter((s) => s.phase === 'rewrite').slice(0, -1);
    const halfRate = options.rewriteKeysPerSecond / 2;
    const deletedKeys = deleted.totals['bulk']?.items ?? 0;
    const rewrittenKeys = rewritten.totals['bulk']?.items ?? 0;
    return {
      deleted: deletedKeys,
      deleteSeconds: deleted.seconds,
      deleteKeysPerSecond: deletedKeys / deleted.seconds,
      compactRevision,
      compactSeconds: compacted.seconds,
      compactNote: cell.compactNote,
      rewriteOfferedKeysPerSecond: options.rewriteKeysPerSecond,
      rewritten: rewrittenKeys,
      rewriteSeconds: rewritten.seconds,
      rewriteKeysPerSecond: rewrittenKeys / rewritten.seconds,
      files,
      probeClients: options.probeClients,
      probe: { delete: probeFigures(deleted), compact: probeFigures(compacted.loop), rewrite: probeFigures(rewritten) },
      timeline,
      pausesOver100Ms: watched.filter((s) => s.longestGapMs > 100).length,
      longestGapMs: Math.max(0, ...watched.map((s) => s.longestGapMs)),
      worstTxnMs: laneMax('bulk'),
      worstProbeMs: laneMax('probe'),
      secondsUnderHalfRate: rewriteSeconds.filter((s) => (s.lanes['bulk']?.items ?? 0) < halfRate).length,
      retries: { ...prefixKeys('delete ', deleted.errors), ...prefixKeys('compact ', compacted.loop.errors), ...prefixKeys('rewrite ', rewritten.errors) },
    };
  } finally {
    closeEndpoints(endpoints);
  }
}

/** The compaction call, timed, with the probe's puts running until it answers. */
async function compactWithProbe(cell: ScaleCell, revision: number, probe: Probe): Promise<{ seconds: number; loop: LoopResult }> {
  let loop: ClosedLoop | null = null;
  loop = new ClosedLoop([{
    name: 'probe', workers: probe.clients, step: putStep(cell, probe.endpoints, probe.keys, 'probe', () => loop), drives: false,
  }], 'compact');
  const running = loop.run();
  const started = performance.now();
  try {
    await cell.compact(revision);
    return { seconds: (performance.now() - started) / 1000, loop: await stopped(loop, running) };
  } catch (error) {
    await stopped(loop, running);
    throw error;
  }
}

async function stopped(loop: ClosedLoop, running: Promise<LoopResult>): Promise<LoopResult> {
  loop.stop();
  return running;
}

function joinTimelines(parts: readonly (readonly TimelineSecond[])[]): TimelineSecond[] {
  const out: TimelineSecond[] = [];
  for (const part of parts) out.push(...part.map((s) => ({ ...s, second: s.second + out.length })));
  return out;
}

function probeFigures(result: LoopResult): ProbeFigures {
  const phase = result.phases.find((p) => p.lane === 'probe');
  return {
    putsPerSecond: phase?.itemsPerSecond ?? 0,
    p99Ms: (phase?.latency.p99Us ?? 0) / 1000,
    maxMs: (phase?.latency.maxUs ?? 0) / 1000,
  };
}

function prefixKeys(prefix: string, record: Readonly<Record<string, number>>): Record<string, number> {
  return Object.fromEntries(Object.entries(record).map(([k, v]) => [`${prefix}${k}`, v]));
}

function sleepMs(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
