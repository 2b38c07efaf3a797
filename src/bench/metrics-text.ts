// Reads single values out of a node's Prometheus /metrics text, so a bench can report what the
// leader did during a run (fsyncs, entries per fsync) next to what the client saw.

/** The value of the first sample named exactly `name` (labels ignored), or NaN. */
export function metricValue(text: string, name: string): number {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const nameEnd = line.search(/[{ ]/);
    if (nameEnd <= 0 || line.slice(0, nameEnd) !== name) continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (!Number.isNaN(value)) return value;
  }
  return Number.NaN;
}

export interface LeaderActivity {
  /** Readys written (etcd_disk_wal_fsync_duration_seconds counts one per Ready). */
  readonly walFsyncs: number;
  readonly walFsyncMeanMs: number;
  /** Real fdatasync calls (group commits), and state machine write transactions. */
  readonly walSyncs: number;
  readonly applyBatches: number;
  readonly committedEntries: number;
  readonly entriesPerFsync: number;
  readonly proposalMeanMs: number;
}

/** What happened between two scrapes of the leader's /metrics. */
export function leaderActivity(before: string, after: string): LeaderActivity {
  const delta = (name: string): number => metricValue(after, name) - metricValue(before, name);
  // The etcd name since the etcd-mixin dashboards (#29); it was baton_wal_fsync_seconds.
  const walFsyncs = delta('etcd_disk_wal_fsync_duration_seconds_count');
  const committedEntries = delta('baton_raft_commit_index');
  const proposals = delta('baton_proposal_seconds_count');
  return {
    walFsyncs,
    walFsyncMeanMs: (1000 * delta('etcd_disk_wal_fsync_duration_seconds_sum')) / walFsyncs,
    walSyncs: delta('baton_wal_syncs_total'),
    applyBatches: delta('baton_apply_batches_total'),
    committedEntries,
    entriesPerFsync: committedEntries / walFsyncs,
    proposalMeanMs: (1000 * delta('baton_proposal_seconds_sum')) / proposals,
  };
}
