// Tables for bench results: one row per system x workload x clients, and the Baton / etcd ratios.
import type { LoadResult } from './load.js';

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const upper = sorted[mid] as number;
  return sorted.length % 2 === 1 ? upper : ((sorted[mid - 1] as number) + upper) / 2;
}

/** The median of several runs of one configuration (each figure is its own median). */
export interface CellSummary {
  readonly system: string;
  readonly workload: string;
  readonly clients: number;
  readonly runs: number;
  readonly opsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly p999Ms: number;
  readonly errors: number;
  /** Server CPU per operation (all members, µs), when the servers' processes were visible. */
  readonly serverCpuUsPerOp: number;
  readonly serverCpuCores: number;
  /** The leader's and a follower's share of it (µs per op), when the roles were known. */
  readonly leaderCpuUsPerOp: number;
  readonly followerCpuUsPerOp: number;
  /** The load client's own CPU, in cores. */
  readonly clientCpuCores: number;
  readonly opsPerSecondRuns: readonly number[];
}

export function summarize(results: readonly LoadResult[]): CellSummary[] {
  const groups = new Map<string, LoadResult[]>();
  for (const result of results) {
    const id = `${result.system}|${result.workload}|${result.clients}`;
    const group = groups.get(id) ?? [];
    group.push(result);
    groups.set(id, group);
  }
  return [...groups.values()].map((group) => {
    const first = group[0] as LoadResult;
    const ms = (pick: (r: LoadResult) => number): number => median(group.map(pick)) / 1000;
    return {
      system: first.system,
      workload: first.workload,
      clients: first.clients,
      runs: group.length,
      opsPerSecond: median(group.map((r) => r.opsPerSecond)),
      p50Ms: ms((r) => r.latency.p50Us),
      p99Ms: ms((r) => r.latency.p99Us),
      p999Ms: ms((r) => r.latency.p999Us),
      errors: group.reduce((sum, r) => sum + Object.values(r.errors).reduce((a, b) => a + b, 0), 0),
      serverCpuUsPerOp: median(group.flatMap((r) => r.serverCpuUsPerOp ?? [])),
      serverCpuCores: median(group.flatMap((r) => r.serverCpuCores ?? [])),
      leaderCpuUsPerOp: median(group.flatMap((r) => r.leaderCpuUsPerOp ?? [])),
      followerCpuUsPerOp: median(group.flatMap((r) => r.followerCpuUsPerOp ?? [])),
      clientCpuCores: median(group.map((r) => r.clientCpuCores)),
      opsPerSecondRuns: group.map((r) => Math.round(r.opsPerSecond)),
    };
  });
}

export function resultsTable(rows: readonly CellSummary[]): string {
  const header = [
    'system', 'workload', 'clients', 'runs', 'ops/s', 'p50 ms', 'p99 ms', 'p99.9 ms', 'errors',
    'srv cpu', 'us/op', 'leader us/op', 'follower us/op', 'client cpu', 'ops/s per run',
  ];
  const body = rows.map((r) => [
    r.system, r.workload, String(r.clients), String(r.runs), fixed(r.opsPerSecond, 0),
    fixed(r.p50Ms, 2), fixed(r.p99Ms, 2), fixed(r.p999Ms, 2), String(r.errors),
    fixed(r.serverCpuCores, 2),
    fixed(r.serverCpuUsPerOp, 0), fixed(r.leaderCpuUsPerOp, 0), fixed(r.followerCpuUsPerOp, 0),
    fixed(r.clientCpuCores, 2), r.opsPerSecondRuns.join(' '),
  ]);
  return table(header, body);
}

export interface Ratio {
  readonly workload: string;
  readonly clients: number;
  readonly batonOpsPerSecond: number;
  readonly etcdOpsPerSecond: number;
  /** Baton ÷ etcd: above 1, Baton serves more. */
  readonly throughputRatio: number;
  readonly batonP99Ms: number;
  readonly etcdP99Ms: number;
  /** Baton ÷ etcd: below 1, Baton's p99 is lower. */
  readonly p99Ratio: number;
  /** Baton ÷ etcd server CPU per operation: below 1, Baton spends less CPU per request. */
  readonly cpuPerOpRatio: number;
}

/** `system` ÷ etcd for each workload and client count both ran (system: baton, or baton-gateway). */
export function ratios(rows: readonly CellSummary[], system = 'baton'): Ratio[] {
  const out: Ratio[] = [];
  for (const baton of rows.filter((r) => r.system === system)) {
    const etcd = rows.find(
      (r) => r.system === 'etcd' && r.workload === baton.workload && r.clients === baton.clients,
    );
    if (etcd === undefined) continue;
    out.push({
      workload: baton.workload,
      clients: baton.clients,
      batonOpsPerSecond: baton.opsPerSecond,
      etcdOpsPerSecond: etcd.opsPerSecond,
      throughputRatio: baton.opsPerSecond / etcd.opsPerSecond,
      batonP99Ms: baton.p99Ms,
      etcdP99Ms: etcd.p99Ms,
      p99Ratio: baton.p99Ms / etcd.p99Ms,
      cpuPerOpRatio: baton.serverCpuUsPerOp / etcd.serverCpuUsPerOp,
    });
  }
  return out;
}

export function ratioTable(rows: readonly Ratio[]): string {
  const header = [
    'workload', 'clients', 'baton ops/s', 'etcd ops/s', 'ops ratio', 'baton p99', 'etcd p99',
    'p99 ratio', 'cpu/op ratio',
  ];
  const body = rows.map((r) => [
    r.workload, String(r.clients), fixed(r.batonOpsPerSecond, 0), fixed(r.etcdOpsPerSecond, 0),
    `${fixed(r.throughputRatio, 2)}x`, `${fixed(r.batonP99Ms, 1)} ms`,
    `${fixed(r.etcdP99Ms, 1)} ms`,
    `${fixed(r.p99Ratio, 2)}x`, `${fixed(r.cpuPerOpRatio, 2)}x`,
  ]);
  return table(header, body);
}

/**
 * Two builds of Baton in one run (--baton-b): per configuration, the median of the per-repeat
 * ratios A ÷ B (repeats ran back to back, so each ratio saw the same machine load).
 */
export function abTable(results: readonly LoadResult[], a = 'baton', b = 'baton-b'): string {
  const rows: string[][] = [];
  const keys = [...new Set(results.map((r) => `${r.workload}|${r.clients}`))];
  for (const key of keys) {
    const pick = (system: string): LoadResult[] =>
      results.filter((r) => r.system === system && `${r.workload}|${r.clients}` === key);
    const [as, bs] = [pick(a), pick(b)];
    if (as.length === 0 || as.length !== bs.length) continue;
    const ratio = (get: (r: LoadResult) => number | undefined): string => {
      const values = as.flatMap((r, i) => {
        const [x, y] = [get(r), get(bs[i] as LoadResult)];
        return x === undefined || y === undefined ? [] : [x / y];
      });
      return `${fixed(median(values), 2)}x`;
    };
    const [workload, clients] = key.split('|') as [string, string];
    rows.push([
      workload, clients, ratio((r) => r.opsPerSecond), ratio((r) => r.latency.p99Us),
      ratio((r) => r.serverCpuUsPerOp), ratio((r) => r.leaderCpuUsPerOp), ratio((r) => r.followerCpuUsPerOp),
      ratio((r) => r.clientCpuCores / r.opsPerSecond),
    ]);
  }
  const header = ['workload', 'clients', 'ops', 'p99', 'us/op', 'leader us/op', 'follower us/op', 'client cpu/op'];
  return table(header, rows);
}

function fixed(value: number, digits: number): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '-';
}

export function table(header: readonly string[], body: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) =>
    Math.max(h.length, ...body.map((row) => (row[i] ?? '').length)),
  );
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i < 2 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...body.map(line)].join('\n');
}
