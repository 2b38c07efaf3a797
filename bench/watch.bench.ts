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
//   npm run bench:watch -- --etcd       also etcd 3.4 at 1K and 10K, same run, and the ratios
// etcd's JSON gateway (Go 1.19 HTTP/1.1, no full duplex) takes one watch per HTTP request, so its
// client holds one connection per watcher where Baton's multiplexes 1,000 per WebSocket; the
// measurement (ack -> receipt on a follower, puts to the leader) is the same.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Agent, request, type ClientRequest } from 'node:http';
import WebSocket from 'ws';
import { EtcdCell, etcdInstallHint, etcdVersion } from '../src/bench/etcd-cell.js';
import { freePorts } from '../src/bench/ports.js';
import { findPids } from '../src/bench/proc-cpu.js';
import { MemoryEngine, MvccStore } from '../src/mvcc/index.js';
import { ProcessCell } from '../src/node/testing/process-cell.js';
import { WatchHub, defaultWatchLimits } from '../src/watch/index.js';

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: { '100k': { type: 'boolean' }, puts: { type: 'string' }, etcd: { type: 'boolean' } },
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

/** A system under test: where watchers are opened and puts go. */
interface Target {
  readonly name: string;
  readonly servingPid: number;
  /** Opens `count` watchers, watcher i on keyOf(i); resolves once all are created. */
  openWatchers(count: number, keyOf: (i: number) => string, receipts: Receipts): Promise<() => void>;
  put(key: string, value: string): Promise<number>;
}

function batonTarget(leaderUrl: string, servingUrl: string, servingPid: number): Target {
  return {
    name: 'baton',
    servingPid,
    async openWatchers(count, keyOf, receipts) {
      const sockets: WebSocket[] = [];
      for (let i = 0; i < Math.ceil(count / perConnection); i++) {
        const ws = new WebSocket(`${servingUrl.replace('http', 'ws')}/v1/stream`, { perMessageDeflate: false });
        ws.on('message', (data) => {
          const at = performance.now();
          const frame = JSON.parse(String(data)) as { type: string; revision?: number; events?: unknown[] };
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
      for (let i = 0; i < count; i++) {
        const ws = sockets[Math.floor(i / perConnection)] as WebSocket;
        ws.send(JSON.stringify({ id: i, type: 'watch', key: keyOf(i) }));
      }
      await until(() => receipts.created === count, 120_000, `${count} watches created`);
      return () => sockets.forEach((ws) => ws.close());
    },
    async put(key, value) {
      const res = await fetch(`${leaderUrl}/v1/kv${key}`, { method: 'PUT', body: value });
      const body = (await res.json()) as { revision: number };
      if (!res.ok) throw new Error(`put ${res.status} ${JSON.stringify(body)}`);
      return body.revision;
    },
  };
}

const b64 = (text: string): string => Buffer.from(text).toString('base64');

function etcdTarget(leaderUrl: string, servingUrl: string, servingPid: number): Target {
  const agent = new Agent({ keepAlive: false, maxSockets: Infinity });
  const served = new URL(servingUrl);
  return {
    name: 'etcd',
    servingPid,
    async openWatchers(count, keyOf, receipts) {
      const requests: ClientRequest[] = [];
      for (let i = 0; i < count; i++) {
        const req = request({
          host: served.hostname, port: Number(served.port), path: '/v3/watch', method: 'POST', agent,
          headers: { 'content-type': 'application/json' },
        }, (res) => {
          res.setEncoding('utf8');
          let buffered = '';
          res.on('data', (chunk: string) => {
            const at = performance.now();
            buffered += chunk;
            for (let end = buffered.indexOf('\n'); end >= 0; end = buffered.indexOf('\n')) {
              const line = buffered.slice(0, end);
              buffered = buffered.slice(end + 1);
              if (line.trim() === '') continue;
              const result = (JSON.parse(line) as { result?: { created?: boolean; events?: { kv: { mod_revision: string } }[] } }).result;
              if (result?.created === true) receipts.created++;
              const first = result?.events?.[0];
              if (first !== undefined) receipts.record(Number(first.kv.mod_revision), at);
            }
          });
          res.on('error', () => {});
        });
        req.on('error', (error) => log(`etcd watch: ${error.message}`));
        req.end(JSON.stringify({ create_request: { key: b64(keyOf(i)) } }));
        requests.push(req);
        if (i % 500 === 499) await new Promise((resolve) => setTimeout(resolve, 10));
      }
      await until(() => receipts.created === count, 180_000, `${count} etcd watches created`);
      return () => {
        for (const req of requests) req.destroy();
        agent.destroy();
      };
    },
    async put(key, value) {
      const res = await fetch(`${leaderUrl}/v3/kv/put`, { method: 'POST', body: JSON.stringify({ key: b64(key), value: b64(value) }) });
      const body = (await res.json()) as { header: { revision: string } };
      if (!res.ok) throw new Error(`etcd put ${res.status} ${JSON.stringify(body)}`);
      return Number(body.header.revision);
    },
  };
}

async function until(predicate: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!predicate()) {
    if (performance.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

interface Result {
  readonly system: string;
  readonly config: string;
  readonly deliveries: number;
  readonly p50: number;
  readonly p99: number;
  readonly allP50: number;
  readonly allP99: number;
  readonly idleBytesPerWatcher: number;
}

async function runConfig(target: Target, options: { watchers: number; distinct: boolean; puts: number }): Promise<Result> {
  const { watchers, distinct } = options;
  const receipts = new Receipts();
  const rssBefore = rssAnonKiB(target.servingPid);
  const prefix = `/bench/${distinct ? 'k' : 'one'}/${watchers}`;
  const close = await target.openWatchers(watchers, (i) => (distinct ? `${prefix}/${i}` : prefix), receipts);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const idleBytesPerWatcher = ((rssAnonKiB(target.servingPid) - rssBefore) * 1024) / watchers;
  const perDelivery: number[] = [];
  const allDelivered: number[] = [];
  try {
    for (let p = 0; p < options.puts; p++) {
      const key = distinct ? `${prefix}/${(p * 7919) % watchers}` : prefix;
      const revision = await target.put(key, `v${p}`);
      const acked = performance.now();
      const expected = distinct ? 1 : watchers;
      await until(() => receipts.count(revision) >= expected, 60_000, `deliveries of revision ${revision}`);
      let last = 0;
      for (const at of receipts.take(revision)) {
        // The follower may deliver before the leader's acknowledgement reaches the client: 0.
        const latency = Math.max(0, at - acked);
        perDelivery.push(latency);
        last = Math.max(last, latency);
      }
      allDelivered.push(last);
    }
  } finally {
    close();
  }
  await new Promise((resolve) => setTimeout(resolve, 500));
  perDelivery.sort((a, b) => a - b);
  allDelivered.sort((a, b) => a - b);
  return {
    system: target.name,
    config: `${watchers.toLocaleString('en')} watchers, ${distinct ? 'distinct keys' : 'one key'}`,
    deliveries: perDelivery.length,
    p50: percentile(perDelivery, 0.5),
    p99: percentile(perDelivery, 0.99),
    allP50: percentile(allDelivered, 0.5),
    allP99: percentile(allDelivered, 0.99),
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
  const connections = Array.from({ length: Math.ceil(count / perConnection) }, () => hub.openConnection(() => {}, () => true));
  const keep = [];
  for (let i = 0; i < count; i++) {
    const spec = { key: `/bench/k/${count}/${i}`, prefix: false, startRevision: 0, prevKv: false, filter: 'all', encoding: 'utf8' } as const;
    keep.push(hub.create(connections[Math.floor(i / perConnection)]!, { id: i }, spec));
  }
  gc();
  const after = process.memoryUsage().heapUsed;
  return (after - before) / count;
}

function putsFor(watchers: number, distinct: boolean): number {
  return distinct ? putsDefault * 2 : watchers >= 10_000 ? Math.max(5, putsDefault / 4) : putsDefault;
}

async function runAll(target: Target, watcherCounts: readonly number[]): Promise<Result[]> {
  const results: Result[] = [];
  for (const watchers of watcherCounts) {
    for (const distinct of [false, true]) {
      const puts = putsFor(watchers, distinct);
      log(`${target.name}: ${watchers} watchers, ${distinct ? 'distinct keys' : 'one key'}, ${puts} puts`);
      results.push(await runConfig(target, { watchers, distinct, puts }));
    }
  }
  return results;
}

async function withBaton(workDir: string, run: (target: Target) => Promise<Result[]>): Promise<Result[]> {
  const ports = await freePorts(6);
  const members = [0, 1, 2].map((i) => ({ name: `n${i + 1}`, clientPort: ports[i] as number, peerPort: ports[3 + i] as number }));
  process.env['BATON_WATCH_PER_NODE_MAX'] = String(Math.max(...sizes) * 2);
  const dataDir = join(workDir, 'baton');
  const cell = new ProcessCell({ dataDir, members, extraArgs: ['--tick-ms', '50', '--election-ticks', '10'] });
  try {
    cell.startAll();
    await cell.waitReady(60_000);
    const status = (await (await fetch(`${cell.clientUrl('n1')}/v1/cluster/status`)).json()) as { leader: number };
    const leader = `n${status.leader}`;
    const serving = members.map((m) => m.name).find((n) => n !== leader) as string;
    const servingPid = findPids(join(dataDir, serving))[0] as number;
    log(`baton ready: leader ${leader}, watchers on ${serving} (pid ${servingPid})`);
    return await run(batonTarget(cell.clientUrl(leader), cell.clientUrl(serving), servingPid));
  } finally {
    await cell.stopAll();
  }
}

async function withEtcd(workDir: string, run: (target: Target) => Promise<Result[]>): Promise<Result[]> {
  const ports = await freePorts(6);
  const members = [0, 1, 2].map((i) => ({ name: `e${i + 1}`, clientPort: ports[i] as number, peerPort: ports[3 + i] as number }));
  const dataDir = join(workDir, 'etcd');
  const cell = new EtcdCell(dataDir, members);
  try {
    cell.startAll();
    await cell.waitReady(60_000);
    const urls = cell.clientUrls().map((u) => u.origin);
    const statuses = await Promise.all(urls.map(async (u) =>
      (await (await fetch(`${u}/v3/maintenance/status`, { method: 'POST', body: '{}' })).json()) as { leader: string; header: { member_id: string } }));
    const leaderIndex = statuses.findIndex((s) => s.leader === s.header.member_id);
    const servingIndex = leaderIndex === 0 ? 1 : 0;
    const servingPid = findPids(join(dataDir, members[servingIndex]!.name))[0] as number;
    log(`etcd ready: leader ${members[leaderIndex]?.name}, watchers on ${members[servingIndex]?.name} (pid ${servingPid})`);
    return await run(etcdTarget(urls[leaderIndex] as string, urls[servingIndex] as string, servingPid));
  } finally {
    await cell.stopAll();
  }
}

function printResults(results: readonly Result[]): void {
  console.log('\nwatch delivery on a follower, put ack -> receipt (ms); idle memory = serving member RssAnon growth / watchers');
  console.log('system  config                           deliveries      p50      p99   all-delivered p50      p99   idle B/watcher');
  for (const r of results) {
    console.log(
      `${r.system.padEnd(8)}${r.config.padEnd(33)}${String(r.deliveries).padStart(10)}  ${r.p50.toFixed(1).padStart(7)}  ` +
        `${r.p99.toFixed(1).padStart(7)}  ${r.allP50.toFixed(1).padStart(17)}  ${r.allP99.toFixed(1).padStart(7)}  ` +
        `${r.idleBytesPerWatcher.toFixed(0).padStart(14)}`,
    );
  }
}

function printRatios(baton: readonly Result[], etcd: readonly Result[]): void {
  console.log('\nBaton / etcd (same run; below 1 = Baton faster or smaller)');
  for (const e of etcd) {
    const b = baton.find((r) => r.config === e.config);
    if (b === undefined) continue;
    const ratio = (x: number, y: number): string => (y > 0 ? (x / y).toFixed(2) : 'n/a');
    console.log(`${e.config.padEnd(33)} p50 ${ratio(b.p50, e.p50)}  p99 ${ratio(b.p99, e.p99)}  ` +
      `all-delivered p50 ${ratio(b.allP50, e.allP50)}  idle memory ${ratio(b.idleBytesPerWatcher, e.idleBytesPerWatcher)}`);
  }
}

async function main(): Promise<void> {
  const workDir = mkdtempSync(join(tmpdir(), 'baton-watch-bench-'));
  process.once('SIGINT', () => {
    rmSync(workDir, { recursive: true, force: true });
    process.exit(130);
  });
  try {
    const baton = await withBaton(workDir, (target) => runAll(target, sizes));
    printResults(baton);
    const heap = hubHeapPerWatcher(100_000);
    console.log(heap === null
      ? 'hub heap per watcher: run with node --expose-gc to measure'
      : `hub heap per watcher (in-process, 100,000 distinct keys): ${heap.toFixed(0)} B`);
    if (values.etcd === true) {
      if (etcdVersion() === null) {
        console.log(`etcd comparison skipped: ${etcdInstallHint}`);
        return;
      }
      const etcd = await withEtcd(workDir, (target) => runAll(target, sizes.filter((n) => n <= 10_000)));
      printResults(etcd);
      printRatios(baton, etcd);
    } else {
      console.log('etcd comparison: run with --etcd');
    }
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }
}

await main();
