// The node-wide gauges of /metrics that read live state from several parts (event loop delay,
// WAL syncs, peer writes, apply batches, leases): registered once the parts exist.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Gauge } from '../metrics/registry.js';
import type { NodeMetrics } from '../metrics/node-metrics.js';
import { epochUsedFraction, epochWarnFraction } from '../mvcc/index.js';

export function addNodeGauges(
  metrics: NodeMetrics,
  state: { readonly wal: { stats(): { syncs: number } }; readonly store: { leaseCount(): number; readonly epoch: number; readonly revision: number } },
  transport: { stats(): { peers: ReadonlyMap<unknown, { sentMessages: number; sentWrites: number }> } },
  driver: { readonly applyBatches: number },
  leases: { readonly trackedCount: number },
): void {
  const { registry } = metrics;
  // How long ready callbacks wait behind the running one: every request's latency includes it.
  // The histogram holds the intervals between its 10 ms samples: the delay is the excess.
  const loopDelayResolutionMs = 10;
  const loopDelay = monitorEventLoopDelay({ resolution: loopDelayResolutionMs });
  loopDelay.enable();
  const delaySeconds = (intervalNs: number): number => Math.max(0, intervalNs / 1e9 - loopDelayResolutionMs / 1000);
  for (const [quantile, label] of [[50, 'p50'], [99, 'p99'], [99.9, 'p999']] as const) {
    registry.add(new Gauge(`baton_event_loop_delay_${label}_seconds`,
      `Event loop delay ${label} since the node started`, () => delaySeconds(loopDelay.percentile(quantile))));
  }
  registry.add(new Gauge('baton_event_loop_delay_max_seconds', 'Longest event loop delay seen', () => delaySeconds(loopDelay.max)));
  registry.add(new Gauge('baton_wal_syncs_total', 'WAL fdatasync calls for appends (one per group commit)', () => state.wal.stats().syncs));
  const sentTotal = (field: 'sentMessages' | 'sentWrites'): number => {
    let total = 0;
    for (const peer of transport.stats().peers.values()) total += peer[field];
    return total;
  };
  registry.add(new Gauge('baton_peer_sent_messages_total', 'Raft messages sent to peers', () => sentTotal('sentMessages')));
  registry.add(new Gauge('baton_peer_sent_writes_total', 'Socket writes to peers (each carries the messages of one flush)', () => sentTotal('sentWrites')));
  registry.add(new Gauge('baton_apply_batches_total', 'State machine write transactions for committed entries', () => driver.applyBatches));
  registry.add(new Gauge('baton_leases', 'Leases in the replicated table', () => state.store.leaseCount()));
  // The fencing epoch (docs/design/restore.md): at its end the cell refuses writes until restored
  // into the next one; the alarm gauge says so at 90%, long before (years at usual write rates).
  const used = (): number => epochUsedFraction(state.store.epoch, state.store.revision);
  registry.add(new Gauge('baton_epoch', 'The fencing epoch this cell\'s revisions live in (0 unless restored)', () => state.store.epoch));
  registry.add(new Gauge('baton_epoch_revisions_used_ratio', 'Share of the epoch\'s 2^40 revisions issued', used));
  registry.add(new Gauge('baton_epoch_alarm', '1 once 90% of the epoch\'s revisions are issued: plan a restore into a new epoch',
    () => (used() >= epochWarnFraction ? 1 : 0)));
  registry.add(new Gauge('baton_leases_tracked', 'Lease deadlines tracked here (the leader only)', () => leases.trackedCount));
}
