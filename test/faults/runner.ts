// A fault run: a real 3- or 5-member cell behind fault proxies, with fault control files (slow
// disk, wall-clock steps); concurrent clients through the client library: reads, writes and CAS
// (as transactions) on a few keys, a lease workload, a lock workload with fenced writes (when
// the cell serves locks), watchers (SSE and the client's stream); while the nemesis injects
// faults. Then every fault heals, final reads are taken, and the history goes through the
// linearizability, durability, watch, lease and lock-safety checkers, plus the dedup probe of
// the clock jumps. The seed draws the client mix and the fault schedule; process scheduling still
// varies from run to run, so a seed names a scenario, not a replay.
import { performance } from 'node:perf_hooks';
import { SeededRandom, randomInt } from '../../src/base/random.js';
import type { BatonClient, ClusterStatus } from '../../src/client/index.js';
import {
  checkDurability,
  checkLeases,
  checkLinearizable,
  checkLockSafety,
  isKvRecord,
  pairHistory,
  type HistoryEvent,
  type KvOperation,
  type OperationRecord,
  type Verdict,
} from '../../src/check/index.js';
import { MemoryFencingGuard, type FencingGuard } from '../../src/fencing/index.js';
import { http, sleep, startTestCell } from '../cluster/harness.js';
import { ClientWatcher } from './client-watcher.js';
import { startDedupProbe } from './dedup-probe.js';
import { FaultControls } from './fault-controls.js';
import { faultClient, keyPath, runKvOperation, type ReadConsistency, type Recorder } from './kv-client.js';
import { leaseLoop, leaseTtlMs } from './lease-client.js';
import { lockLoop, lockName } from './lock-client.js';
import type { Member } from './membership-fault.js';
import { startNemesis, type FaultKind } from './nemesis.js';
import { checkRunWatches, type RunWatcher } from './watch-verdict.js';
import { WatchSession } from './watch-client.js';

export interface FaultRunOptions {
  readonly timeS: number;
  readonly seed: bigint;
  /** Cell size: 3 or 5. */
  readonly members?: number;
  readonly clients?: number;
  readonly leaseClients?: number;
  /** Lock workers (run only when the cell has the lock API). */
  readonly lockClients?: number;
  readonly keys?: number;
  readonly requestTimeoutMs?: number;
  /** Client reads; `serializable` is the checker's self-test (stale reads must be caught). */
  readonly reads?: ReadConsistency;
  /**
   * `off`: the protected resource accepts every token, the lock checker's self-test (a paused
   * holder's late write must be reported as a stale write accepted).
   */
  readonly fencing?: 'on' | 'off';
  /** `overclaim`: the history claims 3x the leases' TTL, the lease checker's self-test. */
  readonly leases?: 'honest' | 'overclaim';
  /** Fault kinds to draw from (default: all). */
  readonly kinds?: readonly FaultKind[];
  /** Faults injected first, in order, before the seeded draw (e.g. ['grow-first']). */
  readonly first?: readonly FaultKind[];
  /** Largest wall-clock step (default 15 min, beyond the dedup window). */
  readonly clockJumpMaxMs?: number;
  /** Receives the raw event history, for saving next to a failure. */
  readonly onHistory?: (events: readonly HistoryEvent[]) => void;
}

export interface FaultRunSummary {
  readonly ok: boolean;
  /** `unknown` when a checker ran out of budget or a key had no final read. */
  readonly verdict: Verdict;
  readonly lines: string[];
  readonly operations: number;
  readonly faults: ReadonlyMap<FaultKind, number>;
}

export async function runFaults(options: FaultRunOptions): Promise<FaultRunSummary> {
  const members = options.members ?? 3;
  const clients = options.clients ?? 5;
  const leaseClients = options.leaseClients ?? 3;
  const lockClients = options.lockClients ?? 3;
  const keyCount = options.keys ?? 3;
  const timeoutMs = options.requestTimeoutMs ?? 1_500;
  const reads = options.reads ?? 'linearizable';
  const keys = Array.from({ length: keyCount }, (_, i) => `k${i}`);
  const started = performance.now();
  const events: HistoryEvent[] = [];
  const recorder: Recorder = { now: () => performance.now() - started, record: (e) => events.push(e) };
  const names = Array.from({ length: members }, (_, i) => `n${i + 1}`);
  const controls = new FaultControls(names);
  const cell = await startTestCell({ size: members, proxies: true, nodeArgs: (name) => controls.nodeArgs(name) });
  // The members' client URLs now: grow-first changes them during the run.
  let urls = cell.cell.clientUrls();
  const liveUrls = (): readonly string[] => urls;
  const random = new SeededRandom(options.seed ^ 0x636c6965n);
  const everyClient: BatonClient[] = [];
  const newClient = (): BatonClient => {
    const client = faultClient(urls, () => random.uint32() / 2 ** 32, timeoutMs);
    everyClient.push(client);
    return client;
  };
  const endpointRandom = new SeededRandom(options.seed ^ 0x656e6470n);
  const membersChanged = (members: readonly Member[]): void => {
    urls = members.filter((m) => m.role === 'voter' && m.clientUrl !== '').map((m) => m.clientUrl);
    for (const client of everyClient) adoptMembers(client, members, () => endpointRandom.uint32());
  };
  const kvClients = Array.from({ length: clients }, newClient);
  const leaseClientList = Array.from({ length: leaseClients }, newClient);
  const locksServed = lockClients > 0 && (await hasLockApi(urls[0] as string));
  const lockClientList = Array.from({ length: locksServed ? lockClients : 0 }, newClient);
  const guard: FencingGuard = options.fencing === 'off' ? acceptEveryToken : new MemoryFencingGuard();
  const dedup = startDedupProbe((name) => cell.cell.clientUrl(name));
  let watchers: (RunWatcher & { readonly id: string })[] = [];
  try {
    const nemesis = startNemesis(cell, controls, options.seed, recorder.now, {
      ...(options.kinds !== undefined ? { kinds: options.kinds } : {}),
      ...(options.first !== undefined ? { first: options.first } : {}),
      ...(options.clockJumpMaxMs !== undefined ? { clockJumpMaxMs: options.clockJumpMaxMs } : {}),
      duringClockJump: (victim, offsetMs) => dedup.around(victim, offsetMs),
      membersChanged,
    });
    // The run's time counts from a ready cell (starting one takes seconds on a loaded machine).
    const deadline = recorder.now() + options.timeS * 1_000;
    watchers = [
      ...urls.map((_, i) => new WatchSession(`sse${i}`, liveUrls, keyPath(''), i)),
      new ClientWatcher('client-watch', newClient(), keyPath('')),
    ];
    const workers = [
      ...kvClients.map((client, process) =>
        clientLoop({ recorder, process, client, keys, deadline, seed: options.seed, reads }),
      ),
      ...leaseClientList.map((client, i) =>
        leaseLoop({
          recorder,
          process: clients + i,
          client,
          deadline,
          seed: options.seed,
          ...(options.leases === 'overclaim' ? { claimedTtlMs: 3 * leaseTtlMs } : {}),
        }),
      ),
      ...lockClientList.map((client, i) => {
        const process = clients + leaseClients + 2 * i;
        // The self-test pauses every other hold, so a late write surely meets a newer token.
        const pauseOneIn = options.fencing === 'off' ? 2 : 4;
        return lockLoop({ recorder, process, renewProcess: process + 1, client, guard, deadline, seed: options.seed, pauseOneIn });
      }),
    ];
    await Promise.all(workers);
    try {
      await nemesis.stop();
    } catch (error) {
      // The cell did not come back: say what the nemesis did before, and what each member said last.
      const said = cell.cell.names().map((name) => `--- ${name}\n${cell.cell.tail(name, 25)}`).join('\n');
      throw new Error(`${(error as Error).message}\nnemesis:\n${nemesis.log.join('\n')}\nmembers:\n${said}`, { cause: error });
    }
    const finalProcess = clients + leaseClients + 2 * lockClients;
    const finalValues = await finalReads(recorder, finalProcess, kvClients[0] as BatonClient, keys);
    options.onHistory?.(events);
    const all = pairHistory(events);
    const records = all.filter(isKvRecord);
    const linear = checkLinearizable(records, { stepsMax: 20_000_000 });
    const durable = checkDurability({ records, finalValues });
    const watch = await checkRunWatches(liveUrls(), watchers, records);
    const leases = checkLeases(all);
    const locks = locksServed ? checkLockSafety(all) : null;
    const dedupVerdict: Verdict = dedup.violations.length > 0 ? 'violation' : 'ok';
    const lines = summarize(all, records, nemesis.counts, linear, durable);
    lines.push(...watch.lines);
    lines.push(`  watchers: ${watchers.map(describeWatcher).join(', ')}`);
    lines.push(
      `leases: ${leases.verdict} (${leases.leases} leases, ${leases.keys} of them with a key; ` +
        `${leases.readsChecked} reads of those keys with a certain answer)`,
    );
    for (const violation of leases.violations.slice(0, 10)) lines.push(`  ${violation.kind}: ${violation.message}`);
    lines.push(`dedup across clock jumps: ${dedupVerdict} (${dedup.probes} probes, ${dedup.unknown} without an answer)`);
    for (const violation of dedup.violations) lines.push(`  ${violation}`);
    if (locks === null) lines.push('locks: not run (the cell has no lock API: GET /v1/locks/{name} is 404)');
    else {
      const acquired = all.filter((r) => r.operation.type === 'acquire' && r.status === 'ok').length;
      const writes = all.filter((r) => r.operation.type === 'guarded-write' && r.status === 'ok');
      const rejected = writes.filter((r) => r.result?.type === 'guarded-write' && !r.result.accepted).length;
      lines.push(`locks: ${locks.verdict} (${acquired} grants, ${writes.length} fenced writes, ${rejected} stale ones rejected)`);
      for (const violation of locks.violations.slice(0, 10)) lines.push(`  ${violation.kind}: ${violation.message}`);
    }
    lines.push(...nemesis.log.map((line) => `  nemesis ${line}`));
    const verdicts = [linear.verdict, durable.verdict, watch.verdict, leases.verdict, dedupVerdict, locks?.verdict ?? 'ok'];
    const ok = verdicts.every((v) => v === 'ok');
    const violated = verdicts.includes('violation');
    const verdict = ok ? 'ok' : violated ? 'violation' : 'unknown';
    return { ok, verdict, lines, operations: all.length, faults: nemesis.counts };
  } finally {
    // Watchers first: with the cell gone they would only retry their connections.
    await Promise.all(watchers.map((w) => w.finish(0, 0)));
    await Promise.all([...kvClients, ...leaseClientList, ...lockClientList].map((client) => client.close()));
    await dedup.close();
    await cell.close();
    controls.close();
  }
}

interface ClientOptions {
  readonly recorder: Recorder;
  readonly process: number;
  readonly client: BatonClient;
  readonly keys: readonly string[];
  readonly deadline: number;
  readonly seed: bigint;
  readonly reads: ReadConsistency;
}

export async function clientLoop(options: ClientOptions): Promise<void> {
  const { recorder, process, client, keys } = options;
  const random = new SeededRandom(options.seed * 1_000n + BigInt(process));
  // What this client last saw per key: CAS from it, so some swaps succeed.
  const seen = new Map<string, string | null>();
  for (let n = 0; n < 1_000_000 && recorder.now() < options.deadline; n++) {
    const key = keys[randomInt(random, 0, keys.length - 1)] as string;
    const value = `p${process}-${n}`;
    const roll = randomInt(random, 0, 99);
    const operation: KvOperation =
      roll < 45
        ? { type: 'read', key }
        : roll < 75
          ? { type: 'write', key, value }
          : { type: 'cas', key, expected: seen.get(key) ?? null, value };
    const outcome = await runKvOperation(recorder, process, client, operation, options.reads);
    if (outcome.type === 'ok' && outcome.result.type === 'read') seen.set(key, outcome.result.value);
    if (outcome.type === 'ok' && operation.type === 'write') seen.set(key, operation.value);
    if (outcome.type === 'ok' && outcome.result.type === 'cas' && outcome.result.succeeded) {
      seen.set(key, operation.type === 'cas' ? operation.value : null);
    }
    // Failures after the client's own retries: back off a little rather than spin.
    if (outcome.type !== 'ok') await sleep(randomInt(random, 20, 100));
  }
}

/** After healing: a linearizable read of every key, retried until one answers. */
export async function finalReads(
  recorder: Recorder,
  process: number,
  client: BatonClient,
  keys: readonly string[],
): Promise<Map<string, string | null>> {
  const finals = new Map<string, string | null>();
  for (const key of keys) {
    for (let attempt = 0; attempt < 30 && !finals.has(key); attempt++) {
      const outcome = await runKvOperation(recorder, process, client, { type: 'read', key });
      if (outcome.type === 'ok' && outcome.result.type === 'read') finals.set(key, outcome.result.value);
      else await sleep(200);
    }
  }
  return finals;
}

/** `sse0 412 events through 530`: how far a watcher got (its streams together). */
function describeWatcher(watcher: RunWatcher & { readonly id: string }): string {
  const events = watcher.records.reduce((n, r) => n + r.received.length, 0);
  const through = Math.max(0, ...watcher.records.map((r) => (r.end.type === 'compacted' ? 0 : (r.end.progressRevision ?? 0))));
  return `${watcher.id} ${events} events through ${through}`;
}

/**
 * Tells a client the cell's members, as its own discovery would (EndpointSet.learn: voters first,
 * every URL it knew before kept after them, so a removed member's URL only costs a failover). The
 * "leader" put first is the member the client talks to now when it is still a voter, else one
 * drawn from the run's seed, so the clients stay spread over the members rather than all moving
 * to one.
 */
function adoptMembers(client: BatonClient, members: readonly Member[], draw: () => number): void {
  const voters = members.filter((m) => m.role === 'voter' && m.clientUrl !== '');
  if (voters.length === 0) return;
  const current = client.endpoints.pick();
  const stay = voters.find((m) => m.clientUrl === current) ?? (voters[draw() % voters.length] as Member);
  const status = { leader: stay.id, members: voters.map((m) => ({ ...m, healthy: true })) };
  client.endpoints.learn(status as unknown as ClusterStatus, client.endpoints.discoveredAtMs);
}

/** No fencing at the resource: the lock checker's self-test. */
const acceptEveryToken: FencingGuard = {
  check: (_resource, token) => ({ accepted: true, token }),
  highest: () => 0,
  counts: { accepted: 0, rejected: 0 },
};

/** Whether the cell serves the lock API (it answers a lock's state; 404 without the route). */
async function hasLockApi(url: string): Promise<boolean> {
  try {
    return (await http(`${url}/v1/locks/${lockName}`, { timeoutMs: 5_000 })).status === 200;
  } catch {
    return false;
  }
}

function summarize(
  all: readonly OperationRecord[],
  records: readonly OperationRecord<KvOperation>[],
  faults: ReadonlyMap<FaultKind, number>,
  linear: ReturnType<typeof checkLinearizable>,
  durable: ReturnType<typeof checkDurability>,
): string[] {
  const byStatus = { ok: 0, fail: 0, info: 0 };
  for (const record of all) byStatus[record.status] += 1;
  const byType = new Map<string, number>();
  for (const record of all) byType.set(record.operation.type, (byType.get(record.operation.type) ?? 0) + 1);
  const faultText = [...faults].map(([kind, n]) => `${kind}=${n}`).join(' ') || 'none';
  const lines = [
    `operations: ${all.length} (ok ${byStatus.ok}, fail ${byStatus.fail}, info ${byStatus.info}; ` +
      `${[...byType].map(([type, n]) => `${type} ${n}`).join(', ')})`,
    `faults: ${faultText}`,
    `linearizability: ${linear.verdict} (${records.length} operations on ${linear.keysChecked} keys, ${linear.steps} steps)`,
  ];
  for (const failure of linear.failures) lines.push(failure.explanation);
  if (linear.unknownKeys.length > 0) lines.push(`  unknown (budget): ${linear.unknownKeys.join(', ')}`);
  lines.push(`durability: ${durable.verdict} (${durable.keysChecked} keys)`);
  for (const violation of durable.violations) lines.push(`  ${violation.kind}: ${violation.message}`);
  return lines;
}
