// `npm run bench:moves`: the write window of namespace moves (issue 24: p99 <= 200 ms at 1,000
// writes/s). Starts `baton dev --cells 2` on free loopback ports, creates /mv/ on cell-1, writes
// to it through the router at a steady rate (overwriting a fixed set of keys, so the namespace
// keeps its size), and moves it back and forth N times. Per move it records:
//   - the mover's window (fence -> the destination's table applied; the move record's windowMs)
//     and its parts where the build reports them (the record's windowParts, else the mover's log
//     line: fence, last changes, flip, destination table);
//   - the client-seen pause: the longest gap between two acknowledged writes while the move ran
//     (this adds the router learning the flip and the client's retry to the mover's window).
// Writes carry Request-IDs, so the source holds dedup records the move copies too. The schedule
// is open: a write held up by a window is sent late, not dropped (a writer more than 1 s behind
// gives writes up, counted as "not sent"), so "acked" against "offered" says whether the cells
// carried the rate; --workers (256) bounds the writes in flight.
// With --baseline-dir DIR (a built older tree) the same rounds run against that build first, in
// the same run, so the two sets of figures share the machine's state.
//
//   npm run bench:moves -- --moves 20 [--rate 1000] [--workers 256] [--keys 1000] [--baseline-dir /tmp/old] [--json]
import { Agent, request } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { table } from '../src/bench/report.js';
import { startDevCells, stopDevCells, type DevCellsRun } from '../src/bench/dev-cells-run.js';

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    moves: { type: 'string' },
    rate: { type: 'string' },
    keys: { type: 'string' },
    workers: { type: 'string' },
    'baseline-dir': { type: 'string' },
    rounds: { type: 'string' },
    json: { type: 'boolean' },
  },
  strict: true,
});
const moveCount = Number(values.moves ?? 20);
const rate = Number(values.rate ?? 1_000);
const keyCount = Number(values.keys ?? 1_000);
const workerCount = Number(values.workers ?? 256);
const rounds = Number(values.rounds ?? 2);
for (const [name, n] of [['rounds', rounds], ['moves', moveCount], ['rate', rate], ['keys', keyCount], ['workers', workerCount]] as const) {
  if (!Number.isSafeInteger(n) || n < 1 || n > 100_000) throw new Error(`--${name} takes 1..100000`);
}
const thisCli = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', 'src', 'cli', 'main.js');
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
/** How far behind its schedule a writer may fall before it gives up writes (counted as not sent). */
const catchUpMs = 1_000;

interface MoveFigures {
  windowMs: number;
  parts: Record<string, number>;
  clientPauseMs: number;
  refused: number;
  /** The whole move, started -> released and cleaned (the copy's listing of Request-ID records is in it). */
  totalMs: number;
}

interface RunFigures {
  build: string;
  moves: MoveFigures[];
  writesPerSecond: number;
  /** Scheduled writes given up because the writer was more than catchUpMs behind, per second. */
  notSentPerSecond: number;
  /** The load client's CPU over the run, in cores. */
  clientCores: number;
}

/** Starts `baton dev --cells 2` with `cli`: the ready line, the child, and the mover's "flipped to" lines. */
async function startDev(cli: string, dataDir: string): Promise<DevCellsRun & { log: string[] }> {
  const log: string[] = [];
  const run = await startDevCells({
    cli, cells: 2, dataDir,
    onLine: (text) => {
      if (text.includes('flipped to')) log.push(text);
      else if (/move \d+ of|mover:/.test(text) && !values.json) process.stderr.write(`  ${text.slice(0, 300)}\n`);
    },
  });
  return { ...run, log };
}

function put(agent: Agent, port: number, path: string, body: string, requestId: string): Promise<number> {
  return new Promise((resolveStatus, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'PUT', agent, timeout: 10_000, headers: { 'request-id': requestId } }, (res) => {
      res.resume();
      res.on('end', () => resolveStatus(res.statusCode ?? 0));
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end(body);
  });
}

async function json(url: string, init?: RequestInit): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** The mover's log line of a move: "... (fence 12, last changes 30, flip 8, destination table 9 ms)". */
function partsFromLog(line: string | undefined): Record<string, number> {
  const parts: Record<string, number> = {};
  if (line === undefined) return parts;
  for (const [, name, ms] of line.matchAll(/(fence|last changes|flip|destination table) (\d+)/g)) parts[name as string] = Number(ms);
  return parts;
}

async function runBuild(build: string, cli: string, moveCount: number): Promise<RunFigures> {
  const scratch = mkdtempSync(join(tmpdir(), 'baton-move-bench-'));
  const dev = await startDev(cli, scratch);
  try {
    const router = `http://127.0.0.1:${dev.base}`;
    const created = await json(`${router}/v1/control/namespaces`, { method: 'POST', body: JSON.stringify({ prefix: '/mv/', cell: 'cell-1' }), headers: { 'content-type': 'application/json' } });
    if (created.status !== 200) throw new Error(`create /mv/: ${JSON.stringify(created.body)}`);
    for (let i = 0; i < 100; i++) {
      const answer = await fetch(`${router}/v1/kv/mv/seed`, { method: 'PUT', body: 's' });
      await answer.arrayBuffer();
      if (answer.ok && answer.headers.get('baton-cell') === 'cell-1') break;
      await sleep(100);
    }
    // The load: workers share the rate; each write carries a Request-ID (as the client library's do)
    // and is retried with it (2 ms apart) until acknowledged.
    const agent = new Agent({ keepAlive: true, maxSockets: workerCount });
    const acks: number[] = [];
    let refused = 0;
    let dropped = 0;
    let loading = true;
    const value = 'v'.repeat(100);
    const worker = async (w: number): Promise<void> => {
      const intervalMs = (1_000 * workerCount) / rate;
      let next = performance.now() + (w * intervalMs) / workerCount;
      for (let i = 0; loading && i < 10_000_000; i++) {
        const wait = next - performance.now();
        if (wait > 0) await sleep(wait);
        // An open schedule: writes held up by a move's window are sent late, not dropped, so the
        // offered rate stays the rate (a backlog older than catchUpMs is given up and counted).
        next += intervalMs;
        const behind = performance.now() - next;
        if (behind > catchUpMs) {
          const skipped = Math.floor(behind / intervalMs);
          dropped += skipped;
          next += skipped * intervalMs;
        }
        const key = `/v1/kv/mv/k${(w + i * workerCount) % keyCount}`;
        for (let attempt = 0; attempt < 5_000 && loading; attempt++) {
          let status = 0;
          try {
            status = await put(agent, dev.base, key, value, `w${w}-${i}`);
          } catch {
            status = 0;
          }
          if (status === 200 || status === 201) {
            acks.push(performance.now());
            break;
          }
          refused++;
          await sleep(2);
        }
      }
    };
    const startedAt = performance.now();
    const cpuAtStart = process.cpuUsage();
    const workers = Array.from({ length: workerCount }, (_, w) => worker(w));
    await sleep(3_000);
    const moves: MoveFigures[] = [];
    for (let m = 0; m < moveCount; m++) {
      const to = m % 2 === 0 ? 'cell-2' : 'cell-1';
      const refusedBefore = refused;
      const from = performance.now();
      const started = await json(`${router}/v1/control/moves`, { method: 'POST', body: JSON.stringify({ prefix: '/mv/', to }), headers: { 'content-type': 'application/json' } });
      if (started.status !== 200) throw new Error(`move ${m}: ${JSON.stringify(started.body)}`);
      let move = started.body['move'] as Record<string, unknown>;
      for (let poll = 0; poll < 1_200 && !(move['phase'] === 'released' && move['cleaned'] === true); poll++) {
        await sleep(50);
        move = (await json(`${router}/v1/control/namespaces/mv/`)).body['move'] as Record<string, unknown>;
        if (move['phase'] === 'aborted') throw new Error(`move ${m} aborted: ${String(move['error'])}`);
      }
      if (move['phase'] !== 'released') throw new Error(`move ${m} did not finish in 60 s`);
      const until = performance.now();
      await sleep(300);
      let pause = 0;
      let last = -1;
      for (const at of acks) {
        if (at < from) {
          last = at;
          continue;
        }
        if (at > until + 300) break;
        if (last >= 0) pause = Math.max(pause, at - last);
        last = at;
      }
      const parts = (move['windowParts'] as Record<string, number> | undefined) ?? partsFromLog(dev.log[m]);
      moves.push({ windowMs: Number(move['windowMs']), parts, clientPauseMs: Math.round(pause), refused: refused - refusedBefore, totalMs: Math.round(until - from) });
      if (!values.json) process.stderr.write(`${build} move ${m + 1}/${moveCount} (${Math.round(until - from)} ms in all): window ${move['windowMs']} ms ${JSON.stringify(parts)}, client pause ${Math.round(pause)} ms ${/fence \d+ (\[[^\]]*\])/.exec(dev.log[m] ?? '')?.[1] ?? ''} ${/last changes \d+ (\[[^\]]*\])/.exec(dev.log[m] ?? '')?.[1] ?? ''}\n`);
      await sleep(500);
    }
    loading = false;
    await Promise.all(workers);
    agent.destroy();
    const seconds = (performance.now() - startedAt) / 1000;
    // The load client's own CPU (this process: the writers and the polling), in cores: on 2
    // cores a busy client takes from the cells it measures.
    const cpu = process.cpuUsage(cpuAtStart);
    return { build, moves, writesPerSecond: Math.round(acks.length / seconds), notSentPerSecond: Math.round(dropped / seconds), clientCores: Math.round(((cpu.user + cpu.system) / 1e6 / seconds) * 100) / 100 };
  } finally {
    await stopDevCells(dev);
    rmSync(scratch, { recursive: true, force: true });
  }
}

function percentile(values: readonly number[], p: number): number {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}

// Rounds alternate the builds (baseline first), so both see the machine's load alike.
const builds: [string, string][] = [
  ...(values['baseline-dir'] !== undefined ? [['baseline', join(values['baseline-dir'], 'dist/src/cli/main.js')] as [string, string]] : []),
  ['this', thisCli],
];
const byBuild = new Map<string, RunFigures[]>();
for (let round = 0; round < rounds; round++) {
  for (const [build, cli] of builds) {
    const share = Math.ceil(moveCount / rounds);
    const run = await runBuild(build, cli, share);
    byBuild.set(build, [...(byBuild.get(build) ?? []), run]);
  }
}
const runs: RunFigures[] = [...byBuild.entries()].map(([build, all]) => ({
  build, moves: all.flatMap((r) => r.moves), writesPerSecond: Math.round(all.reduce((sum, r) => sum + r.writesPerSecond, 0) / all.length),
  notSentPerSecond: Math.round(all.reduce((sum, r) => sum + r.notSentPerSecond, 0) / all.length),
  clientCores: Math.round((all.reduce((sum, r) => sum + r.clientCores, 0) / all.length) * 100) / 100,
}));
if (values.json) {
  process.stdout.write(`${JSON.stringify(runs)}\n`);
} else {
  const rows: string[][] = [];
  for (const run of runs) {
    const figure = (name: string, all: number[]): void => {
      rows.push([run.build, name, String(percentile(all, 50)), String(percentile(all, 99)), String(Math.max(...all.filter(Number.isFinite)))]);
    };
    figure('window (fence asked -> destination table)', run.moves.map((m) => m.windowMs));
    // Writes stop when the source applies the fence (its push answered), not when it is asked.
    figure('window (fence applied -> destination table)', run.moves.map((m) => m.windowMs - (m.parts['fence'] ?? NaN)));
    const partNames = [...new Set(run.moves.flatMap((m) => Object.keys(m.parts)))];
    for (const part of partNames) figure(`  ${part}`, run.moves.map((m) => m.parts[part] ?? NaN));
    figure('client-seen pause (longest ack gap)', run.moves.map((m) => m.clientPauseMs));
    figure('move, started -> released', run.moves.map((m) => m.totalMs));
    rows.push([run.build, `moves ${run.moves.length}, writes offered ${rate}/s, acked ${run.writesPerSecond}/s, not sent ${run.notSentPerSecond}/s, load client ${run.clientCores} cores`, '', '', '']);
  }
  process.stdout.write(`${table(['build', 'ms', 'p50', 'p99', 'max'], rows)}\n`);
}
