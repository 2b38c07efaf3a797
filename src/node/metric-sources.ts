// Readings /metrics takes from parts built after the metrics (the peer transport, the driver).
import { defaultMapSizeBytes } from '../storage/index.js';
import type { TransportStats } from '../transport/index.js';

/** The store's size limit (etcd_server_quota_backend_bytes): the LMDB map size the node opens with. */
export const lmdbMapBytes = defaultMapSizeBytes;

export interface LateMetricSources {
  transport: { stats(): TransportStats } | null;
  driver: { readonly pendingProposals: number } | null;
}

/** Per peer: bytes sent and received, and failed sends (connect failures and dropped messages). */
export function peerBytesOf(transport: LateMetricSources['transport']): {
  sent: ReadonlyMap<number, number>; received: ReadonlyMap<number, number>; failures: ReadonlyMap<number, number>;
} {
  const sent = new Map<number, number>();
  const failures = new Map<number, number>();
  if (transport === null) return { sent, received: new Map(), failures };
  const stats = transport.stats();
  for (const [id, peer] of stats.peers) {
    sent.set(id, peer.sentBytes);
    failures.set(id, peer.connectFailures + peer.droppedMessages);
  }
  return { sent, received: stats.receivedBytes, failures };
}
