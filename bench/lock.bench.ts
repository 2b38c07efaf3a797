// `npm run bench:locks`: Baton's locks vs etcd 3.4's lock service in the same run (issue 9's
// benchmark). Starts a 3-process Baton cell and a 3-member etcd cell on free loopback ports (temp
// data directories, default durability), then, round by round, alternating which system goes first:
//   - uncontended acquire + release: C clients (default 1 and 16), each with its own lease and
//     lock name, N pairs each (time-capped): pair latency p50/p99 and pairs/s;
//   - hand-off: W waiters (default 10 and 1,000) queued on one lock, each granted waiter releasing
//     at once and queueing again: the time from a release being sent to the next grant arriving.
// Prints the median of the rounds for each system and the median of the per-round Baton ÷ etcd
// ratios: the machine is shared, so only same-run ratios mean anything.
//
//   npm run bench:locks                  3 rounds (3-4 minutes; each measured run is capped at 8 s)
//   npm run bench:locks -- --quick       1 round, 1 and 8 clients, 10 and 200 waiters (about a minute)
// Flags: --rounds N --clients 1,16 --loops N --waiters 10,1000 --handoffs N --baton-only --json
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { EtcdCell, etcdInstallHint, etcdVersion } from '../src/bench/etcd-cell.js';
import { HandoffCase, UncontendedCase, type HandoffResult, type UncontendedResult } from '../src/bench/lock-bench.js';
import { batonLocks, etcdLocks, type LockProtocol } from '../src/bench/lock-protocols.js';
import { sameRunRatio, type PairedFigure } from '../src/bench/lock-stats.js';
import { metricValue } from '../src/bench/metrics-text.js';
import { freePorts } from '../src/bench/ports.js';
import { batonProtocol, etcdProtocol } from '../src/bench/protocols.js';
import { table } from '../src/bench/report.js';
import { ProcessCell } from '../src/node/testing/process-cell.js';

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    quick: { type: 'boolean' },
    json: { type: 'boolean' },
    'baton-only': { type: 'boolean' },
    rounds: { type: 'string' },
    clients: { type: 'string' },
    loops: { type: 'string' },
    waiters: { type: 'string' },
    handoffs: { type: 'string' },
  },
  strict: true,
});

const quick = values.quick === true;
const positiveList = (text: string, flag: string): number[] => {
  const list = text.split(',').map((s) => Number(s.trim()));
  if (list.length === 0 || !list.every((n) => Number.isInteger(n) && n >= 1 && n <= 5_000)) {
    throw new Error(`--${flag} takes integers in [1, 5000], comma-separated`);
  }
  return list;
};
const plan = {
  rounds: positiveList(values.rounds ?? (quick ? '1' : '3'), 'rounds')[0] as number,
  clients: positiveList(values.clients ?? (quick ? '1,8' : '1,16'), 'clients'),
  loops: positiveList(values.loops ?? (quick ? '40' : '200'), 'loops')[0] as number,
  warmupLoops: quick ? 5 : 10,
  // --quick queues 200, not 1,000: queueing 1,000 on both systems alone takes 20-40 s here.
  waiters: positiveList(values.waiters ?? (quick ? '10,200' : '10,1000'), 'waiters'),
  handoffs: positiveList(values.handoffs ?? (quick ? '30' : '150'), 'handoffs')[0] as number,
  /** Per measured run: uncontended phase / hand-off chain. */
  capMs: quick ? 5_000 : 8_000,
};
const callOptions = { ttlSeconds: 900, requestTimeoutMs: 15_000 };
const handoffOptions = { ...callOptions, waitMs: 280_000, stallMs: 10_000, setupMs: 90_000 };

const workDir = mkdtempSync(join(tmpdir(), 'baton-lock-bench-'));
const cleanups: (() => Promise<void> | void)[] = [];
let cleaning: Promise<void> | null = null;

function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const step of cleanups.reverse()) {
      try {
        await step();
      } catch (error) {
        log(`cleanup: ${(error as Error).message}`);
      }
    }
    rmSync(workDir, { recursive: true, force: true });
  })();
  return cleaning;
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`bench:locks: ${signal}, stopping every cell`);
    void cleanup().then(() => process.exit(130));
  });
}

function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

function out(text: string): void {
  process.stdout.write(`${text}\n`);
}

async function memberPorts(prefix: string): Promise<{ name: string; clientPort: number; peerPort: number }[]> {
  const ports = await freePorts(6);
  return [0, 1, 2].map((i) => ({ name: `${prefix}${i + 1}`, clientPort: ports[i] as number, peerPort: ports[i + 3] as number }));
}

interface Target {
  readonly protocol: LockProtocol;
  readonly urls: URL[];
}

async function startTargets(): Promise<{ targets: Target[]; baton: ProcessCell; version: string | null }> {
  const batonOnly = values['baton-only'] === true;
  const version = batonOnly ? null : etcdVersion();
  if (version === null && !batonOnly) log(`${etcdInstallHint}\nRunning Baton alone (no ratios).`);
  const baton = new ProcessCell({ dataDir: join(workDir, 'baton'), output: 'pipe', members: await memberPorts('n') });
  cleanups.push(() => baton.stopAll(10_000));
  baton.startAll();
  const targets: Target[] = [{ protocol: batonLocks, urls: baton.clientUrls().map((u) => new URL(u)) }];
  const waits = [baton.waitReady(30_000)];
  if (version !== null) {
    const etcd = new EtcdCell(join(workDir, 'etcd'), await memberPorts('e'));
    cleanups.push(() => etcd.stopAll(10_000));
    etcd.startAll();
    waits.push(etcd.waitReady(30_000));
    targets.push({ protocol: etcdLocks, urls: etcd.clientUrls() });
  }
  await Promise.all(waits);
  return { targets, baton, version };
}

/** Both systems once per round; the first of the pair alternates from round to round. */
function ordered<T>(items: readonly T[], round: number): T[] {
  return round % 2 === 0 ? [...items] : [...items].reverse();
}

async function scrapeAll(urls: readonly URL[]): Promise<string[]> {
  return Promise.all(urls.map(async (url) => {
    try {
      return await (await fetch(new URL('/metrics', url), { signal: AbortSignal.timeout(5_000) })).text();
    } catch {
      return '';
    }
  }));
}

/** Baton's lock wake-ups, summed over the members (one per hand-off unless waiters herd). */
async function batonWakeups(baton: ProcessCell): Promise<number> {
  const texts = await scrapeAll(baton.clientUrls().map((u) => new URL(u)));
  return texts.reduce((sum, text) => sum + metricValue(text, 'baton_lock_wakeups_total'), 0);
}

/** A number that grows with each election: Baton's Raft term, etcd's leader changes seen (max over members). */
async function electionCounter(target: Target): Promise<number> {
  const name = target.protocol.system === 'baton' ? 'baton_raft_term' : 'etcd_server_leader_changes_seen_total';
  const found = (await scrapeAll(target.urls)).map((text) => metricValue(text, name)).filter((n) => Number.isFinite(n));
  return found.length === 0 ? Number.NaN : Math.max(...found);
}

interface Row {
  readonly what: string;
  readonly figure: string;
  readonly rounds: PairedFigure[];
}

const ms = (us: number): number => us / 1000;

async function main(): Promise<void> {
  const { targets, baton, version } = await startTargets();
  log(`bench:locks: Baton${version === null ? '' : ` vs ${version}`}, ${plan.rounds} round(s): ` +
    `uncontended ${plan.clients.join(',')} clients x ${plan.loops} pairs, hand-off ${plan.waiters.join(',')} waiters x ${plan.handoffs}`);
  const rows: Row[] = [];
  const failures: string[] = [];
  const runs: (UncontendedResult | HandoffResult)[] = [];
  const figure = (system: string, result: number): PairedFigure => (system === 'baton' ? { baton: result, etcd: Number.NaN } : { baton: Number.NaN, etcd: result });
  const merge = (a: PairedFigure | undefined, b: PairedFigure): PairedFigure => ({
    baton: Number.isNaN(b.baton) ? (a?.baton ?? Number.NaN) : b.baton,
    etcd: Number.isNaN(b.etcd) ? (a?.etcd ?? Number.NaN) : b.etcd,
  });

  const elections = async (): Promise<number[]> => Promise.all(targets.map(electionCounter));
  const logElections = (what: string, before: readonly number[], after: readonly number[]): void => {
    const changes = targets.map((t, i) => `${t.protocol.system} ${(after[i] ?? NaN) - (before[i] ?? NaN)}`);
    log(`  ${what}: leader elections during the case: ${changes.join(', ')}`);
  };

  for (const clients of plan.clients) {
    const electionsBefore = await elections();
    const what = `uncontended, ${clients} client${clients === 1 ? '' : 's'}`;
    const cases = new Map<string, UncontendedCase>();
    const p50: PairedFigure[] = [];
    const p99: PairedFigure[] = [];
    const rate: PairedFigure[] = [];
    const put: PairedFigure[] = [];
    try {
      for (const target of targets) {
        const kv = target.protocol.system === 'baton' ? batonProtocol : etcdProtocol;
        const opened = await UncontendedCase.open(target.protocol, kv, target.urls, clients, `bench-u${clients}-`, callOptions);
        cases.set(target.protocol.system, opened);
      }
      for (let round = 0; round < plan.rounds; round++) {
        for (const target of ordered(targets, round)) {
          const system = target.protocol.system;
          const result = await (cases.get(system) as UncontendedCase).run({
            ...callOptions, clients, loops: plan.loops, warmupLoops: plan.warmupLoops, warmupCapMs: quick ? 1_000 : 2_000,
            capMs: plan.capMs, putLoops: Math.max(20, Math.ceil(plan.loops / 4)),
          });
          runs.push(result);
          log(`  ${system} ${what}, round ${round + 1}: ${result.pairs} pairs in ${result.seconds.toFixed(1)} s, ` +
            `${result.pairsPerSecond.toFixed(0)}/s, p50 ${ms(result.pair.p50Us).toFixed(2)} ms, p99 ${ms(result.pair.p99Us).toFixed(2)} ms; ` +
            `acquire p50 ${ms(result.acquire.p50Us).toFixed(2)} ms; put p50 ${ms(result.put.p50Us).toFixed(2)} ms`);
          p50[round] = merge(p50[round], figure(system, ms(result.pair.p50Us)));
          p99[round] = merge(p99[round], figure(system, ms(result.pair.p99Us)));
          rate[round] = merge(rate[round], figure(system, result.pairsPerSecond));
          put[round] = merge(put[round], figure(system, ms(result.put.p50Us)));
        }
      }
    } catch (error) {
      failures.push(`${what}: ${(error as Error).message}`);
      log(`  ${what} stopped: ${(error as Error).message}`);
    } finally {
      for (const opened of cases.values()) opened.close();
    }
    logElections(what, electionsBefore, await elections());
    rows.push({ what, figure: 'acquire+release p50 ms', rounds: p50 });
    rows.push({ what, figure: 'acquire+release p99 ms', rounds: p99 });
    rows.push({ what, figure: 'pairs/s', rounds: rate });
    rows.push({ what, figure: 'baseline: put p50 ms', rounds: put });
  }

  for (const waiters of plan.waiters) {
    const what = `hand-off, ${waiters} waiters`;
    const cases = new Map<string, HandoffCase>();
    const p50: PairedFigure[] = [];
    const p99: PairedFigure[] = [];
    const wakeups: number[] = [];
    const handed: number[] = [];
    const electionsBefore = await elections();
    try {
      // Setup is not measured: both systems queue their waiters at the same time.
      const setups = await Promise.allSettled(targets.map(async (target) => {
        const started = performance.now();
        const opened = await HandoffCase.open(target.protocol, target.urls, `bench-h${waiters}`, { ...handoffOptions, waiters });
        cases.set(target.protocol.system, opened);
        log(`  ${target.protocol.system}: ${waiters} waiters queued in ${((performance.now() - started) / 1000).toFixed(1)} s (both systems at once)`);
      }));
      for (const setup of setups) if (setup.status === 'rejected') throw setup.reason;
      for (let round = 0; round < plan.rounds; round++) {
        for (const target of ordered(targets, round)) {
          const system = target.protocol.system;
          const wakeupsBefore = system === 'baton' ? await batonWakeups(baton) : 0;
          const result = await (cases.get(system) as HandoffCase).run(plan.handoffs, plan.capMs);
          if (system === 'baton') {
            wakeups.push((await batonWakeups(baton)) - wakeupsBefore);
            handed.push(result.handoffs);
          }
          runs.push(result);
          log(`  ${system} ${what}, round ${round + 1}: ${result.handoffs} hand-offs in ${result.seconds.toFixed(1)} s, ` +
            `p50 ${ms(result.latency.p50Us).toFixed(2)} ms, p99 ${ms(result.latency.p99Us).toFixed(2)} ms, max ${ms(result.latency.maxUs).toFixed(1)} ms; ` +
            `release alone p50 ${ms(result.release.p50Us).toFixed(2)} ms, max ${ms(result.release.maxUs).toFixed(1)} ms`);
          p50[round] = merge(p50[round], figure(system, ms(result.latency.p50Us)));
          p99[round] = merge(p99[round], figure(system, ms(result.latency.p99Us)));
        }
      }
    } catch (error) {
      failures.push(`${what}: ${(error as Error).message}`);
      log(`  ${what} stopped: ${(error as Error).message}`);
    } finally {
      for (const opened of cases.values()) opened.close();
    }
    logElections(what, electionsBefore, await elections());
    rows.push({ what, figure: 'release -> next grant p50 ms', rounds: p50 });
    rows.push({ what, figure: 'release -> next grant p99 ms', rounds: p99 });
    const totalHanded = handed.reduce((a, b) => a + b, 0);
    if (totalHanded > 0) {
      log(`  baton ${what}: ${(wakeups.reduce((a, b) => a + b, 0) / totalHanded).toFixed(2)} waiter wake-ups per hand-off (baton_lock_wakeups_total, all members)`);
    }
  }

  const fmt = (n: number, digits: number): string => (Number.isFinite(n) ? n.toFixed(digits) : '-');
  const summary = rows.map((row) => ({ ...row, ...sameRunRatio(row.rounds) }));
  out(`\nMedians of ${plan.rounds} round(s); ratio = median over rounds of Baton ÷ etcd measured in the same round:`);
  out(table(
    ['case', 'figure', 'baton', 'etcd', 'baton/etcd', 'ratio per round'],
    summary.map((r) => [
      r.what, r.figure, fmt(r.baton, r.figure === 'pairs/s' ? 0 : 2), fmt(r.etcd, r.figure === 'pairs/s' ? 0 : 2),
      Number.isFinite(r.ratio) ? `${r.ratio.toFixed(2)}x` : '-', r.ratios.map((x) => x.toFixed(2)).join(' '),
    ]),
  ));
  out('(latency ratio < 1: Baton is faster; pairs/s ratio > 1: Baton serves more)');
  if (failures.length > 0) {
    out(`\nStopped cases:\n${failures.map((f) => `- ${f}`).join('\n')}`);
    process.exitCode = 1;
  }
  if (values.json === true) out(JSON.stringify({ etcd: version, plan, runs, summary }, null, 2));
}

// A hard bound on the whole run: past it, stop every cell and fail rather than run on.
const boundMs = (quick ? 150 : 600) * 1000;
const watchdog = setTimeout(() => {
  log(`bench:locks: still running after ${boundMs / 1000} s; stopping`);
  void cleanup().then(() => process.exit(1));
}, boundMs);

try {
  await main();
} catch (error) {
  log(`bench:locks failed: ${(error as Error).stack ?? String(error)}`);
  process.exitCode = 1;
} finally {
  clearTimeout(watchdog);
  await cleanup();
}
