// A fault run: a real 3-member cell behind fault proxies, concurrent clients doing reads, writes
// and CAS (as transactions) on a few keys while the nemesis kills, pauses and partitions
// members; then every fault heals, final reads are taken, and the history goes through the
// linearizability and durability checkers. The seed draws the client mix and the fault schedule;
// process scheduling still varies from run to run, so a seed names a scenario, not a replay.
import { performance } from 'node:perf_hooks';
import { SeededRandom, randomInt } from '../../src/base/random.js';
import {
  checkDurability,
  checkLinearizable,
  isKvRecord,
  pairHistory,
  type HistoryEvent,
  type KvOperation,
} from '../../src/check/index.js';
import { sleep, startTestCell } from '../cluster/harness.js';
import { keyPath, runOperation, type ReadConsistency, type Recorder } from './kv-client.js';
import { startNemesis, type FaultKind } from './nemesis.js';
import { checkRunWatches, type WatchVerdict } from './watch-verdict.js';
import { WatchSession } from './watch-client.js';

export interface FaultRunOptions {
  readonly timeS: number;
  readonly seed: bigint;
  readonly clients?: number;
  readonly keys?: number;
  readonly requestTimeoutMs?: number;
  /** Client reads; `serializable` is the checker's self-test (stale reads must be caught). */
  readonly reads?: ReadConsistency;
  /** Receives the raw event history, for saving next to a failure. */
  readonly onHistory?: (events: readonly HistoryEvent[]) => void;
}

export interface FaultRunSummary {
  readonly ok: boolean;
  /** `unknown` when a checker ran out of budget or a key had no final read. */
  readonly verdict: 'ok' | 'violation' | 'unknown';
  readonly lines: string[];
  readonly operations: number;
  readonly faults: ReadonlyMap<FaultKind, number>;
}

export async function runFaults(options: FaultRunOptions): Promise<FaultRunSummary> {
  const clients = options.clients ?? 5;
  const keyCount = options.keys ?? 3;
  const timeoutMs = options.requestTimeoutMs ?? 2_000;
  const reads = options.reads ?? 'linearizable';
  const keys = Array.from({ length: keyCount }, (_, i) => `k${i}`);
  const started = performance.now();
  const events: HistoryEvent[] = [];
  const recorder: Recorder = { now: () => performance.now() - started, record: (e) => events.push(e) };
  const cell = await startTestCell({ proxies: true });
  let watchers: WatchSession[] = [];
  try {
    const nemesis = startNemesis(cell, options.seed, recorder.now);
    const deadline = options.timeS * 1_000;
    const urls = cell.cell.clientUrls();
    watchers = urls.map((_, i) => new WatchSession(`w${i}`, urls, keyPath(''), i));
    const workers = Array.from({ length: clients }, (_, process) =>
      clientLoop({ recorder, process, urls, keys, deadline, timeoutMs, seed: options.seed, reads }),
    );
    await Promise.all(workers);
    await nemesis.stop();
    const finalValues = await finalReads(recorder, clients, urls, keys, timeoutMs);
    options.onHistory?.(events);
    const records = pairHistory(events).filter(isKvRecord);
    const linear = checkLinearizable(records, { stepsMax: 20_000_000 });
    const durable = checkDurability({ records, finalValues });
    const watch = await checkRunWatches(urls, watchers, records);
    const lines = summarize(records, nemesis.counts, linear, durable);
    lines.push(...watch.lines);
    lines.push(...nemesis.log.map((line) => `  nemesis ${line}`));
    const verdicts = [linear.verdict, durable.verdict, watch.verdict];
    const ok = verdicts.every((v) => v === 'ok');
    const violated = verdicts.includes('violation');
    const verdict = ok ? 'ok' : violated ? 'violation' : 'unknown';
    return { ok, verdict, lines, operations: records.length, faults: nemesis.counts };
  } finally {
    // Watchers first: with the cell gone they would only retry their connections.
    await Promise.all(watchers.map((w) => w.finish(0, 0)));
    await cell.close();
  }
}

interface ClientOptions {
  readonly recorder: Recorder;
  readonly process: number;
  readonly urls: readonly string[];
  readonly keys: readonly string[];
  readonly deadline: number;
  readonly timeoutMs: number;
  readonly seed: bigint;
  readonly reads: ReadConsistency;
}

async function clientLoop(options: ClientOptions): Promise<void> {
  const { recorder, process, urls, keys } = options;
  const random = new SeededRandom(options.seed * 1_000n + BigInt(process));
  // What this client last saw per key: CAS from it, so some swaps succeed.
  const seen = new Map<string, string | null>();
  for (let n = 0; n < 1_000_000 && recorder.now() < options.deadline; n++) {
    const key = keys[randomInt(random, 0, keys.length - 1)] as string;
    const url = urls[randomInt(random, 0, urls.length - 1)] as string;
    const value = `p${process}-${n}`;
    const roll = randomInt(random, 0, 99);
    const operation: KvOperation =
      roll < 45
        ? { type: 'read', key }
        : roll < 75
          ? { type: 'write', key, value }
          : { type: 'cas', key, expected: seen.get(key) ?? null, value };
    const outcome = await runOperation(recorder, process, url, operation, options.timeoutMs, options.reads);
    if (outcome.type === 'ok' && outcome.result.type === 'read') seen.set(key, outcome.result.value);
    if (outcome.type === 'ok' && operation.type === 'write') seen.set(key, operation.value);
    if (outcome.type === 'ok' && outcome.result.type === 'cas' && outcome.result.succeeded) {
      seen.set(key, operation.type === 'cas' ? operation.value : null);
    }
    // Refused connections answer at once: back off a little rather than spin.
    if (outcome.type !== 'ok') await sleep(randomInt(random, 20, 100));
  }
}

/** After healing: a linearizable read of every key, retried until one answers. */
async function finalReads(
  recorder: Recorder,
  process: number,
  urls: readonly string[],
  keys: readonly string[],
  timeoutMs: number,
): Promise<Map<string, string | null>> {
  const finals = new Map<string, string | null>();
  for (const key of keys) {
    for (let attempt = 0; attempt < 50 && !finals.has(key); attempt++) {
      const url = urls[attempt % urls.length] as string;
      const outcome = await runOperation(recorder, process, url, { type: 'read', key }, timeoutMs);
      if (outcome.type === 'ok' && outcome.result.type === 'read') finals.set(key, outcome.result.value);
      else await sleep(200);
    }
  }
  return finals;
}

function summarize(
  records: ReturnType<typeof pairHistory>,
  faults: ReadonlyMap<FaultKind, number>,
  linear: ReturnType<typeof checkLinearizable>,
  durable: ReturnType<typeof checkDurability>,
): string[] {
  const byStatus = { ok: 0, fail: 0, info: 0 };
  for (const record of records) byStatus[record.status] += 1;
  const faultText = [...faults].map(([kind, n]) => `${kind}=${n}`).join(' ') || 'none';
  const lines = [
    `operations: ${records.length} (ok ${byStatus.ok}, fail ${byStatus.fail}, info ${byStatus.info})`,
    `faults: ${faultText}`,
    `linearizability: ${linear.verdict} (${linear.keysChecked} keys, ${linear.steps} steps)`,
  ];
  for (const failure of linear.failures) lines.push(failure.explanation);
  if (linear.unknownKeys.length > 0) lines.push(`  unknown (budget): ${linear.unknownKeys.join(', ')}`);
  lines.push(`durability: ${durable.verdict} (${durable.keysChecked} keys)`);
  for (const violation of durable.violations) lines.push(`  ${violation.kind}: ${violation.message}`);
  return lines;
}
