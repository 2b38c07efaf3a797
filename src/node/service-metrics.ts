// The services' own counters on /metrics: sessions (leases) expiring, watches open and ended by
// reason (a compaction reset is `compacted`), and fencing checks that found a stale token.
import { Gauge, LabelledGauge, type Registry } from '../metrics/registry.js';

export function addServiceMetrics(
  registry: Registry,
  services: {
    leases: { readonly expiredTotal: number };
    watches: { readonly hub: { readonly size: number; readonly ended: Readonly<Record<string, number>> } };
    locks: { readonly fencingChecks: { readonly valid: number; readonly stale: number } };
  },
): void {
  const { leases, watches, locks } = services;
  registry.add(new Gauge('etcd_debugging_server_lease_expired_total', 'The total number of expired leases (revoked by this member as leader when their TTL ran out).',
    () => leases.expiredTotal, 'counter'));
  registry.add(new Gauge('baton_watches', 'Watchers open on this node', () => watches.hub.size));
  registry.add(new Gauge('etcd_debugging_mvcc_watcher_total', 'Total number of watchers.', () => watches.hub.size));
  registry.add(new LabelledGauge('baton_watch_ended_total', 'Watchers ended on this node by reason (compacted: a compaction reset; slow_consumer, leaderless, permission_denied, stopped, canceled, wrong_cell: its namespace moved)',
    () => Object.entries(watches.hub.ended).map(([reason, count]) => [{ reason }, count] as const), 'counter'));
  registry.add(new LabelledGauge('baton_fencing_checks_total', 'POST /v1/fencing/check answers by result (stale: the token no longer holds the lock)',
    () => [[{ result: 'valid' }, locks.fencingChecks.valid], [{ result: 'stale' }, locks.fencingChecks.stale]] as const, 'counter'));
}
