// `npm run bench:watch`: watch delivery on a real 3-process Baton cell. Watchers live on one
// follower, opened over the multiplexed stream (1,000 per WebSocket); puts go to the leader. For
// each put: latency from the put's acknowledgement to each watcher's receipt of the event (p50,
// p99 over all deliveries) and to the last watcher's receipt ("all delivered", as etcd's figure
// in field-notes.md). Watchers on one key (fan-out of each event to all) and on distinct keys
// (each put reaches one watcher among N). Memory per idle watcher: the serving node's anonymous
// RSS growth per watcher, and the hub's own heap per watcher in-process (with --expose-gc).
//
//   npm run bench:watch                 1K and 10K watchers
//   npm run bench:watch -- --100k       also 100K
//   npm run bench:watch -- --puts N     puts per configuration (default 40; fewer at 10K+ on one key)
// The etcd comparison (same client design over etcd's JSON gateway) is not in this bench yet.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { freePorts } from '../src/bench/ports.js';
import { findPids } from '../src/bench/proc-cpu.js';
import { MemoryEngine, MvccStore } from '../src/mvcc/index.js';
import { ProcessCell } from '../src/server/process-cell.js';
import { WatchHub, defaultWatchLimits } from '../src/watch/index.js';

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: { '100k': { type: 'boolean' }, puts: { type: 'string' } },
  strict: true,
});
const sizes = values['100k'] === true ? [1000, 10_000, 100_000] : [1000, 10_000];
const putsDefault = Number(values.puts ?? 40);
const perConnection = 1000;

const log = (line: string): void => void process.stderr.write(`${line}\n`);

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] as number;
}

function rssAnonKiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/RssAnon:\s+(\d+)/.exec(status)?.[1] ?? NaN);
}

/** Receipt times of events by revision, across every watcher. */
class Receipts {
  private readonly byRevision = new Map<number, number[]>();
  created = 0;
  record(revision: number, at: number): void {
    let list = this.byRevision.get(revision);
    if (list === undefined) this.byRevision.set(revision, (list = []));
    list.push(at);
  }
  take(revision: number): number[] {
    const list = this.byRevision.get(revision) ?? [];
    this.byRevision.delete(revision);
    return list;
  }
  count(revision: number): number {
    return this.byRevision.get(revision)?.length ?? 0;
  }
}

async function openStreams(url: string, count: number, receipts: Receipts): Promise<WebSocket[]> {
  const sockets: WebSocket[] = [];
  for (let i = 0; i < count; i++) {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    ws.on('message', (data) => {
      const at = performance.now();
      const frame = JSON.parse(String(data)) as { type: string; revision?: number; events?: unknown[]; error?: unknown };
      if (frame.type === 'events' && (frame.events?.length ?? 0) > 0) receipts.record(frame.revision as number, at);
      else if (frame.type === 'created') receipts.created++;
      else if (frame.type === 'error') log(`stream error: ${JSON.stringify(frame)}`);
    });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    sockets.push(ws);
  }
  return sockets;
}

async function until(predicate: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!predicate()) {
    if (performance.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

async function put(leaderUrl: string, key: string, value: string): Promise<number> {
  const res = await fetch(`${leaderUrl}/v1/kv${key}`, { method: 'PUT', body: value });
  const body = (await res.json()) as { revision: number };
  if (!res.ok) throw new Error(`put ${res.status} ${JSON.stringify(body)}`);
  return body.revision;
}

interface Result {
  readonly config: string;
  readonly deliveries: number;
  readonly p50: number;
  readonly p99: number;
  readonly allP50: number;
  readonly allP99: number;
}

async function runConfig(options: {
  leaderUrl: string;
  streamUrl: string;
  watchers: number;
  distinct: boolean;
  puts: number;
  servingPid: number;
}): Promise<{ result: Result; idleBytesPerWatcher: number }> {
  const { watchers, distinct } = options;
  const receipts = new Receipts();
  const rssBefore = rssAnonKiB(options.servingPid);
  const sockets = await openStreams(options.streamUrl, Math.ceil(watchers / perConnection), receipts);
  const prefix = `/bench/${distinct ? 'k' : 'one'}/${watchers}`;
  for (let i = 0; i < watchers; i++) {
    const ws = sockets[Math.floor(i / perConnection)] as WebSocket;
    ws.send(JSON.stringify({ id: i, type: 'watch', key: distinct ? `${prefix}/${i}` : prefix }));
  }
  await until(() => receipts.created === watchers, 120_000, `${watchers} watches created`);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const idleBytesPerWatcher = ((rssAnonKiB(options.servingPid) - rssBefore) * 1024) / watchers;
  const perDelivery: number[] = [];
  const allDelivered: number[] = [];
  for (let p = 0; p < options.puts; p++) {
    const key = distinct ? `${prefix}/${(p * 7919) % watchers}` : prefix;
    const revision = await put(options.leaderUrl, key, `v${p}`);
    const acked = performance.now();
    const expected = distinct ? 1 : watchers;
    await until(() => receipts.count(revision) >= expected, 60_000, `deliveries of revision ${revision}`);
    const times = receipts.take(revision);
    let last = 0;
    for (const at of times) {
      // The follower may deliver before the leader's acknowledgement reaches the client: 0.
      const latency = Math.max(0, at - acked);
      perDelivery.push(latency);
      last = Math.max(last, latency);
    }
    allDelivered.push(last);
  }
  for (const ws of sockets) ws.close();
  await new Promise((resolve) => setTimeout(resolve, 500));
  perDelivery.sort((a, b) => a - b);
  allDelivered.sort((a, b) => a - b);
  const config = `${watchers.toLocaleString('en')} watchers, ${distinct ? 'distinct keys' : 'one key'}`;
  return {
    result: {
      config,
      deliveries: perDelivery.length,
      p50: percentile(perDelivery, 0.5),
      p99: percentile(perDelivery, 0.99),
      allP50: percentile(allDelivered, 0.5),
      allP99: percentile(allDelivered, 0.99),
    },
    idleBytesPerWatcher,
  };
}

/** The hub's own heap per watcher (distinct keys, one group each), in-process. */
function hubHeapPerWatcher(count: number): number | null {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) return null;
  const hub = new WatchHub<{ id: number }>(new MvccStore(new MemoryEngine()), {
    ...defaultWatchLimits,
    watchersPerNodeMax: count,
  });
  gc();
  const before = process.memoryUsage().heapUsed;
  const connections = Array.from({ length: Math.ceil(count / perConnection) }, () => hub.openConnection(() => {}));
  const keep = [];
  for (let i = 0; i < count; i++) {
    const spec = { key: `/bench/k/${count}/${i}`, prefix: false, startRevision: 0, prevKv: false, filter: 'all', encoding: 'utf8' } as const;
    keep.push(hub.create(connections[Math.floor(i / perConnection)]!, { id: i }, spec));
  }
  gc();
  const after = process.memoryUsage().heapUsed;
  return (after - before) / count;
}

async function main(): Promise<void> {
  const workDir = mkdtempSync(join(tmpdir(), 'baton-watch-bench-'));
  const ports = await freePorts(6);
  const members = [0, 1, 2].map((i) => ({ name: `n${i + 1}`, clientPort: ports[i] as number, peerPort: ports[3 + i] as number }));
  process.env['BATON_WATCH_PER_NODE_MAX'] = String(Math.max(...sizes) * 2);
  const cell = new ProcessCell({ dataDir: workDir, members, extraArgs: ['--tick-ms', '50', '--election-ticks', '10'] });
  const stop = async (): Promise<void> => {
    await cell.stopAll();
    rmSync(workDir, { recursive: true, force: true });
  };
  process.once('SIGINT', () => void stop().then(() => process.exit(130)));
  try {
    cell.startAll();
    await cell.waitReady(60_000);
    const status = (await (await fetch(`${cell.clientUrl('n1')}/v1/cluster/status`)).json()) as { leader: number };
    const leader = `n${status.leader}`;
    const serving = members.map((m) => m.name).find((n) => n !== leader) as string;
    const servingPid = findPids(join(workDir, serving))[0] as number;
    log(`cell ready: leader ${leader}, watchers on ${serving} (pid ${servingPid})`);
    const results: Result[] = [];
    const idle: string[] = [];
    for (const watchers of sizes) {
      for (const distinct of [false, true]) {
        const puts = distinct ? putsDefault * 2 : watchers >= 10_000 ? Math.max(5, putsDefault / 4) : putsDefault;
        log(`running ${watchers} watchers, ${distinct ? 'distinct keys' : 'one key'}, ${puts} puts`);
        const run = await runConfig({
          leaderUrl: cell.clientUrl(leader),
          streamUrl: `${cell.clientUrl(serving).replace('http', 'ws')}/v1/stream`,
          watchers,
          distinct,
          puts,
          servingPid,
        });
        results.push(run.result);
        if (distinct) idle.push(`${watchers.toLocaleString('en')}: ${run.idleBytesPerWatcher.toFixed(0)} B`);
      }
    }
    const heap = hubHeapPerWatcher(100_000);
    console.log('\nwatch delivery, put ack -> receipt (ms)');
    console.log('config                              deliveries   p50      p99      all-delivered p50   p99');
    for (const r of results) {
      console.log(
        `${r.config.padEnd(36)}${String(r.deliveries).padStart(10)}  ${r.p50.toFixed(1).padStart(7)}  ${r.p99.toFixed(1).padStart(7)}  ` +
          `${r.allP50.toFixed(1).padStart(17)}  ${r.allP99.toFixed(1).padStart(7)}`,
      );
    }
    console.log(`\nmemory per idle watcher (serving node RssAnon growth / watchers, distinct keys): ${idle.join(', ')}`);
    console.log(heap === null
      ? 'hub heap per watcher: run with node --expose-gc to measure'
      : `hub heap per watcher (in-process, 100,000 distinct keys): ${heap.toFixed(0)} B`);
    console.log('etcd comparison: not measured by this bench');
  } finally {
    await stop();
  }
}

await main();
