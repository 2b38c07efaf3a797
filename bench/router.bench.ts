// `npm run bench:router`: what the router's hop adds (issue 24: <= 0.3 ms at p50 over direct, same
// run). Starts `baton dev --cells 1` (a control plane and cell-1) on free loopback ports and one
// `baton router` process per build (this tree's, and with --baseline-dir DIR a built older tree's)
// in front of it, then times, one request at a time on keep-alive connections, the same request
// sent to cell-1's leader directly and through each router, in turn (the order rotating), so every
// path sees the machine alike: linearizable gets and puts of one key.
//
//   npm run bench:router -- [--requests 2000] [--baseline-dir /tmp/old] [--json]
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { Agent, request } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { table } from '../src/bench/report.js';
import { startDevCells, stopDevCells } from '../src/bench/dev-cells-run.js';

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    requests: { type: 'string' },
    'baseline-dir': { type: 'string' },
    json: { type: 'boolean' },
  },
  strict: true,
});
const requestCount = Number(values.requests ?? 2_000);
for (const [name, n] of [['requests', requestCount]] as const) {
  if (!Number.isSafeInteger(n) || n < 1 || n > 1_000_000) throw new Error(`--${name} takes 1..1000000`);
}
const thisCli = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', 'src', 'cli', 'main.js');

type Kind = 'get' | 'put';

/** One request on `agent`; resolves with its time in ms once the whole answer is read. */
function timed(agent: Agent, url: URL, method: 'GET' | 'PUT', body: string | null): Promise<number> {
  return new Promise((resolveMs, reject) => {
    const started = performance.now();
    const req = request({ host: url.hostname, port: url.port, path: url.pathname, method, agent, timeout: 10_000 }, (res) => {
      res.resume();
      res.on('end', () => {
        if ((res.statusCode ?? 0) >= 300) reject(new Error(`${method} ${url.href}: HTTP ${res.statusCode}`));
        else resolveMs(performance.now() - started);
      });
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end(body ?? undefined);
  });
}

async function leaderOf(endpoints: readonly string[]): Promise<string> {
  for (let attempt = 0; attempt < 50; attempt++) {
    for (const endpoint of endpoints) {
      try {
        const status = (await (await fetch(`${endpoint}/v1/cluster/status`, { signal: AbortSignal.timeout(2_000) })).json()) as {
          leader?: number; members?: { id: number; clientUrl: string }[];
        };
        const leader = status.members?.find((m) => m.id === status.leader)?.clientUrl;
        if (leader !== undefined) return leader;
      } catch {
        // the next member
      }
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('cell-1 has no leader');
}

/** A `baton router` of `cli` on a free port in front of `control`; its URL once it says ready. */
async function startRouter(cli: string, control: string): Promise<{ child: ChildProcess; url: string }> {
  for (let attempt = 0; attempt < 6; attempt++) {
    const port = 40_000 + Math.floor(Math.random() * 10_000);
    const child = spawn(process.execPath, [cli, 'router', '--control', control, '--listen', `http://127.0.0.1:${port}`], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const ready = await new Promise<boolean>((resolveReady) => {
      child.stdout?.on('data', (chunk: Buffer) => {
        out += chunk.toString('utf8');
        if (out.includes('Baton router ready:')) resolveReady(true);
      });
      child.stderr?.resume();
      child.once('exit', () => resolveReady(false));
    });
    if (ready) return { child, url: `http://127.0.0.1:${port}` };
  }
  throw new Error(`baton router (${cli}) did not start`);
}

async function run(routers: readonly [string, string][]): Promise<Map<string, Record<Kind, number[]>>> {
  const scratch = mkdtempSync(join(tmpdir(), 'baton-router-bench-'));
  const dev = await startDevCells({ cli: thisCli, cells: 1, dataDir: scratch });
  const children: ChildProcess[] = [];
  try {
    const cellUrls = (/cell-1=(\S+)/.exec(dev.line)?.[1] ?? '').split(',');
    const control = /control=(\S+)/.exec(dev.line)?.[1] ?? '';
    const leader = await leaderOf(cellUrls);
    const key = '/v1/kv/rb/k';
    const paths: [string, string][] = [['direct', leader]];
    for (const [build, cli] of routers) {
      const router = await startRouter(cli, control);
      children.push(router.child);
      paths.push([`router (${build})`, router.url]);
    }
    // Each router learns the map, then the leader from its status poll (every 2 s).
    for (const [, base] of paths) {
      for (let i = 0; i < 100; i++) {
        const answer = await fetch(`${base}${key}`, { method: 'PUT', body: 'v' }).catch(() => null);
        await answer?.arrayBuffer();
        if (answer?.ok === true) break;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    await new Promise((r) => setTimeout(r, 2_500));
    const targets = paths.map(([name, base]) => ({ name, url: new URL(`${base}${key}`), agent: new Agent({ keepAlive: true, maxSockets: 1 }) }));
    const timings = new Map(targets.map((t) => [t.name, { get: [] as number[], put: [] as number[] }]));
    const prime = Math.min(200, Math.ceil(requestCount / 10));
    for (let i = 0; i < requestCount + prime; i++) {
      // Rotating which goes first, so none always follows another.
      const order = targets.map((_, k) => targets[(i + k) % targets.length] as (typeof targets)[number]);
      for (const kind of ['get', 'put'] as const) {
        for (const target of order) {
          const ms = await timed(target.agent, target.url, kind === 'get' ? 'GET' : 'PUT', kind === 'put' ? `v${i}` : null);
          if (i >= prime) timings.get(target.name)?.[kind].push(ms);
        }
      }
    }
    for (const target of targets) target.agent.destroy();
    return timings;
  } finally {
    for (const child of children) {
      child.kill('SIGTERM');
      if (child.exitCode === null) await once(child, 'exit');
    }
    await stopDevCells(dev);
    rmSync(scratch, { recursive: true, force: true });
  }
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number;
}

const routers: [string, string][] = [
  ['this', thisCli],
  ...(values['baseline-dir'] !== undefined ? [['baseline', join(values['baseline-dir'], 'dist/src/cli/main.js')] as [string, string]] : []),
];
const loadBefore = loadavg()[0] as number;
const timings = await run(routers);
const loadAfter = loadavg()[0] as number;
const direct = timings.get('direct') as Record<Kind, number[]>;
const rows: string[][] = [];
const figures: Record<string, unknown>[] = [];
for (const [name, measured] of timings) {
  for (const kind of ['get', 'put'] as const) {
    const p50 = percentile(measured[kind], 50);
    const added = p50 - percentile(direct[kind], 50);
    figures.push({ path: name, kind, requests: measured[kind].length, p50, p99: percentile(measured[kind], 99), addedP50: added });
    rows.push([name, kind, String(measured[kind].length), p50.toFixed(3), name === 'direct' ? '' : added.toFixed(3), percentile(measured[kind], 99).toFixed(3)]);
  }
}
if (values.json) {
  process.stdout.write(`${JSON.stringify({ loadBefore, loadAfter, figures })}\n`);
} else {
  process.stdout.write(`${table(['path', 'op', 'n', 'p50', 'added p50', 'p99'], rows)}\n`);
  process.stdout.write(`ms; one request at a time per path, keep-alive, paths in turn; load average ${loadBefore.toFixed(1)} before, ${loadAfter.toFixed(1)} after\n`);
}
