// The metrics a node exports on /metrics: etcd's names where the meaning matches (so etcd's
// dashboards and alerts work on Baton: docs/operations.md), Baton's own `baton_*` beside them.
import type { RaftApi } from '../raft/index.js';
import { GrpcMetrics } from './grpc-metrics.js';
import { Counter, Gauge, Histogram, LabelledGauge, Registry } from './registry.js';

/** etcd's buckets for its disk histograms (wal fsync, backend commit): 1 ms doubling to ~8 s. */
const diskBuckets = Array.from({ length: 14 }, (_, i) => 0.001 * 2 ** i);
/** etcd's peer round-trip buckets: 0.1 ms doubling to ~1.6 s. */
const rttBuckets = Array.from({ length: 15 }, (_, i) => 0.0001 * 2 ** i);

export interface NodeMetricsSource {
  appliedIndex(): number;
  dbBytes(): number;
  dbBytesInUse(): number;
  /** The store's hard size limit (LMDB's map size): etcd's quota-backend-bytes. */
  dbBytesMax(): number;
  revision(): number;
  compactRevision(): number;
  /** Live keys of the applied state (exact: counted at apply, recounted after an open or install). */
  keys(): number;
  /** Bytes appended to the WAL (log growth). */
  walBytes(): number;
  /** Proposals of this node waiting for their entry to apply. */
  proposalsPending(): number;
  /** Per peer: bytes sent, bytes received, sends that failed (connects refused, messages dropped). */
  peerBytes(): { sent: ReadonlyMap<number, number>; received: ReadonlyMap<number, number>; failures: ReadonlyMap<number, number> };
}

export class NodeMetrics {
  readonly registry = new Registry();
  // etcd's server metrics.
  readonly leaderChanges = this.registry.add(new Counter('etcd_server_leader_changes_seen_total', 'The number of leader changes seen.')).child();
  readonly proposalsFailed = this.registry.add(new Counter('etcd_server_proposals_failed_total', 'The total number of failed proposals seen.')).child();
  readonly walSyncSeconds = this.registry.add(new Histogram('etcd_disk_wal_fsync_duration_seconds', 'The latency distributions of fsync called by WAL (Baton: one write+fdatasync per Ready).', diskBuckets));
  readonly checkpointSeconds = this.registry.add(new Histogram('etcd_disk_backend_commit_duration_seconds', 'The latency distributions of commit called by backend (Baton: the store checkpoint, fdatasync of the LMDB file).', diskBuckets));
  readonly snapshotSeconds = this.registry.add(new Histogram('etcd_debugging_snap_save_total_duration_seconds', 'The total latency distributions of save called by snapshot.', diskBuckets));
  readonly peerRtt = this.registry.add(new Histogram('etcd_network_peer_round_trip_time_seconds', 'Round-Trip-Time histogram between peers (Baton: a leader heartbeat and its answer).', rttBuckets, false));
  readonly grpc = new GrpcMetrics(this.registry);
  // Baton's own.
  readonly proposalSeconds = this.registry.add(new Histogram('baton_proposal_seconds', 'Proposal to apply latency'));
  readonly readSeconds = this.registry.add(new Histogram('baton_linearizable_read_seconds', 'ReadIndex confirmation latency'));
  readonly requests = this.registry.add(new Counter('baton_http_requests_total', 'HTTP requests by status code'));
  readonly watchEventLagSeconds = this.registry.add(new Histogram('baton_watch_event_lag_seconds', 'Watch event lag on this member: a revision applied to its batch handed to a client connection'));
  readonly keepaliveSeconds = this.registry.add(new Histogram('baton_lease_keepalive_seconds', 'Lease renewal latency: a keepalive served here (renewed on the leader or forwarded to it)'));
  readonly confirmRoundSeconds = this.registry.add(new Histogram('baton_lease_confirm_round_seconds', 'Leader: a leadership confirmation that renewals waited on (a ReadIndex round), start to answer'));
  readonly confirmRoundKeepalives = this.registry.add(new Histogram('baton_lease_confirm_round_keepalives', 'Leader: keepalives (frames of up to 1,000 leases) that shared one leadership confirmation', [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000])).child();
  readonly keepaliveFailures = this.registry.add(new Counter('baton_lease_keepalive_failures_total', 'Keepalives served here that failed (no leader, overloaded, lease unknown)')).child();

  constructor(core: RaftApi, read: NodeMetricsSource) {
    const gauge = (name: string, help: string, value: () => number, type: 'gauge' | 'counter' = 'gauge'): void => {
      this.registry.add(new Gauge(name, help, value, type));
    };
    gauge('etcd_server_has_leader', 'Whether or not a leader exists. 1 is existence, 0 is not.', () => (core.status().leader === 0 ? 0 : 1));
    gauge('etcd_server_is_leader', 'Whether or not this member is a leader. 1 if is, 0 otherwise.', () => (core.status().role === 'leader' ? 1 : 0));
    gauge('etcd_server_is_learner', 'Whether or not this member is a learner. 1 if is, 0 otherwise.',
      () => (core.status().confState.learners.includes(core.status().id) ? 1 : 0));
    gauge('etcd_server_proposals_committed_total', 'The total number of consensus proposals committed (the commit index).', () => core.status().commitIndex, 'counter');
    gauge('etcd_server_proposals_applied_total', 'The total number of consensus proposals applied (the applied index).', () => read.appliedIndex(), 'counter');
    gauge('etcd_server_proposals_pending', 'The current number of pending proposals to commit.', () => read.proposalsPending());
    gauge('etcd_server_quota_backend_bytes', 'Current backend storage quota size in bytes (Baton: the LMDB map size).', () => read.dbBytesMax());
    gauge('etcd_mvcc_db_total_size_in_bytes', 'Total size of the underlying database physically allocated in bytes.', () => read.dbBytes());
    gauge('etcd_mvcc_db_total_size_in_use_in_bytes', 'Total size of the underlying database logically in use in bytes.', () => read.dbBytesInUse());
    gauge('etcd_debugging_mvcc_current_revision', 'The current revision of store.', () => read.revision());
    gauge('etcd_debugging_mvcc_compact_revision', 'The revision of the last compaction in store.', () => read.compactRevision());
    gauge('etcd_debugging_mvcc_keys_total', 'Total number of keys.', () => read.keys());
    gauge('etcd_disk_wal_write_bytes_total', 'Total number of bytes written in WAL.', () => read.walBytes(), 'counter');
    const perPeer = (pick: 'sent' | 'received' | 'failures', label: 'To' | 'From') => function* (): Iterable<readonly [Record<string, string>, number]> {
      for (const [id, value] of read.peerBytes()[pick]) yield [{ [label]: id.toString(16) }, value];
    };
    this.registry.add(new LabelledGauge('etcd_network_peer_sent_bytes_total', 'The total number of bytes sent to peers.', perPeer('sent', 'To'), 'counter'));
    this.registry.add(new LabelledGauge('etcd_network_peer_received_bytes_total', 'The total number of bytes received from peers.', perPeer('received', 'From'), 'counter'));
    this.registry.add(new LabelledGauge('etcd_network_peer_sent_failures_total', 'The total number of send failures from peers.', perPeer('failures', 'To'), 'counter'));
    // Baton's own consensus view (etcd has no term or apply-lag gauge).
    gauge('baton_raft_term', 'Current Raft term', () => core.status().term);
    gauge('baton_raft_commit_index', 'Raft commit index', () => core.status().commitIndex);
    gauge('baton_applied_index', 'Index applied to the state machine', () => read.appliedIndex());
    gauge('baton_apply_lag_entries', 'Committed but not yet applied entries', () => core.status().commitIndex - read.appliedIndex());
    gauge('baton_is_leader', '1 if this node is the leader', () => (core.status().role === 'leader' ? 1 : 0));
    gauge('baton_revision', 'The cell revision applied here', () => read.revision());
    gauge('baton_db_size_bytes', 'State machine database size on disk', () => read.dbBytes());
    const health = core.status.bind(core);
    this.registry.add(new LabelledGauge('baton_member_healthy', 'Members the leader heard from within an election timeout (1), the same view on every member; none without a leader',
      function* () {
        const status = health();
        if (status.inContact === null) return;
        const voters = [...status.confState.voters, ...status.confState.learners];
        for (const id of voters) yield [{ member: id.toString(16) }, status.inContact.includes(id) ? 1 : 0] as const;
      }));
  }
}
