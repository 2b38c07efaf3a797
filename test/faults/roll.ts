// A rolling restart (or upgrade) under load, as docs/deploy.md tells an operator to do it: one
// member at a time; wait until the cell is healthy (every member ready, the leader in contact
// with all); move leadership off the member if it leads; SIGTERM it and wait for its exit; start
// it again (on another build for an upgrade) and wait for health before the next. Meanwhile kv
// clients (reads, writes, CAS) and lock workers with fenced writes run through the client
// library, as in a fault run, and a poller follows every member's view of the leader and term.
// Then the history goes through the linearizability, durability and lock-safety checkers. What
// a user sees is summed up: operations that failed after the client's retries, leader changes
// per restarted member, and latency during the roll against the steady state before it.
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { SeededRandom, randomInt } from '../../src/base/random.js';
import { BatonClient } from '../../src/client/index.js';
import {
  checkDurability,
  checkLinearizable,
  checkLockSafety,
  isKvRecord,
  pairHistory,
  type HistoryEvent,
  type KvOperation,
  type OperationRecord,
  type Verdict,
} from '../../src/check/index.js';
import { MemoryFencingGuard } from '../../src/fencing/index.js';
import { http, sleep, startTestCell } from '../cluster/harness.js';
import { runKvOperation, type Recorder } from './kv-client.js';
import { lockLoop } from './lock-client.js';
import { finalReads } from './runner.js';

export interface RollStep {
  /** The member restarted. */
  readonly name: string;
  /** The CLI it runs after the restart (the same one: a restart; another build: an upgrade). */
  readonly cli: string;
}

/** The processes of a cell, wherever they run (loopback ports, or network namespaces). */
export interface RollCell {
  readonly names: readonly string[];
  clientUrl(name: string): string;
  isRunning(name: string): boolean;
  signal(name: string, signal: NodeJS.Signals): void;
  /** Resolves with the exit code (or the signal's name). */
  waitExit(name: string, timeoutMs: number): Promise<number | string>;
  /** Starts `name` again on its data directory, running `cli`. */
  start(name: string, cli: string): void;
  /** Until each of `names` answers /readyz with 200. */
  waitReady(timeoutMs: number, names: readonly string[]): Promise<void>;
  close(): Promise<void>;
}

/** A 3-member cell on loopback ports (the test harness), each member on `cliFor(name)`. */
export async function loopbackRollCell(cliFor: (name: string) => string): Promise<RollCell> {
  const clis = new Map<string, string>();
  const cell = await startTestCell({ cliPathFor: (name) => clis.get(name) ?? cliFor(name) });
  return {
    names: cell.names,
    clientUrl: (name) => cell.cell.clientUrl(name),
    isRunning: (name) => cell.cell.isRunning(name),
    signal: (name, signal) => cell.cell.signal(name, signal),
    waitExit: (name, timeoutMs) => cell.cell.waitExit(name, timeoutMs),
    start(name, cli) {
      clis.set(name, cli);
      cell.cell.start(name);
    },
    waitReady: (timeoutMs, names) => cell.cell.waitReady(timeoutMs, [...names]),
    close: () => cell.close(),
  };
}

export interface RollOptions {
  readonly seed: bigint;
  /** The cell, started with each member on `cliFor(name)` (default: loopbackRollCell). */
  readonly startCell?: (cliFor: (name: string) => string) => Promise<RollCell>;
  /** The CLI each member starts on. */
  readonly initialCli: (name: string) => string;
  readonly steps: readonly RollStep[];
  /** Load before the roll, the steady state the roll's latency is compared with. */
  readonly steadyMs?: number;
  /** Load after the last member is back and healthy. */
  readonly afterMs?: number;
  readonly clients?: number;
  readonly lockClients?: number;
  /** Receives each step as it happens (a test's diagnostics). */
  readonly say?: (line: string) => void;
}

export interface RollSummary {
  readonly verdict: Verdict;
  readonly lines: string[];
  /** Operations that ended without a result after the client's own retries. */
  readonly failures: readonly OperationRecord[];
  readonly operations: number;
  readonly restarts: number;
  /** Leaders seen after the first one (a term with a leader other than the term before). */
  readonly leaderChanges: number;
  readonly termsAdvanced: number;
  readonly p99SteadyMs: number;
  readonly p99RollMs: number;
  /** Members that did not exit 0 on SIGTERM. */
  readonly badExits: readonly string[];
}

const keyCount = 3;

/**
 * The bar of a roll: no violation, no operation failed after retries, exit 0 on SIGTERM, at most one
 * leader change per restarted member, p99 during the roll within 2x the steady state (plus 50 ms:
 * on a loaded 2-core machine a steady p99 of tens of ms moves by that much with no roll at all).
 */
export function assertRoll(summary: RollSummary): void {
  assert.notEqual(summary.verdict, 'violation', summary.lines.join('\n'));
  assert.equal(summary.verdict, 'ok', summary.lines.join('\n'));
  assert.deepEqual(summary.failures.map((r) => `${r.operation.type} ${r.error ?? ''}`), [], summary.lines.join('\n'));
  assert.deepEqual(summary.badExits, [], summary.lines.join('\n'));
  assert.ok(summary.leaderChanges <= summary.restarts, `leader changes: ${summary.lines.join('\n')}`);
  assert.ok(summary.p99RollMs <= 2 * summary.p99SteadyMs + 50, `p99 during the roll: ${summary.lines.join('\n')}`);
}


export async function runRoll(options: RollOptions): Promise<RollSummary> {
  const say = options.say ?? (() => {});
  const cell = await (options.startCell ?? loopbackRollCell)(options.initialCli);
  const started = performance.now();
  const events: HistoryEvent[] = [];
  const recorder: Recorder = { now: () => performance.now() - started, record: (e) => events.push(e) };
  const random = new SeededRandom(options.seed ^ 0x726f6c6cn);
  const urls = cell.names.map((name) => cell.clientUrl(name));
  // The client library as an application gets it (its default retry policy: what "no failure after
  // the client's retries" means); a request meeting a member in its graceful stop or a leader
  // handing over is retried on another member.
  const newClient = (): BatonClient => new BatonClient({ endpoints: urls, random: () => random.uint32() / 2 ** 32, discover: false });
  const kvClients = Array.from({ length: options.clients ?? 4 }, newClient);
  const lockClients = Array.from({ length: options.lockClients ?? 2 }, newClient);
  const leaders = new LeaderWatch(cell);
  let stopLoad = false;
  const keys = Array.from({ length: keyCount }, (_, i) => `roll${i}`);
  const deadline = (): number => (stopLoad ? 0 : Number.POSITIVE_INFINITY);
  try {
    const guard = new MemoryFencingGuard();
    const workers = [
      ...kvClients.map((client, process) => kvLoop(recorder, process, client, keys, options.seed, deadline)),
      ...lockClients.map((client, i) => {
        const process = kvClients.length + 2 * i;
        // No pauses past the TTL: a rolling restart must not cost anyone a lock. The deadline is
        // read at each hold: it falls to 0 when the load stops.
        return lockLoop({
          recorder, process, renewProcess: process + 1, client, guard, seed: options.seed, pauseOneIn: 1_000_000,
          get deadline() {
            return deadline();
          },
        });
      }),
    ];
    leaders.start();
    await sleep(options.steadyMs ?? 4_000);
    const rollStartMs = recorder.now();
    const badExits: string[] = [];
    for (const [i, step] of options.steps.entries()) {
      await waitHealthy(cell);
      const leader = await findLeader(cell);
      if (leader === step.name) {
        const to = cell.names.find((n) => n !== step.name) as string;
        await transferLeadership(cell, to);
        say(`step ${i + 1}: ${step.name} led: leadership moved to ${to}`);
      }
      cell.signal(step.name, 'SIGTERM');
      const exit = await cell.waitExit(step.name, 40_000);
      if (exit !== 0) badExits.push(`${step.name}: ${String(exit)}`);
      cell.start(step.name, step.cli);
      await cell.waitReady(30_000, [step.name]);
      say(`step ${i + 1}: ${step.name} restarted on ${step.cli} at ${(recorder.now() / 1000).toFixed(1)} s`);
    }
    await waitHealthy(cell);
    const rollEndMs = recorder.now();
    await sleep(options.afterMs ?? 2_000);
    stopLoad = true;
    await Promise.all(workers);
    leaders.stop();
    const finalValues = await finalReads(recorder, kvClients.length + 2 * lockClients.length, kvClients[0] as BatonClient, keys);
    const all = pairHistory(events);
    const records = all.filter(isKvRecord);
    const linear = checkLinearizable(records, { stepsMax: 20_000_000 });
    const durable = checkDurability({ records, finalValues });
    const locks = checkLockSafety(all);
    const failures = all.filter((r) => r.status !== 'ok');
    const p99 = (from: number, to: number): number =>
      percentile(records.filter((r) => r.status === 'ok' && r.invokeMs >= from && r.invokeMs < to).map((r) => r.completeMs - r.invokeMs), 0.99);
    const p99SteadyMs = p99(0, rollStartMs);
    const p99RollMs = p99(rollStartMs, rollEndMs);
    const verdicts = [linear.verdict, durable.verdict, locks.verdict];
    const verdict: Verdict = verdicts.includes('violation') ? 'violation' : verdicts.every((v) => v === 'ok') ? 'ok' : 'unknown';
    const grants = all.filter((r) => r.operation.type === 'acquire' && r.status === 'ok').length;
    const lines = [
      `operations: ${all.length}, ${failures.length} failed after retries${failures.length > 0 ? `: ${failures.slice(0, 5).map(describe).join('; ')}` : ''}`,
      `restarts: ${options.steps.length}, leader changes: ${leaders.changes}, terms advanced: ${leaders.termsAdvanced} (${leaders.history.join(' -> ')})`,
      `latency p99: steady ${p99SteadyMs.toFixed(1)} ms, during the roll ${p99RollMs.toFixed(1)} ms (${(p99RollMs / p99SteadyMs).toFixed(2)}x); the roll took ${((rollEndMs - rollStartMs) / 1000).toFixed(1)} s`,
      `linearizability: ${linear.verdict} (${records.length} operations), durability: ${durable.verdict}, locks: ${locks.verdict} (${grants} grants)`,
      ...linear.failures.map((f) => f.explanation),
      ...durable.violations.map((v) => `  ${v.kind}: ${v.message}`),
      ...locks.violations.slice(0, 10).map((v) => `  ${v.kind}: ${v.message}`),
      ...(badExits.length > 0 ? [`exits other than 0 on SIGTERM: ${badExits.join(', ')}`] : []),
    ];
    return {
      verdict,
      lines,
      failures,
      operations: all.length,
      restarts: options.steps.length,
      leaderChanges: leaders.changes,
      termsAdvanced: leaders.termsAdvanced,
      p99SteadyMs,
      p99RollMs,
      badExits,
    };
  } finally {
    stopLoad = true;
    leaders.stop();
    await Promise.all([...kvClients, ...lockClients].map((client) => client.close()));
    await cell.close();
  }
}

async function kvLoop(
  recorder: Recorder,
  process: number,
  client: BatonClient,
  keys: readonly string[],
  seed: bigint,
  deadline: () => number,
): Promise<void> {
  const random = new SeededRandom(seed * 1_000n + BigInt(process));
  const seen = new Map<string, string | null>();
  for (let n = 0; n < 1_000_000 && recorder.now() < deadline(); n++) {
    const key = keys[randomInt(random, 0, keys.length - 1)] as string;
    const value = `r${process}-${n}`;
    const roll = randomInt(random, 0, 99);
    const operation: KvOperation =
      roll < 45 ? { type: 'read', key } : roll < 75 ? { type: 'write', key, value } : { type: 'cas', key, expected: seen.get(key) ?? null, value };
    const outcome = await runKvOperation(recorder, process, client, operation);
    if (outcome.type === 'ok' && outcome.result.type === 'read') seen.set(key, outcome.result.value);
    if (outcome.type === 'ok' && operation.type === 'write') seen.set(key, operation.value);
    if (outcome.type === 'ok' && outcome.result.type === 'cas' && outcome.result.succeeded) seen.set(key, operation.type === 'cas' ? operation.value : null);
    if (outcome.type !== 'ok') await sleep(50);
  }
}

/** Every member ready and the leader in contact with every member (its `healthy` view). */
export async function waitHealthy(cell: RollCell, timeoutMs = 30_000): Promise<void> {
  await cell.waitReady(timeoutMs, cell.names);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const leader = await findLeader(cell).catch(() => null);
    if (leader !== null) {
      const status = await http(`${cell.clientUrl(leader)}/v1/cluster/status`, { timeoutMs: 1_000 }).catch(() => null);
      const members = (status?.body?.members ?? []) as { healthy?: boolean }[];
      if (members.length === cell.names.length && members.every((m) => m.healthy === true)) return;
    }
    if (Date.now() > deadline) throw new Error('the cell did not become healthy again');
    await sleep(100);
  }
}

/** The member every running member's status agrees leads (its own status says so too). */
async function findLeader(cell: RollCell, timeoutMs = 15_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    for (const name of cell.names) {
      if (!cell.isRunning(name)) continue;
      const status = await http(`${cell.clientUrl(name)}/v1/cluster/status`, { timeoutMs: 1_000 }).catch(() => null);
      const leader = Number(status?.body?.leader ?? 0);
      const leaderName = (status?.body?.members as { id: number; name: string }[] | undefined)?.find((m) => m.id === leader)?.name;
      if (leaderName === undefined || !cell.isRunning(leaderName)) continue;
      const own = await http(`${cell.clientUrl(leaderName)}/v1/cluster/status`, { timeoutMs: 1_000 }).catch(() => null);
      if (Number(own?.body?.leader ?? 0) === leader) return leaderName;
    }
    await sleep(100);
  }
  throw new Error('no leader found');
}

/** POST /v1/cluster/leader {to}: the leader hands over to `to` (a follower forwards the call). */
async function transferLeadership(cell: RollCell, to: string): Promise<void> {
  const members = await http(`${cell.clientUrl(to)}/v1/cluster/members`);
  const id = (members.body as { members: { id: number; name: string }[] }).members.find((m) => m.name === to)?.id;
  const answer = await http(`${cell.clientUrl(to)}/v1/cluster/leader`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ to: id }),
    timeoutMs: 10_000,
  });
  if (answer.status !== 200) throw new Error(`leader transfer to ${to}: ${answer.status} ${JSON.stringify(answer.body)}`);
}

/** Polls every running member's status: the terms seen and the leader of each. */
class LeaderWatch {
  readonly history: string[] = [];
  changes = 0;
  termsAdvanced = 0;
  private firstTerm = 0;
  private lastTerm = 0;
  private lastLeader = 0;
  private timer: NodeJS.Timeout | null = null;
  private polling = false;

  constructor(private readonly cell: RollCell) {}

  start(): void {
    this.timer = setInterval(() => void this.poll(), 100);
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      const names = this.cell.names.filter((n) => this.cell.isRunning(n));
      const answers = await Promise.all(
        names.map((n) => http(`${this.cell.clientUrl(n)}/v1/cluster/status`, { timeoutMs: 500 }).catch(() => null)),
      );
      for (const answer of answers) {
        const term = Number(answer?.body?.term ?? 0);
        const leader = Number(answer?.body?.leader ?? 0);
        if (term > this.lastTerm) {
          if (this.firstTerm === 0) this.firstTerm = term;
          this.lastTerm = term;
          this.termsAdvanced = term - this.firstTerm;
        }
        if (term === this.lastTerm && leader > 0 && leader !== this.lastLeader) {
          if (this.lastLeader !== 0) this.changes += 1;
          this.lastLeader = leader;
          this.history.push(`${leader}@${term}`);
        }
      }
    } finally {
      this.polling = false;
    }
  }
}

function percentile(values: number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
}

function describe(record: OperationRecord): string {
  return `${record.operation.type} ${record.status} ${record.error ?? ''} at ${record.invokeMs.toFixed(0)} ms`;
}
