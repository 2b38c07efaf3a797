// Runs workloads x client counts x repeats against one or more targets. With several targets
// (Baton and etcd in one run) each configuration runs on every target back to back, the order
// alternating between repeats, so slow drifts in the machine's load hit both sides alike.
import { cpuSeconds } from './proc-cpu.js';
import { populateKeys, runLoad, type LoadResult } from './load.js';
import { workloadNames, type Protocol, type WorkloadName } from './protocols.js';

export interface BenchTarget {
  readonly protocol: Protocol;
  readonly urls: readonly URL[];
  /** The target's server processes, when visible: their CPU is then reported per operation. */
  readonly serverPids?: () => readonly number[];
  /**
   * The leader's and each follower's processes and URLs, asked before each run (the leader may
   * have moved): their CPU is then reported per operation apart, and `endpoints` can pick them.
   */
  readonly roles?: () => Promise<MemberRoles>;
}

export interface MemberRoles {
  readonly leader: RoleMember;
  readonly followers: readonly RoleMember[];
}

export interface RoleMember {
  readonly url: URL;
  readonly pids: readonly number[];
}

/**
 * Which members the clients talk to: all (the default, clients spread over every member), the
 * leader only (no forwarding), or the followers only (every write forwarded). Needs `roles`.
 */
export const endpointChoices = ['all', 'leader', 'followers'] as const;
export type EndpointChoice = (typeof endpointChoices)[number];

export interface MatrixOptions {
  readonly targets: readonly BenchTarget[];
  readonly workloads: readonly WorkloadName[];
  readonly clients: readonly number[];
  readonly durationMs: number;
  readonly warmupMs: number;
  readonly repeats: number;
  readonly keyCount: number;
  readonly valueBytes: number;
  readonly requestTimeoutMs: number;
  /**
   * Before measuring anything, run every workload this long on each target, unrecorded: a Node
   * server needs seconds of load before its JIT has compiled the hot paths, a Go one does not.
   */
  readonly primeMs?: number;
  /** Called after each run (progress lines). */
  readonly onResult?: (result: LoadResult) => void;
  /** Targets with roles only; others always use all their URLs. */
  readonly endpoints?: EndpointChoice;
}

export const defaultMatrix = {
  clients: [1, 16, 64, 256],
  durationMs: 5_000,
  warmupMs: 1_000,
  repeats: 1,
  keyCount: 1_000,
  valueBytes: 256,
  requestTimeoutMs: 15_000,
} as const;

export function parseWorkloads(text: string): WorkloadName[] {
  if (text === 'all') return [...workloadNames];
  const names = text.split(',').map((s) => s.trim());
  for (const name of names) {
    if (!workloadNames.includes(name as WorkloadName)) {
      throw new Error(`unknown workload "${name}" (one of ${workloadNames.join(', ')}, or all)`);
    }
  }
  return names as WorkloadName[];
}

export function parseClientCounts(text: string): number[] {
  const counts = text.split(',').map((s) => Number(s.trim()));
  for (const n of counts) {
    if (!Number.isInteger(n) || n < 1 || n > 4096) {
      throw new Error(`client counts must be integers 1..4096, not "${text}"`);
    }
  }
  return counts;
}

/** Seconds the matrix will take, roughly (load time only, not populating or start-up). */
export function estimateSeconds(options: Omit<MatrixOptions, 'onResult'>): number {
  const configurations = options.workloads.length * options.clients.length;
  const runs = options.targets.length * configurations * options.repeats;
  const primeMs = options.targets.length * options.workloads.length * (options.primeMs ?? 0);
  return (primeMs + runs * (options.durationMs + options.warmupMs + 300)) / 1000;
}

export async function runMatrix(options: MatrixOptions): Promise<LoadResult[]> {
  const results: LoadResult[] = [];
  if (options.workloads.some((w) => w === 'get-lin' || w === 'get-ser')) {
    for (const target of options.targets) {
      await populateKeys(target.protocol, target.urls, options.keyCount, options.valueBytes);
    }
  }
  if ((options.primeMs ?? 0) > 0) await prime(options);
  for (const workload of options.workloads) {
    for (const clients of options.clients) {
      for (let repeat = 0; repeat < options.repeats; repeat++) {
        const order = repeat % 2 === 0 ? options.targets : [...options.targets].reverse();
        for (const target of order) {
          const pids = target.serverPids?.() ?? [];
          const roles = target.roles === undefined ? null : await target.roles();
          const members = roles === null ? [] : [roles.leader, ...roles.followers];
          let cpuAtStart = 0;
          let cpuAtEnd = 0;
          let memberCpuAtStart: number[] = [];
          let memberCpuAtEnd: number[] = [];
          const result = await runLoad({
            onWindow: (edge) => {
              const memberCpu = members.map((m) => cpuSeconds(m.pids));
              if (edge === 'start') [cpuAtStart, memberCpuAtStart] = [cpuSeconds(pids), memberCpu];
              else [cpuAtEnd, memberCpuAtEnd] = [cpuSeconds(pids), memberCpu];
            },
            protocol: target.protocol,
            endpoints: runEndpoints(target, roles, options.endpoints ?? 'all'),
            workload,
            clients,
            durationMs: options.durationMs,
            warmupMs: options.warmupMs,
            keyCount: options.keyCount,
            valueBytes: options.valueBytes,
            requestTimeoutMs: options.requestTimeoutMs,
          });
          if (pids.length > 0 && cpuAtEnd > 0) {
            const cpu = cpuAtEnd - cpuAtStart;
            result.serverCpuCores = cpu / result.seconds;
            result.serverCpuUsPerOp =
              result.completed > 0 ? (1e6 * cpu) / result.completed : Number.NaN;
          }
          if (members.length > 0 && memberCpuAtEnd.length === members.length && result.completed > 0) {
            const perOp = members.map((_, i) =>
              (1e6 * ((memberCpuAtEnd[i] ?? 0) - (memberCpuAtStart[i] ?? 0))) / result.completed);
            result.leaderCpuUsPerOp = perOp[0];
            const followers = perOp.slice(1);
            result.followerCpuUsPerOp = followers.reduce((a, b) => a + b, 0) / Math.max(1, followers.length);
          }
          results.push(result);
          options.onResult?.(result);
        }
      }
    }
  }
  return results;
}

function runEndpoints(target: BenchTarget, roles: MemberRoles | null, choice: EndpointChoice): readonly URL[] {
  if (roles === null || choice === 'all') return target.urls;
  return choice === 'leader' ? [roles.leader.url] : roles.followers.map((f) => f.url);
}

async function prime(options: MatrixOptions): Promise<void> {
  for (const target of options.targets) {
    const roles = target.roles === undefined ? null : await target.roles();
    for (const workload of options.workloads) {
      await runLoad({
        ...options,
        protocol: target.protocol,
        endpoints: runEndpoints(target, roles, options.endpoints ?? 'all'),
        workload,
        clients: 64,
        durationMs: options.primeMs ?? 0,
        warmupMs: 0,
      });
    }
  }
}

export function progressLine(result: LoadResult): string {
  const ms = (us: number): string => (us / 1000).toFixed(2);
  const errors = Object.entries(result.errors).map(([k, v]) => `${k}:${v}`).join(' ');
  const parts = [
    `${result.system.padEnd(5)} ${result.workload.padEnd(7)}`,
    `c=${String(result.clients).padStart(3)}`,
    `${result.opsPerSecond.toFixed(0).padStart(6)} ops/s`,
    `p50 ${ms(result.latency.p50Us)} ms  p99 ${ms(result.latency.p99Us)} ms`,
    `p99.9 ${ms(result.latency.p999Us)} ms`,
  ];
  if (errors !== '') parts.push(`errors ${errors}`);
  const byEndpoint = result.latencyByEndpoint.map((l) => `${ms(l.p50Us)}/${ms(l.p99Us)}`).join(' ');
  parts.push(`p50/p99 by endpoint ${byEndpoint}`);
  if (result.serverCpuCores !== undefined) {
    const perOp = (result.serverCpuUsPerOp ?? Number.NaN).toFixed(0);
    parts.push(`server cpu ${result.serverCpuCores.toFixed(2)} cores ${perOp} us/op`);
  }
  if (result.leaderCpuUsPerOp !== undefined) {
    const follower = (result.followerCpuUsPerOp ?? Number.NaN).toFixed(0);
    parts.push(`leader ${result.leaderCpuUsPerOp.toFixed(0)} follower ${follower} us/op`);
  }
  parts.push(`client cpu ${result.clientCpuCores.toFixed(2)}`);
  if (result.casMisses > 0) parts.push(`cas-misses ${result.casMisses}`);
  return parts.join('  ');
}
