// The metrics a node exports on /metrics (Prometheus text format).
import type { RaftApi } from '../raft/index.js';
import { Counter, Gauge, Histogram, Registry } from './registry.js';

export class NodeMetrics {
  readonly registry = new Registry();
  readonly leaderChanges = this.registry.add(new Counter('baton_leader_changes_total', 'Leader changes seen by this node'));
  readonly proposalSeconds = this.registry.add(new Histogram('baton_proposal_seconds', 'Proposal to apply latency'));
  readonly readSeconds = this.registry.add(new Histogram('baton_linearizable_read_seconds', 'ReadIndex confirmation latency'));
  readonly walSyncSeconds = this.registry.add(new Histogram('baton_wal_fsync_seconds', 'WAL write+fdatasync latency per Ready'));
  readonly snapshotSeconds = this.registry.add(new Histogram('baton_snapshot_seconds', 'Snapshot save duration'));
  readonly checkpointSeconds = this.registry.add(new Histogram('baton_checkpoint_seconds', 'Store checkpoint duration (fdatasync of the store file and the checkpoint record)'));
  readonly requests = this.registry.add(new Counter('baton_http_requests_total', 'HTTP requests by status code'));

  constructor(core: RaftApi, read: { appliedIndex(): number; dbBytes(): number; revision(): number }) {
    const gauge = (name: string, help: string, value: () => number): void => {
      this.registry.add(new Gauge(name, help, value));
    };
    gauge('baton_raft_term', 'Current Raft term', () => core.status().term);
    gauge('baton_raft_commit_index', 'Raft commit index', () => core.status().commitIndex);
    gauge('baton_applied_index', 'Index applied to the state machine', () => read.appliedIndex());
    gauge('baton_apply_lag_entries', 'Committed but not yet applied entries', () => core.status().commitIndex - read.appliedIndex());
    gauge('baton_is_leader', '1 if this node is the leader', () => (core.status().role === 'leader' ? 1 : 0));
    gauge('baton_revision', 'The cell revision applied here', () => read.revision());
    gauge('baton_db_size_bytes', 'State machine database size on disk', () => read.dbBytes());
  }
}
