// `npm run bench:peak` (issue 31, run 4): the highest mixed read/write rate a cell sustains, with
// requests pipelined over /v1/stream connections as a client library sends them (many requests
// in flight on one connection, answers matched by id), spread over the members. Each step raises
// the requests in flight per connection; a step reports operations/s by kind, p50/p99 per kind,
// refusals by code, and the CPU of every process (each member, the router, this client), so the
// limit is named: the process whose CPU is saturated, or the machine's 2 cores when all of them
// together are.
//
// Targets (--targets, default `cell,router1,router`):
//   cell     one 3-member cell, connections spread over its members;
//   router   `baton dev --cells 2` (a control plane, two 3-member cells, the router): half of the
//            keys in /peak-b/ (a namespace created on cell-2), half under the root (cell-1), every
//            request through the router: over its stream when it serves one, else (--router-http)
//            one HTTP request per operation on keep-alive connections;
//   router1  the same with one data cell (`--cells 1`, every key under the root): 2 cells vs 1
//            under the same offered load, both through the router.
//
//   npm run bench:peak -- [--seconds 10] [--connections 12] [--in-flight 1,4,16,64]
//                         [--mix get-s:40,get-l:20,put:30,txn:10] [--keys 10000] [--json FILE]
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { cpuSeconds, findPids } from '../src/bench/proc-cpu.js';
import { LatencyHistogram } from '../src/bench/histogram.js';
import { httpJson, startInspectableCell } from '../src/bench/inspectable-cell.js';
import { startDevCells, stopDevCells } from '../src/bench/dev-cells-run.js';
import { StreamClient } from '../src/bench/stream-client.js';
import { table } from '../src/bench/report.js';

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    seconds: { type: 'string' },
    connections: { type: 'string' },
    'in-flight': { type: 'string' },
    mix: { type: 'string' },
    keys: { type: 'string' },
    targets: { type: 'string' },
    'router-http': { type: 'boolean' },
    json: { type: 'string' },
  },
  strict: true,
});
const seconds = Number(values.seconds ?? 10);
const connections = Number(values.connections ?? 12);
const inFlightSteps = (values['in-flight'] ?? '1,4,16,64').split(',').map(Number);
const keyCount = Number(values.keys ?? 10_000);
const targets = (values.targets ?? 'cell,router1,router').split(',');
for (const [name, value] of Object.entries({ seconds, connections, keyCount })) {
  if (!(Number.isInteger(value) && value > 0)) throw new Error(`--${name} takes a positive integer`);
}
if (!inFlightSteps.every((n) => Number.isInteger(n) && n > 0 && n <= 1_000)) throw new Error('--in-flight takes integers 1..1000');
for (const target of targets) if (!['cell', 'router', 'router1'].includes(target)) throw new Error(`--targets: unknown ${target} (cell, router1, router)`);

const kinds = ['get-s', 'get-l', 'put', 'txn'] as const;
type Kind = (typeof kinds)[number];
const mix = parseMix(values.mix ?? 'get-s:40,get-l:20,put:30,txn:10');

function parseMix(text: string): { kind: Kind; upTo: number }[] {
  const parts = text.split(',').map((part) => {
    const [kind, weight] = part.split(':');
    if (!kinds.includes(kind as Kind) || !(Number(weight) > 0)) throw new Error(`--mix: "${part}" is not kind:weight (${kinds.join(', ')})`);
    return { kind: kind as Kind, weight: Number(weight) };
  });
  const total = parts.reduce((sum, p) => sum + p.weight, 0);
  let upTo = 0;
  return parts.map((p) => ({ kind: p.kind, upTo: (upTo += p.weight / total) }));
}

const log = (line: string): void => void process.stderr.write(`${line}\n`);
const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));
const thisCli = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', 'src', 'cli', 'main.js');
const value = 'v'.repeat(256);

/** One operation's answer: null when it succeeded, else the refusal's code. */
type Send = (frame: Record<string, unknown>) => Promise<string | null>;

/** A connection a load loop sends on: the stream (pipelined frames) or HTTP keep-alive. */
interface Connection {
  readonly send: Send;
  close(): void;
}

async function streamConnection(base: string): Promise<Connection> {
  const client = await StreamClient.open(base);
  return {
    send: (frame) => client.call(frame).then(() => null, (error: Error) => codeOf(error.message)),
    close: () => client.close(),
  };
}

/** The same operations as HTTP requests (the router without a stream). */
function httpConnection(base: string, agent: Agent): Connection {
  const send: Send = async (frame) => {
    const key = String(frame['key'] ?? '');
    const path = `/v1/kv${key}`;
    const res = frame['type'] === 'get'
      ? await httpJson(agent, base, 'GET', `${path}?consistency=${String(frame['consistency'])}`)
      : frame['type'] === 'put'
        ? await httpJson(agent, base, 'PUT', path, String(frame['value']))
        : await httpJson(agent, base, 'POST', '/v1/txn', { compare: frame['compare'], success: frame['success'], failure: frame['failure'] });
    return res.status < 300 ? null : String(res.body?.error?.code ?? res.status);
  };
  return { send, close: () => undefined };
}

function codeOf(message: string): string {
  try {
    return String((JSON.parse(message) as { code?: string }).code ?? 'error');
  } catch {
    return message.slice(0, 40);
  }
}

const keyOf = (prefixes: readonly string[], n: number): string => `${prefixes[n % prefixes.length]}k${n}`;

function frameFor(kind: Kind, key: string): Record<string, unknown> {
  switch (kind) {
    case 'get-s': return { type: 'get', key, consistency: 'serializable' };
    case 'get-l': return { type: 'get', key, consistency: 'linearizable' };
    case 'put': return { type: 'put', key, value };
    case 'txn': return {
      type: 'txn',
      compare: [{ key, target: 'version', op: '>', value: 0 }],
      success: [{ put: { key, value } }],
      failure: [{ get: { key } }],
    };
  }
}

interface StepResult {
  inFlight: number;
  opsPerS: number;
  byKind: Record<string, { perS: number; p50Ms: number; p99Ms: number }>;
  refused: Record<string, number>;
  cpu: Record<string, number>;
  limit: string;
}

/** One step: every connection keeps `inFlight` requests going for --seconds. */
async function step(conns: readonly Connection[], prefixes: readonly string[], inFlight: number, processes: Map<string, number[]>): Promise<StepResult> {
  const histograms = new Map(kinds.map((k) => [k, new LatencyHistogram()]));
  const refused: Record<string, number> = {};
  let running = true;
  const cpuStart = new Map([...processes].map(([name, pids]) => [name, cpuSeconds(pids)]));
  const clientStart = process.cpuUsage();
  const started = performance.now();
  const loops = conns.flatMap((conn) => Array.from({ length: inFlight }, async () => {
    while (running) {
      const roll = Math.random();
      const kind = (mix.find((m) => roll < m.upTo) ?? mix[mix.length - 1])!.kind;
      const sentAt = performance.now();
      const code = await conn.send(frameFor(kind, keyOf(prefixes, Math.floor(Math.random() * keyCount))));
      if (code === null) histograms.get(kind)!.record((performance.now() - sentAt) * 1000);
      else {
        refused[code] = (refused[code] ?? 0) + 1;
        await sleep(5);
      }
    }
  }));
  await sleep(seconds * 1000);
  running = false;
  const tookS = (performance.now() - started) / 1000;
  await Promise.all(loops);
  const client = process.cpuUsage(clientStart);
  const cpu: Record<string, number> = { client: (client.user + client.system) / 1e6 / tookS };
  for (const [name, pids] of processes) cpu[name] = (cpuSeconds(pids) - (cpuStart.get(name) as number)) / tookS;
  const byKind: StepResult['byKind'] = {};
  let ops = 0;
  for (const [kind, h] of histograms) {
    const s = h.summary();
    if (s.count === 0) continue;
    ops += s.count;
    byKind[kind] = { perS: s.count / tookS, p50Ms: s.p50Us / 1000, p99Ms: s.p99Us / 1000 };
  }
  const single = new Set(['client', ...[...processes].filter(([, pids]) => pids.length === 1).map(([name]) => name)]);
  return { inFlight, opsPerS: ops / tookS, byKind, refused, cpu, limit: limitOf(cpu, single) };
}

/**
 * What limits a step: one process at a full core (Node runs JS on one thread), else the
 * machine's cores. `single`: the names that are one process (a cell's row sums three).
 */
function limitOf(cpu: Record<string, number>, single: ReadonlySet<string>): string {
  const total = Object.values(cpu).reduce((a, b) => a + b, 0);
  const [top, topCores] = Object.entries(cpu).sort((a, b) => b[1] - a[1])[0] as [string, number];
  const [topSingle, topSingleCores] = Object.entries(cpu).filter(([n]) => single.has(n)).sort((a, b) => b[1] - a[1])[0] ?? ['', 0];
  if (topSingleCores >= 0.9) return `${topSingle} at ${topSingleCores.toFixed(2)} cores (one JS thread)`;
  if (total >= 1.8) return `the machine: ${total.toFixed(2)} of 2 cores in use (${top} the largest, ${topCores.toFixed(2)})`;
  return `none saturated (${total.toFixed(2)} cores in use): latency-bound at this depth`;
}

async function preload(conns: readonly Connection[], prefixes: readonly string[]): Promise<void> {
  let next = 0;
  await Promise.all(conns.flatMap((conn) => Array.from({ length: 8 }, async () => {
    while (next < keyCount) {
      const n = next++;
      const code = await conn.send({ type: 'put', key: keyOf(prefixes, n), value });
      if (code !== null) throw new Error(`preloading ${keyOf(prefixes, n)}: ${code}`);
    }
  })));
}

async function runSteps(label: string, conns: readonly Connection[], prefixes: readonly string[], processes: Map<string, number[]>): Promise<StepResult[]> {
  await preload(conns, prefixes);
  const results: StepResult[] = [];
  for (const inFlight of inFlightSteps) {
    const result = await step(conns, prefixes, inFlight, processes);
    results.push(result);
    log(`${label}: ${conns.length} connections x ${inFlight} in flight: ${result.opsPerS.toFixed(0)} ops/s (` +
      Object.entries(result.byKind).map(([k, v]) => `${k} ${v.perS.toFixed(0)}/s p50 ${v.p50Ms.toFixed(1)} p99 ${v.p99Ms.toFixed(1)} ms`).join('; ') +
      `); refused ${JSON.stringify(result.refused)}; CPU cores ${Object.entries(result.cpu).map(([n, c]) => `${n} ${c.toFixed(2)}`).join(', ')}; ` +
      `limit: ${result.limit}; load ${loadavg()[0]?.toFixed(1)}`);
  }
  return results;
}

async function leaderOf(base: string): Promise<string> {
  const agent = new Agent({ keepAlive: false });
  try {
    for (let i = 0; i < 100; i++) {
      const status = (await httpJson(agent, base, 'GET', '/v1/cluster/status')).body as { leader?: number };
      if ((status.leader ?? 0) !== 0) return `n${status.leader}`;
      await sleep(100);
    }
  } finally {
    agent.destroy();
  }
  throw new Error(`no leader at ${base}`);
}

async function cellTarget(): Promise<StepResult[]> {
  const { cell, dataDir, names } = await startInspectableCell('baton-peak-');
  const conns: Connection[] = [];
  try {
    await cell.waitReady(60_000);
    const leader = await leaderOf(cell.clientUrl('n1'));
    const processes = new Map(names.map((name) => [name === leader ? `${name} (leader)` : name, findPids(join(dataDir, name))]));
    for (let c = 0; c < connections; c++) conns.push(await streamConnection(cell.clientUrl(names[c % names.length] as string)));
    return await runSteps('one cell, stream', conns, ['/peak/'], processes);
  } finally {
    for (const conn of conns) conn.close();
    await cell.stopAll();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function routerTarget(cells: 1 | 2): Promise<{ transport: string; steps: StepResult[] }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'baton-peak-router-'));
  const run = await startDevCells({ cli: thisCli, cells, dataDir });
  const conns: Connection[] = [];
  const agent = new Agent({ keepAlive: true, maxSockets: connections * Math.max(...inFlightSteps) });
  try {
    const routerUrl = /router (\S+)/.exec(run.line)?.[1] as string;
    const created = await httpJson(agent, routerUrl, 'POST', '/v1/control/namespaces', { prefix: '/peak-b/', cell: `cell-${cells}` });
    if (created.status !== 200) throw new Error(`creating /peak-b/: ${created.status} ${JSON.stringify(created.body).slice(0, 200)}`);
    for (let i = 0; i < 100; i++) {
      const status = (await httpJson(agent, routerUrl, 'GET', '/v1/cluster/status')).body as { namespaces?: { prefix: string }[] };
      if (status.namespaces?.some((n) => n.prefix === '/peak-b/')) break;
      await sleep(100);
    }
    // Each cell's members (their command lines hold its data dir), the control plane, the router (the dev process).
    const processes = new Map<string, number[]>();
    for (const id of ['control', 'cell-1', 'cell-2'].slice(0, cells + 1)) processes.set(id, findPids(join(dataDir, String(run.base), id)));
    processes.set('router', [run.child.pid as number]);
    let transport = 'http';
    if (values['router-http'] !== true) {
      try {
        conns.push(await streamConnection(routerUrl));
        transport = 'stream';
      } catch (error) {
        log(`the router does not serve /v1/stream (${(error as Error).message}): HTTP requests instead`);
      }
    }
    while (conns.length < connections) conns.push(transport === 'stream' ? await streamConnection(routerUrl) : httpConnection(routerUrl, agent));
    return { transport, steps: await runSteps(`router over ${cells} cell${cells === 1 ? '' : 's'}, ${transport}`, conns, ['/peak-a/', '/peak-b/'], processes) };
  } finally {
    for (const conn of conns) conn.close();
    agent.destroy();
    await stopDevCells(run);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const report: Record<string, unknown> = { seconds, connections, inFlightSteps, mix: values.mix ?? 'get-s:40,get-l:20,put:30,txn:10', keyCount };
const rows: string[][] = [];
const addRows = (label: string, steps: readonly StepResult[]): void => {
  for (const s of steps) rows.push([label, String(s.inFlight), s.opsPerS.toFixed(0), ...kinds.map((k) => s.byKind[k] === undefined ? '-' : `${s.byKind[k].p99Ms.toFixed(1)}`), s.limit]);
};
if (targets.includes('cell')) {
  const steps = await cellTarget();
  report['cell'] = steps;
  addRows('one cell', steps);
}
for (const [target, cells] of [['router1', 1], ['router', 2]] as const) {
  if (!targets.includes(target)) continue;
  const { transport, steps } = await routerTarget(cells);
  report[target] = { transport, cells, steps };
  addRows(`router, ${cells} cell${cells === 1 ? '' : 's'} (${transport})`, steps);
}
process.stdout.write(`${table(['target', 'in flight/conn', 'ops/s', ...kinds.map((k) => `${k} p99 ms`), 'limit'], rows)}\n`);
if (values.json !== undefined) writeFileSync(values.json, `${JSON.stringify(report, null, 2)}\n`);
