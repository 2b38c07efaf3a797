// `baton canary`: synthetic clients that exercise the cell's promises every interval (probes.ts)
// while a monitor watches its leader and apply progress (cell-monitor.ts). Every run of a probe
// is counted (success ratio and latency per probe) and every broken promise is a violation, a
// counter that must stay 0. Each failure is logged as one JSON line with what the canary saw.
// The same object runs as `baton canary` (its own process, registry and /metrics) and inside a
// node (node/cell-canary.ts: the leader runs it, its SLIs in the node's registry, run and stopped
// again at every change of leadership).
import { createServer, type Server } from 'node:http';
import { randomBytes } from 'node:crypto';
import { BatonClient, type ClientOptions, type Session } from '../client/index.js';
import { httpsTransport } from '../client/tls-transport.js';
import { Counter, Gauge, Histogram, LabelledGauge, Registry, type CounterChild } from '../metrics/registry.js';
import type { HttpTransport } from '../client/types.js';
import { CellMonitor, checkStatusAnswer, type MemberView, type MonitorEvent } from './cell-monitor.js';
import {
  ProbeFailure, electionProbe, httpResource, leaseProbe, lockProbe, memoryResource, staleOwnerProbe, watchProbe,
  type FencedResource, type ProbeContext, type ProbeResult,
} from './probes.js';

export interface CanaryOptions {
  /** The cell's client URLs, read at the start of every run (a node's member table may change). */
  readonly endpoints: readonly string[] | (() => readonly string[]);
  /** How long a run lasts; absent: until stop(). */
  readonly durationS?: number;
  readonly intervalMs: number;
  /** Serve /metrics here (0: a free port); absent: no server. */
  readonly metricsPort?: number;
  /** A fenced resource over HTTP (probes.ts httpResource); absent: an in-process guard. */
  readonly resourceUrl?: string;
  /** The lease TTL of the lapsing and stale-owner probes (the cell's minimum is 5 s by default). */
  readonly lapseTtlSeconds?: number;
  readonly tls?: ClientOptions['tls'];
  /** One JSON object per event (stdout in the CLI). */
  readonly log: (line: Record<string, unknown>) => void;
  /**
   * The start of every name the probes use (keys /NAME/..., locks and elections NAME-...); absent:
   * `canary-` and 8 random hex digits, new for each run. Two canaries running at once need two names.
   */
  readonly names?: string;
  /** Register the SLIs here (a node's registry) instead of a registry of the canary's own. */
  readonly registry?: Registry;
}

export interface ProbeSummary { ok: number; failed: number; violations: number; successRatio: number; p50Ms: number; p99Ms: number }
export interface CanarySummary {
  readonly probes: Record<string, ProbeSummary>;
  readonly violations: number;
  readonly leaderLosses: number;
  readonly applyStalls: number;
  readonly passed: boolean;
}

const probeNames = ['lock', 'election', 'lease', 'watch', 'stale_owner'] as const;
type ProbeName = (typeof probeNames)[number];

/** Latencies kept for the summary's percentiles: a canary inside a node runs for months. */
const latenciesKept = 10_000;

export class Canary {
  readonly registry: Registry;
  private readonly runs: Counter;
  private readonly seconds: Histogram;
  private readonly violations: Counter;
  private readonly leaderLosses: CounterChild;
  private readonly applyStalls: CounterChild;
  private readonly latencies = new Map<ProbeName, number[]>();
  private readonly counts = new Map<ProbeName, { ok: number; failed: number; violations: number }>();
  /** Probes failing now, since when (wall ms): their recovery is logged. */
  private readonly failingSince = new Map<ProbeName, number>();
  private monitor: CellMonitor | null = null;
  private server: Server | null = null;
  private stopRun: AbortController | null = null;
  metricsPort = 0;

  constructor(private readonly options: CanaryOptions) {
    const registry = (this.registry = options.registry ?? new Registry());
    this.runs = registry.add(new Counter('baton_canary_probes_total', 'Probe runs by probe and result (ok, failed, violation)'));
    this.seconds = registry.add(new Histogram('baton_canary_probe_seconds', 'Probe run latency by probe', undefined, false));
    this.violations = registry.add(new Counter('baton_canary_violations_total', 'Broken promises detected, by probe: must stay 0'));
    this.leaderLosses = registry.add(new Counter('baton_canary_leader_losses_total', 'Leader losses the monitor saw')).child();
    this.applyStalls = registry.add(new Counter('baton_canary_apply_stalls_total', 'Members whose apply stayed behind their commit index too long')).child();
    for (const name of probeNames) {
      this.latencies.set(name, []);
      this.counts.set(name, { ok: 0, failed: 0, violations: 0 });
      this.violations.child({ probe: name });
    }
    this.registry.add(new LabelledGauge('baton_canary_success_ratio', 'Successful probe runs / all runs, by probe',
      () => probeNames.map((name) => [{ probe: name }, this.ratio(name)] as const)));
    this.registry.add(new Gauge('baton_canary_leader_known', '1 while the monitor sees an agreed, reachable leader', () => (this.monitor?.leaderKnown === true ? 1 : 0)));
    // A registry of its own is a process of its own: the process metrics belong with it.
    if (options.registry === undefined) this.registry.addDefaultMetrics();
  }

  /** Ends the current run (its probes finish their current round); run() then resolves. */
  stop(): void {
    this.stopRun?.abort();
  }

  async run(): Promise<CanarySummary> {
    const { options } = this;
    if (options.metricsPort !== undefined) await this.serveMetrics(options.metricsPort);
    const endpoints = [...(typeof options.endpoints === 'function' ? options.endpoints() : options.endpoints)];
    const client = new BatonClient({
      endpoints, retry: { deadlineMs: Math.max(2000, options.intervalMs * 2), attemptsMax: 8 },
      ...(options.tls === undefined ? {} : { tls: options.tls }),
    });
    const stop = new AbortController();
    this.stopRun = stop;
    let session: Session | null = null;
    const prefix = options.names ?? `canary-${randomBytes(4).toString('hex')}`;
    const resource: FencedResource = options.resourceUrl === undefined ? memoryResource() : httpResource(options.resourceUrl);
    const lapseTtl = options.lapseTtlSeconds ?? 5;
    const probes: Record<ProbeName, (context: ProbeContext) => Promise<ProbeResult>> = {
      lock: lockProbe(),
      election: electionProbe(),
      lease: leaseProbe({ ttlSeconds: lapseTtl, graceMs: 5000 }),
      watch: watchProbe({ reconnectEvery: 5, timeoutMs: Math.max(3000, options.intervalMs * 3) }),
      stale_owner: staleOwnerProbe({ ttlSeconds: lapseTtl, waitMs: 3000 }),
    };
    // The monitor asks each member itself (no client discovery), over TLS when the cell has it.
    const https = options.tls === undefined ? null : httpsTransport(options.tls);
    const fetchStatus = https === null ? undefined : statusOver(https.transport);
    this.monitor = new CellMonitor(endpoints, (event) => this.onMonitorEvent(event), {
      everyMs: 250, stuckMs: 2000, ...(fetchStatus === undefined ? {} : { fetchStatus }),
    });
    this.monitor.start();
    const context = async (): Promise<ProbeContext> => {
      // A lost session (its lease expired while the cell was unavailable) is replaced.
      if (session === null || session.lost) session = await client.session({ ttlSeconds: Math.max(lapseTtl, 5) });
      return { client, session, resource, prefix };
    };
    const loop = async (name: ProbeName): Promise<void> => {
      while (!stop.signal.aborted) {
        const startedMs = performance.now();
        await this.runOnce(name, async () => probes[name](await context()));
        const waitMs = options.intervalMs - (performance.now() - startedMs);
        if (waitMs > 0 && !stop.signal.aborted) await sleep(waitMs, stop.signal);
      }
    };
    const timer = options.durationS === undefined ? undefined : setTimeout(() => stop.abort(), options.durationS * 1000);
    try {
      await Promise.all(probeNames.map((name) => loop(name)));
    } finally {
      clearTimeout(timer);
      await this.monitor.stop();
      https?.close();
      await (session as Session | null)?.close().catch(() => undefined);
      await client.close();
      await new Promise<void>((resolve) => (this.server === null ? resolve() : this.server.close(() => resolve())));
    }
    const summary = this.summary();
    options.log({ event: 'summary', ...summary });
    return summary;
  }

  private async runOnce(name: ProbeName, body: () => Promise<ProbeResult>): Promise<void> {
    const counts = this.counts.get(name) as { ok: number; failed: number; violations: number };
    const startedMs = performance.now();
    let result: ProbeResult;
    try {
      result = await withTimeout(body(), Math.max(10_000, this.options.intervalMs * 5));
    } catch (error) {
      counts.failed++;
      this.failingSince.set(name, this.failingSince.get(name) ?? Date.now());
      this.runs.inc({ probe: name, result: 'failed' });
      const message = (error as Error)?.message ?? String(error);
      this.options.log({ event: 'probe_failed', probe: name, error: message, kind: error instanceof ProbeFailure ? 'probe' : (error as Error)?.name });
      return;
    }
    const elapsedMs = performance.now() - startedMs;
    this.seconds.child({ probe: name }).observe(elapsedMs / 1000);
    const latencies = this.latencies.get(name) as number[];
    latencies.push(elapsedMs);
    if (latencies.length > latenciesKept) latencies.splice(0, latencies.length - latenciesKept / 2);
    const failingSince = this.failingSince.get(name);
    if (failingSince !== undefined) {
      this.failingSince.delete(name);
      this.options.log({ event: 'probe_recovered', probe: name, failingMs: Date.now() - failingSince });
    }
    if (result.violation === null) {
      counts.ok++;
      this.runs.inc({ probe: name, result: 'ok' });
      return;
    }
    counts.violations++;
    this.runs.inc({ probe: name, result: 'violation' });
    this.violations.inc({ probe: name });
    this.options.log({ event: 'violation', probe: name, violation: result.violation, saw: result.saw });
  }

  private onMonitorEvent(event: MonitorEvent): void {
    if (event.event === 'leader_lost') this.leaderLosses.inc();
    if (event.event === 'apply_stuck') this.applyStalls.inc();
    this.options.log({ ...event });
  }

  private ratio(name: ProbeName): number {
    const { ok, failed, violations } = this.counts.get(name) as { ok: number; failed: number; violations: number };
    const all = ok + failed + violations;
    return all === 0 ? 1 : ok / all;
  }

  private summary(): CanarySummary {
    const probes: Record<string, ProbeSummary> = {};
    let violations = 0;
    let failures = 0;
    for (const name of probeNames) {
      const counts = this.counts.get(name) as { ok: number; failed: number; violations: number };
      const sorted = [...(this.latencies.get(name) as number[])].sort((a, b) => a - b);
      const at = (q: number): number => Math.round((sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0) * 10) / 10;
      probes[name] = { ...counts, successRatio: Math.round(this.ratio(name) * 1000) / 1000, p50Ms: at(0.5), p99Ms: at(0.99) };
      violations += counts.violations;
      failures += counts.failed + (counts.ok === 0 ? 1 : 0);
    }
    const leaderLosses = this.leaderLosses.value;
    const applyStalls = this.applyStalls.value;
    return { probes, violations, leaderLosses, applyStalls, passed: violations === 0 && failures === 0 && leaderLosses === 0 && applyStalls === 0 };
  }

  private async serveMetrics(port: number): Promise<void> {
    const server = createServer((req, res) => {
      if (req.url !== '/metrics') return void res.writeHead(404).end();
      this.registry.render().then((text) => res.writeHead(200, { 'content-type': this.registry.contentType }).end(text),
        () => res.writeHead(500).end());
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    this.metricsPort = typeof address === 'object' && address !== null ? address.port : port;
    this.options.log({ event: 'metrics', url: `http://127.0.0.1:${this.metricsPort}/metrics` });
  }
}

/** A member's own status over the client's HTTP transport (https with the cell's CA and certificate). */
function statusOver(transport: HttpTransport): (endpoint: string) => Promise<MemberView> {
  return async (endpoint) => {
    const answer = await transport({ method: 'GET', url: `${endpoint}/v1/cluster/status`, headers: {}, timeoutMs: 1500 });
    checkStatusAnswer(answer.status);
    return JSON.parse(answer.text) as MemberView;
  };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new ProbeFailure(`no answer within ${ms} ms`)), ms))),
  ]).finally(() => clearTimeout(timer));
}
