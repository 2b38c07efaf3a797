// `npm run bench:tenants`: one noisy tenant cannot hurt the others (issue #28's scenario, scaled
// to a shared 2-core machine). Starts a 3-process cell on free loopback ports and three tenants:
//   - B and C run a normal mix, paced (puts, gets, a lock acquire + release), each holding leases
//     renewed every 2 s (TTL 6 s);
//   - A (writesPerSecond / readsPerSecond per node) sends ten times its share of writes and of
//     prefix lists, spread over the three members.
// Two phases of --seconds each, B and C alone, then with A, in turns for --rounds rounds. Prints
// B's and C's p50/p99 per phase and their ratio (with A / without), leases that expired (must be
// 0), leader elections (Raft term changes, must be 0), and A's answers: admitted writes per second
// against its share, refusals by code. The machine is shared: only same-run ratios mean anything.
//
//   npm run bench:tenants                 2 rounds of 20 s + 20 s (about 2 minutes)
//   npm run bench:tenants -- --seconds 10 --rounds 1
// Flags: --seconds N --rounds N --rate N (B's and C's ops/s each) --a-share N (A's writes/s per node) --json
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { freePorts } from '../src/bench/ports.js';
import { ProcessCell } from '../src/node/testing/process-cell.js';

// A's load runs in a child process of this script, so its client work does not delay B's and C's
// measurements in this one (on a 2-core machine the client's event loop is part of the latency).
const noisyRole = process.env['BATON_BENCH_NOISY'];

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: { seconds: { type: 'string' }, rounds: { type: 'string' }, rate: { type: 'string' }, 'a-share': { type: 'string' }, json: { type: 'boolean' } },
  strict: true,
});
const whole = (text: string | undefined, fallback: number, max: number, flag: string): number => {
  const n = Number(text ?? fallback);
  if (!Number.isInteger(n) || n < 1 || n > max) throw new Error(`--${flag} takes an integer in [1, ${max}]`);
  return n;
};
const plan = {
  seconds: whole(values.seconds, 20, 600, 'seconds'),
  rounds: whole(values.rounds, 2, 10, 'rounds'),
  /** B's and C's offered ops/s each (60 % puts, 30 % gets, 10 % lock acquire + release). */
  rate: whole(values.rate, 20, 1_000, 'rate'),
  /** A's writesPerSecond per node; its readsPerSecond is a quarter of it. A offers 10x both, cell-wide. */
  aShare: whole(values['a-share'], 3, 1_000, 'a-share'),
  leasesPerTenant: 10,
  leaseTtlSeconds: 6,
};

const workDir = noisyRole === undefined ? mkdtempSync(join(tmpdir(), 'baton-tenants-bench-')) : '';
let cell: ProcessCell | null = null;
const log = (line: string): void => void (values.json === true ? process.stderr.write(`${line}\n`) : console.log(line));

async function main(): Promise<void> {
  const ports = await freePorts(6);
  cell = new ProcessCell({
    dataDir: join(workDir, 'cell'), output: 'pipe',
    members: [0, 1, 2].map((i) => ({ name: `n${i + 1}`, clientPort: ports[i] as number, peerPort: ports[i + 3] as number })),
  });
  cell.startAll();
  await cell.waitReady(60_000);
  const urls = cell.clientUrls();
  const share = { writes: plan.aShare, reads: Math.max(1, Math.floor(plan.aShare / 4)) };
  // A's keys for its lists: 200 keys under /a/, written before its limits exist.
  for (let i = 0; i < 200; i += 20) await Promise.all(Array.from({ length: 20 }, (_, j) => put(urls[(i + j) % 3] as string, `/a/seed-${i + j}`)));
  await setTenant(urls[0] as string, 'a', '/a/', { writesPerSecond: share.writes, readsPerSecond: share.reads });
  await setTenant(urls[0] as string, 'b', '/b/', { writesPerSecond: plan.rate * 10, readsPerSecond: plan.rate * 10 });
  await setTenant(urls[0] as string, 'c', '/c/', { writesPerSecond: plan.rate * 10, readsPerSecond: plan.rate * 10 });
  log(`cell up: ${urls.join(' ')}; B and C ${plan.rate} ops/s each + ${plan.leasesPerTenant} leases (TTL ${plan.leaseTtlSeconds} s); ` +
    `A's share ${share.writes} writes/s and ${share.reads} reads/s per node, offered 10x over 3 members; ${plan.rounds} x (${plan.seconds} s alone + ${plan.seconds} s with A)`);
  const results: PhaseResult[] = [];
  for (let round = 0; round < plan.rounds; round++) {
    for (const withA of [false, true]) {
      const result = await phase(urls, withA, share);
      results.push(result);
      log(`round ${round + 1} ${withA ? 'with A   ' : 'without A'}: B p50 ${ms(result.b.p50)} p99 ${ms(result.b.p99)} errors ${result.b.errors}; ` +
        `C p50 ${ms(result.c.p50)} p99 ${ms(result.c.p99)} errors ${result.c.errors}; leases expired ${result.leasesExpired}; elections ${result.elections}` +
        (withA ? `; A admitted ${(result.a.admittedWrites / plan.seconds).toFixed(1)} writes/s (share ${share.writes * 3}/s cell-wide), answers ${JSON.stringify(result.a.byStatus)}` : ''));
    }
  }
  const median = (xs: number[]): number => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)] as number;
  const ratio = (tenant: 'b' | 'c', field: 'p50' | 'p99'): number =>
    median(results.filter((r) => r.withA).map((r) => r[tenant][field])) / median(results.filter((r) => !r.withA).map((r) => r[tenant][field]));
  const summary = {
    plan,
    ratios: { bP50: ratio('b', 'p50'), bP99: ratio('b', 'p99'), cP50: ratio('c', 'p50'), cP99: ratio('c', 'p99') },
    leasesExpired: results.reduce((n, r) => n + r.leasesExpired, 0),
    elections: results.reduce((n, r) => n + r.elections, 0),
    quietErrors: results.reduce((n, r) => n + r.b.errors + r.c.errors, 0),
    aAdmittedWritesPerSecond: median(results.filter((r) => r.withA).map((r) => r.a.admittedWrites / plan.seconds)),
    aShareCellWide: share.writes * 3,
    results,
  };
  if (values.json === true) console.log(JSON.stringify(summary, null, 2));
  log(`with A / without A (medians of ${plan.rounds}): B p50 ${summary.ratios.bP50.toFixed(2)}x p99 ${summary.ratios.bP99.toFixed(2)}x; ` +
    `C p50 ${summary.ratios.cP50.toFixed(2)}x p99 ${summary.ratios.cP99.toFixed(2)}x (target p99 <= 2x); leases expired ${summary.leasesExpired}; ` +
    `elections ${summary.elections}; B/C errors ${summary.quietErrors}; A admitted ${summary.aAdmittedWritesPerSecond.toFixed(1)} writes/s of its ${summary.aShareCellWide}/s share`);
}

interface TenantFigures {
  p50: number;
  p99: number;
  ops: number;
  errors: number;
}

interface PhaseResult {
  withA: boolean;
  b: TenantFigures;
  c: TenantFigures;
  leasesExpired: number;
  elections: number;
  a: { admittedWrites: number; byStatus: Record<string, number> };
}

async function phase(urls: string[], withA: boolean, share: { writes: number; reads: number }): Promise<PhaseResult> {
  const termBefore = await term(urls[0] as string);
  const endMs = performance.now() + plan.seconds * 1000;
  const a = { admittedWrites: 0, byStatus: {} as Record<string, number> };
  const [b, c, leasesExpired] = await Promise.all([
    normalMix(urls, 'b', endMs),
    normalMix(urls, 'c', endMs),
    holdLeases(urls, endMs),
    withA ? noisyChild(urls, plan.seconds * 1000, share, a) : Promise.resolve(),
  ]);
  const elections = (await term(urls[0] as string)) - termBefore;
  return { withA, b, c, leasesExpired, elections, a };
}

/** Paced ops of one well-behaved tenant: 60 % puts, 30 % gets, 10 % lock acquire + release. */
async function normalMix(urls: string[], tenant: string, endMs: number): Promise<TenantFigures> {
  const latencies: number[] = [];
  let errors = 0;
  const inFlight: Array<Promise<void>> = [];
  const startMs = performance.now();
  for (let i = 0; ; i++) {
    const due = startMs + (i * 1000) / plan.rate;
    if (due >= endMs) break;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    const url = urls[i % 3] as string;
    const kind = i % 10;
    const op = kind < 6 ? () => put(url, `/${tenant}/k${i % 100}`)
      : kind < 9 ? () => get(url, `/${tenant}/k${(i * 7) % 100}`)
      : () => lockCycle(url, `${tenant}-lock-${i % 4}`);
    inFlight.push((async () => {
      const started = performance.now();
      try {
        await op();
        latencies.push(performance.now() - started);
      } catch {
        errors++;
      }
    })());
  }
  await Promise.all(inFlight);
  latencies.sort((x, y) => x - y);
  const at = (q: number): number => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
  return { p50: at(0.5), p99: at(0.99), ops: latencies.length, errors };
}

/** Leases of B and C (TTL 6 s, the cell's minimum is 5 s) renewed every 2 s; a renewal that finds one gone counts an expiry. */
async function holdLeases(urls: string[], endMs: number): Promise<number> {
  const ids: number[] = [];
  for (let i = 0; i < plan.leasesPerTenant * 2; i++) {
    const answer = await call(urls[i % 3] as string, '/v1/leases', { method: 'POST', body: JSON.stringify({ ttl: plan.leaseTtlSeconds }) });
    ids.push((answer as { id: number }).id);
  }
  let expired = 0;
  let live = [...ids];
  for (let round = 0; performance.now() < endMs; round++) {
    await sleep(2_000);
    try {
      const answer = await call(urls[round % 3] as string, '/v1/leases/keepalive', { method: 'POST', body: JSON.stringify({ ids: live }) }) as { leases: Array<{ id: number; error?: string }> };
      const gone = answer.leases.filter((l) => l.error !== undefined).map((l) => l.id);
      expired += gone.length;
      live = live.filter((id) => !gone.includes(id));
    } catch {
      // A renewal that failed is retried on the next member 2 s later (TTL 6 s).
    }
  }
  await Promise.all(live.map((id) => fetch(`${urls[0]}/v1/leases/${id}`, { method: 'DELETE' }).then((r) => r.text(), () => undefined)));
  return expired;
}

/** Runs `noisy` in a child process for `durationMs`; its counts come back as one message. */
function noisyChild(urls: string[], durationMs: number, share: { writes: number; reads: number }, a: PhaseResult['a']): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(import.meta.url), [], {
      env: { ...process.env, BATON_BENCH_NOISY: JSON.stringify({ urls, durationMs, share }) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    child.once('message', (message) => Object.assign(a, message as PhaseResult['a']));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`the noisy tenant's process exited ${code}`))));
  });
}

/** A: ten times its share of writes and of prefix lists, cell-wide, on a schedule. */
async function noisy(urls: string[], endMs: number, share: { writes: number; reads: number }, a: PhaseResult['a']): Promise<void> {
  const perSecond = 10 * 3 * (share.writes + share.reads);
  const listEvery = Math.max(1, Math.round((share.writes + share.reads) / share.reads));
  const inFlight: Array<Promise<void>> = [];
  const startMs = performance.now();
  for (let i = 0; ; i++) {
    const due = startMs + (i * 1000) / perSecond;
    if (due >= endMs) break;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    const url = urls[i % 3] as string;
    const list = i % listEvery === 0;
    inFlight.push((async () => {
      try {
        const res = list
          ? await fetch(`${url}/v1/kv/a/?prefix=true`, { signal: AbortSignal.timeout(10_000) })
          : await fetch(`${url}/v1/kv/a/n${i % 500}`, { method: 'PUT', body: 'noisy-value', signal: AbortSignal.timeout(10_000) });
        const text = await res.text();
        const key = res.status === 429 ? `429 ${(JSON.parse(text) as { error: { quota?: string; code: string } }).error.quota ?? 'overloaded'}` : String(res.status);
        a.byStatus[key] = (a.byStatus[key] ?? 0) + 1;
        if (!list && (res.status === 200 || res.status === 201)) a.admittedWrites++;
      } catch (error) {
        // No answer: say why (a timeout, a refused or reset connection).
        const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name;
        a.byStatus[`error ${cause}`] = (a.byStatus[`error ${cause}`] ?? 0) + 1;
      }
    })());
    if (inFlight.length > 2_000) await Promise.all(inFlight.splice(0));
  }
  await Promise.all(inFlight);
}

async function lockCycle(url: string, name: string): Promise<void> {
  const lease = await call(url, '/v1/leases', { method: 'POST', body: JSON.stringify({ ttl: 10 }) }) as { id: number };
  const held = await call(url, `/v1/locks/${name}/acquire`, { method: 'POST', body: JSON.stringify({ lease: lease.id, waitMs: 5_000 }) }) as { key: string };
  await call(url, `/v1/locks/${name}/release`, { method: 'POST', body: JSON.stringify({ key: held.key }) });
  await call(url, `/v1/leases/${lease.id}`, { method: 'DELETE' });
}

async function put(url: string, key: string): Promise<void> {
  await call(url, `/v1/kv${key}`, { method: 'PUT', body: 'value' });
}

async function get(url: string, key: string): Promise<void> {
  const res = await fetch(`${url}/v1/kv${key}`, { signal: AbortSignal.timeout(10_000) });
  await res.text();
  if (res.status !== 200 && res.status !== 404) throw new Error(`GET ${key}: ${res.status}`);
}

async function call(url: string, path: string, init: RequestInit = {}): Promise<unknown> {
  const res = await fetch(`${url}${path}`, { ...init, signal: AbortSignal.timeout(10_000) });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${init.method ?? 'GET'} ${path}: ${res.status} ${text}`);
  return text === '' ? null : JSON.parse(text);
}

async function setTenant(url: string, name: string, prefix: string, limits: Record<string, number>): Promise<void> {
  await call(url, `/v1/tenants/${name}`, { method: 'PUT', body: JSON.stringify({ prefixes: [prefix], limits }) });
}

async function term(url: string): Promise<number> {
  return ((await call(url, '/v1/cluster/status')) as { term: number }).term;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const ms = (value: number): string => `${value.toFixed(1)} ms`;

if (noisyRole !== undefined) {
  const { urls, durationMs, share } = JSON.parse(noisyRole) as { urls: string[]; durationMs: number; share: { writes: number; reads: number } };
  const a: PhaseResult['a'] = { admittedWrites: 0, byStatus: {} };
  noisy(urls, performance.now() + durationMs, share, a).then(() => {
    process.send?.(a);
    process.disconnect?.();
  }, (error: unknown) => {
    console.error(error);
    process.exitCode = 1;
    process.disconnect?.();
  });
} else main().then(
  async () => {
    await cell?.stopAll(10_000);
    rmSync(workDir, { recursive: true, force: true });
  },
  async (error: unknown) => {
    console.error(error);
    await cell?.stopAll(10_000);
    rmSync(workDir, { recursive: true, force: true });
    process.exitCode = 1;
  },
);
