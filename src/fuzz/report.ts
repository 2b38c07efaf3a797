// The summary a fuzz run prints: what was sent, what came back, the measurements, the findings.
import type { FuzzReport } from './run.js';

export function formatReport(report: FuzzReport): string {
  const lines = [
    `fuzz: seed ${report.seed}, ${report.cases} cases in ${(report.durationMs / 1000).toFixed(1)} s`,
    `  channels: ${Object.entries(report.byChannel).map(([k, v]) => `${k} ${v}`).join(', ')}`,
    `  answers: ${Object.entries(report.byStatus).sort().map(([k, v]) => `${k}: ${v}`).join(', ')}`,
    `  memory: ${report.memory.map((m) => `${m.node} ${mb(m.baselineBytes)} -> ${mb(m.afterBytes)}`).join(', ')}`,
    `  connections: ${report.connections.map((c) => `${c.node} ${c.baseline ?? '?'} -> ${c.after ?? '?'}`).join(', ')}`,
  ];
  for (const problem of report.runProblems) lines.push(`RUN PROBLEM: ${problem}`);
  lines.push(report.failures.length === 0 && report.runProblems.length === 0
    ? '  result: every answer as documented; known state unchanged; no node exited'
    : `  result: ${report.failures.length} failing cases, ${report.runProblems.length} run problems (seed ${report.seed})`);
  return lines.join('\n');
}

function mb(bytes: number | null): string {
  return bytes === null ? '?' : `${(bytes / 1024 / 1024).toFixed(0)} MiB`;
}
