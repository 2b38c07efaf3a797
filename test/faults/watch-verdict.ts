// The watch part of a fault run: after healing, the committed log of the run's prefix comes from
// a fresh watch from revision 1; every watcher stream of the run is checked against it, and the
// log itself must hold every acknowledged write (a cheap cross-check of both sides).
import {
  checkWatches,
  type KvOperation,
  type OperationRecord,
  type Verdict,
  type WatchRecord,
} from '../../src/check/index.js';
import { keyPath } from './kv-client.js';
import { committedLog, currentRevision } from './watch-client.js';

/** A watcher of the run: the SSE WatchSession or the client library's ClientWatcher. */
export interface RunWatcher {
  readonly records: readonly WatchRecord[];
  finish(revision: number, timeoutMs: number): Promise<void>;
}

export interface WatchVerdict {
  readonly verdict: Verdict;
  readonly lines: string[];
}

export async function checkRunWatches(
  urls: readonly string[],
  watchers: readonly RunWatcher[],
  records: readonly OperationRecord<KvOperation>[],
): Promise<WatchVerdict> {
  let revision: number | null = null;
  for (let attempt = 0; attempt < 20 && revision === null; attempt++) {
    revision = await currentRevision(urls[attempt % urls.length] as string, keyPath('k0'));
  }
  if (revision === null) {
    await Promise.all(watchers.map((w) => w.finish(0, 0)));
    return { verdict: 'unknown', lines: ['watch: unknown (no final revision)'] };
  }
  const target = revision;
  await Promise.all(watchers.map((w) => w.finish(target, 20_000)));
  const log = await committedLog(urls[0] as string, keyPath(''), target);
  if (log === null) return { verdict: 'unknown', lines: ['watch: unknown (no full log)'] };
  const streams = watchers.flatMap((w) => w.records);
  const report = checkWatches(log, streams);
  const lines = [
    `watch: ${report.verdict} (${streams.length} streams, ${log.length} committed events through ` +
      `revision ${target})`,
  ];
  for (const violation of report.violations.slice(0, 10)) lines.push(`  ${violation.kind}: ${violation.message}`);
  const logged = new Set(log.map((e) => `${e.key}\u0000${e.value}`));
  const missing = records.filter((r) => {
    const op = r.operation;
    if (r.status !== 'ok' || op.type === 'read') return false;
    if (op.type === 'cas' && !(r.result?.type === 'cas' && r.result.succeeded)) return false;
    return !logged.has(`${keyPath(op.key)}\u0000${op.value}`);
  });
  for (const r of missing.slice(0, 10)) lines.push(`  acknowledged write not in the log: ${r.operation.key} p${r.process}`);
  const violated = report.verdict === 'violation' || missing.length > 0;
  return { verdict: violated ? 'violation' : 'ok', lines };
}
