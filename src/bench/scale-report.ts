// Tables for the scale bench: one per step, a row per system (or member), then Baton ÷ etcd and
// whether the targets hold. A step that failed is a row saying so, never a missing row.
import type { LoadResult } from './load.js';
import { median, table } from './report.js';
import type { ReplaceTimings } from './scale-cell.js';
import type { RestoreFigures } from './scale-restore.js';
import type { BackupStepFigures, ChurnFigures, LoadFigures, RestartFigures } from './scale-phases.js';

export interface SystemRun {
  readonly system: string;
  readonly version: string;
  readonly dataPath: string;
  load?: LoadFigures;
  /** Step 2's rounds, in order (round i of each system ran back to back). */
  readonly put: LoadResult[];
  readonly getLin: LoadResult[];
  restarts: RestartFigures[];
  replace?: ReplaceTimings & { member: string };
  backup?: BackupStepFigures;
  restore?: RestoreFigures;
  churn?: ChurnFigures;
  /** Steps that failed, with what they said. */
  readonly failures: { step: string; error: string }[];
  /** Every step with its wall time and the machine's 1-minute load average around it. */
  readonly steps: { step: string; seconds: number; loadAverageBefore: number; loadAverageAfter: number }[];
}

const f = (value: number | undefined, digits = 0): string =>
  value === undefined || !Number.isFinite(value) ? '-' : value.toFixed(digits);
const mib = (bytes: number | undefined): string => f(bytes === undefined ? undefined : bytes / 2 ** 20);
const ratio = (a: number | undefined, b: number | undefined): string =>
  a === undefined || b === undefined || !(b > 0) ? '-' : `${(a / b).toFixed(2)}x`;
const verdict = (ok: boolean | undefined): string => (ok === undefined ? '-' : ok ? 'yes' : 'NO');

function pair(runs: readonly SystemRun[]): { baton?: SystemRun; etcd?: SystemRun } {
  return { baton: runs.find((r) => r.system === 'baton'), etcd: runs.find((r) => r.system === 'etcd') };
}

export function loadTables(runs: readonly SystemRun[]): string {
  const rows = runs.map((r) => r.load === undefined ? [r.system, 'failed'] : [
    r.system, String(r.load.keys), f(r.load.seconds, 1), f(r.load.keysPerSecond), `${f(r.load.txnP50Ms, 1)} / ${f(r.load.txnP99Ms, 1)}`,
    String(Object.values(r.load.retries).reduce((a, b) => a + b, 0)), f(r.load.clientCpuCores, 2), f(r.load.clientCpuUsPerKey, 1),
    f(r.load.serverCpuCores, 2), f(r.load.serverCpuUsPerKey, 1), r.dataPath,
  ]);
  const { baton, etcd } = pair(runs);
  if (baton?.load !== undefined && etcd?.load !== undefined) {
    rows.push(['baton/etcd', '', '', ratio(baton.load.keysPerSecond, etcd.load.keysPerSecond), '', '', '', '', '',
      ratio(baton.load.serverCpuUsPerKey, etcd.load.serverCpuUsPerKey), '']);
  }
  const load = table(['system', 'keys', 'seconds', 'keys/s', 'txn p50/p99 ms', 'retries', 'client cores', 'client us/key',
    'server cores', 'server us/key', 'data path'], rows);
  const members = runs.flatMap((r) => (r.load?.members ?? []).map((m) => [
    r.system, m.name, mib(m.diskBytes), f(m.diskBytesPerKey), mib(m.storeFileBytes), f(m.storeFileBytes / (r.load?.keys ?? 1)), mib(m.memory.rssBytes),
    mib(m.memory.rssAnonBytes), mib(m.memory.rssFileBytes),
  ]));
  const footprint = table(['system', 'member', 'disk MiB', 'disk B/key', 'store file MiB', 'store B/key', 'RSS MiB', 'anon MiB', 'file-mapped MiB'], members);
  return `${load}\n\n${footprint}`;
}

export function steadyTable(runs: readonly SystemRun[]): string {
  const rows: string[][] = [];
  const med = (list: readonly LoadResult[], pick: (r: LoadResult) => number | undefined): number =>
    median(list.flatMap((r) => pick(r) ?? []));
  for (const r of runs) {
    for (const list of [r.put, r.getLin]) {
      const first = list[0];
      if (first === undefined) continue;
      const errors = list.reduce((sum, x) => sum + Object.values(x.errors).reduce((a, b) => a + b, 0), 0);
      rows.push([r.system, first.workload, String(first.clients), String(list.length), f(med(list, (x) => x.opsPerSecond)),
        f(med(list, (x) => x.latency.p50Us) / 1000, 2), f(med(list, (x) => x.latency.p99Us) / 1000, 2),
        f(med(list, (x) => x.serverCpuCores), 2), f(med(list, (x) => x.serverCpuUsPerOp)), f(med(list, (x) => x.clientCpuCores), 2),
        String(errors), list.map((x) => x.opsPerSecond.toFixed(0)).join(' ')]);
    }
  }
  const { baton, etcd } = pair(runs);
  for (const [name, a, b] of [['put', baton?.put, etcd?.put], ['get-lin', baton?.getLin, etcd?.getLin]] as const) {
    if (a === undefined || b === undefined || a.length === 0 || b.length === 0) continue;
    // The median of the rounds' own ratios: each round ran both systems back to back.
    const perRound = (pick: (r: LoadResult) => number | undefined): string => {
      const values = a.flatMap((x, i) => {
        const y = b[i];
        const p = pick(x);
        const q = y === undefined ? undefined : pick(y);
        return p === undefined || q === undefined || !(q > 0) ? [] : [p / q];
      });
      return values.length === 0 ? '-' : `${median(values).toFixed(2)}x`;
    };
    rows.push(['baton/etcd', name, '', '', perRound((x) => x.opsPerSecond), perRound((x) => x.latency.p50Us),
      perRound((x) => x.latency.p99Us), '', perRound((x) => x.serverCpuUsPerOp), '', '', '']);
  }
  return table(['system', 'workload', 'clients', 'rounds', 'ops/s', 'p50 ms', 'p99 ms', 'server cores', 'server us/op',
    'client cores', 'errors', 'ops/s per round'], rows);
}

export function recoveryTable(runs: readonly SystemRun[]): string {
  const rows: string[][] = [];
  const { baton, etcd } = pair(runs);
  const steps = [
    ...['SIGTERM', 'SIGKILL'].map((signal) => ({
      label: `restart after ${signal}`,
      seconds: (r: SystemRun | undefined) => r?.restarts.find((x) => x.signal === signal)?.readySeconds,
      member: (r: SystemRun) => r.restarts.find((x) => x.signal === signal)?.member,
    })),
    { label: 'wiped member: to promoted', seconds: (r: SystemRun | undefined) => r?.replace?.promotedSeconds, member: (r: SystemRun) => r.replace?.member },
    { label: 'wiped member: to ready', seconds: (r: SystemRun | undefined) => r?.replace?.readySeconds, member: (r: SystemRun) => r.replace?.member },
  ];
  for (const step of steps) {
    for (const r of runs) rows.push([r.system, step.label, step.member(r) ?? '-', f(step.seconds(r), 2), '', '']);
    const a = step.seconds(baton);
    const b = step.seconds(etcd);
    const target = a === undefined ? undefined : a <= 60 && (b === undefined || a <= b);
    rows.push(['baton/etcd', step.label, '', '', ratio(a, b), verdict(target)]);
  }
  for (const r of runs) {
    if (r.replace !== undefined) rows.push([r.system, 'remove + wipe + add learner', r.replace.member, f(r.replace.removeAddSeconds, 2), '', '']);
  }
  return table(['system', 'step', 'member', 'seconds', 'ratio', '<= etcd and <= 60 s'], rows);
}

export function backupTable(runs: readonly SystemRun[]): string {
  const rows = runs.map((r) => r.backup === undefined ? [r.system, 'failed'] : [
    r.system, r.backup.tool, r.backup.via, f(r.backup.seconds, 1), mib(r.backup.bytes),
    f(r.backup.before.putsPerSecond), f(r.backup.during.putsPerSecond),
    f(r.backup.before.p99Ms, 1), f(r.backup.during.p99Ms, 1), `${f(r.backup.p99Ratio, 2)}x`, verdict(r.backup.p99Ratio <= 1.1),
  ]);
  const { baton, etcd } = pair(runs);
  if (baton?.backup !== undefined && etcd?.backup !== undefined) {
    rows.push(['baton/etcd', '', '', ratio(baton.backup.seconds, etcd.backup.seconds), ratio(baton.backup.bytes, etcd.backup.bytes)]);
  }
  return table(['system', 'tool', 'from', 'seconds', 'MiB', 'puts/s before', 'puts/s during', 'put p99 before ms',
    'put p99 during ms', 'during/before', '<= 1.1x'], rows);
}

export function restoreTable(runs: readonly SystemRun[]): string {
  const rows = runs.map((r) => r.restore === undefined ? [r.system, 'failed or not run'] : [
    r.system, r.restore.tool, f(r.restore.restoreSeconds, 1), f(r.restore.readySeconds, 1), f(r.restore.totalSeconds, 1),
    String(r.restore.revision), verdict(r.restore.totalSeconds <= 60),
  ]);
  const { baton, etcd } = pair(runs);
  if (baton?.restore !== undefined && etcd?.restore !== undefined) {
    rows.push(['baton/etcd', '', ratio(baton.restore.restoreSeconds, etcd.restore.restoreSeconds),
      ratio(baton.restore.readySeconds, etcd.restore.readySeconds), ratio(baton.restore.totalSeconds, etcd.restore.totalSeconds)]);
  }
  return table(['system', 'tool', 'restore s', 'start to ready s', 'total s', 'revision', '<= 60 s'], rows);
}

export function churnTables(runs: readonly SystemRun[]): string {
  const rows = runs.map((r) => {
    const c = r.churn;
    if (c === undefined) return [r.system, 'failed'];
    const p = c.probe;
    return [
      r.system, String(c.deleted), f(c.deleteKeysPerSecond), f(c.compactSeconds, 2), f(c.rewriteOfferedKeysPerSecond),
      f(c.rewriteKeysPerSecond), String(c.secondsUnderHalfRate),
      `${f(p.delete.p99Ms)} / ${f(p.compact.p99Ms)} / ${f(p.rewrite.p99Ms)}`,
      String(c.pausesOver100Ms), f(c.longestGapMs), f(c.worstTxnMs), f(c.worstProbeMs),
    ];
  });
  const summary = table(['system', 'deleted', 'delete keys/s', 'compact s', 'rewrite offered keys/s', 'achieved',
    's under half', 'probe put p99 ms del/compact/rewrite', 's with a pause > 100 ms', 'longest pause ms',
    'longest txn ms', 'longest probe put ms'], rows);
  const files = runs.flatMap((r) => (r.churn?.files ?? []).map((m) => [
    r.system, m.name, mib(m.beforeBytes), mib(m.afterDeleteBytes), mib(m.afterBytes), `${f(m.growth * 100, 1)}%`,
    verdict(m.growth <= 0.1), mib(m.diskAfterBytes),
  ]));
  for (const r of runs) {
    if (r.churn?.shrink !== undefined) {
      const s = r.churn.shrink;
      files.push([r.system, s.member, '', '', mib(s.fileBytes), `after ${s.note} (${f(s.seconds, 1)} s)`, '', '']);
    }
  }
  const fileTable = table(['system', 'member', 'file before MiB', 'after deletes MiB', 'after rewrite MiB', 'growth',
    '<= 10%', 'data dir MiB'], files);
  return `${summary}\n\n${fileTable}`;
}

/** Every second of the churn step, or (short) the five worst seconds by pause. */
export function timelineTable(run: SystemRun, full: boolean): string {
  const timeline = run.churn?.timeline ?? [];
  const chosen = full ? timeline : [...timeline].sort((a, b) => b.longestGapMs - a.longestGapMs).slice(0, 5)
    .sort((a, b) => a.second - b.second);
  return table(['second', 'phase', 'txns', 'keys', 'longest txn ms', 'probe puts', 'longest probe put ms', 'longest pause ms'],
    chosen.map((s) => [
      String(s.second), s.phase, String(s.lanes['bulk']?.steps ?? 0), String(s.lanes['bulk']?.items ?? 0),
      f(s.lanes['bulk']?.maxLatencyMs), String(s.lanes['probe']?.steps ?? 0), f(s.lanes['probe']?.maxLatencyMs), f(s.longestGapMs),
    ]));
}

export function stepsTable(runs: readonly SystemRun[]): string {
  return table(['system', 'step', 'seconds', 'load average'], runs.flatMap((r) => r.steps.map((s) => [
    r.system, s.step, f(s.seconds, 1), `${f(s.loadAverageBefore, 1)} / ${f(s.loadAverageAfter, 1)}`,
  ])));
}

export function failureLines(runs: readonly SystemRun[]): string {
  const lines = runs.flatMap((r) => r.failures.map((x) => `${r.system} ${x.step}: FAILED: ${x.error}`));
  return lines.length === 0 ? 'every step ran' : lines.join('\n');
}
