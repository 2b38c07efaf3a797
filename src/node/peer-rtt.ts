// Peer round-trip time as etcd exports it (etcd_network_peer_round_trip_time_seconds{To}): the
// leader times each peer's heartbeat from its send to the peer's answer. One heartbeat in flight
// per peer is timed (the oldest); one unanswered for longer than `staleMs` (a peer down) is dropped
// rather than reported as one huge round trip when the peer comes back.
import type { MemberId, RaftMessage } from '../raft/index.js';

export class PeerRttMeter {
  private readonly sentAtMs = new Map<MemberId, number>();

  constructor(
    private readonly observe: (to: MemberId, seconds: number) => void,
    private readonly nowMs: () => number = () => performance.now(),
    private readonly staleMs = 5000,
  ) {}

  onSent(messages: readonly RaftMessage[]): void {
    for (const message of messages) {
      if (message.type !== 'heartbeat') continue;
      const at = this.sentAtMs.get(message.to);
      const now = this.nowMs();
      if (at === undefined || now - at > this.staleMs) this.sentAtMs.set(message.to, now);
    }
  }

  onReceived(messages: readonly RaftMessage[]): void {
    for (const message of messages) {
      if (message.type !== 'heartbeatResponse') continue;
      const at = this.sentAtMs.get(message.from);
      if (at === undefined) continue;
      this.sentAtMs.delete(message.from);
      this.observe(message.from, (this.nowMs() - at) / 1000);
    }
  }
}

/** `inner` with the heartbeats it sends timed by `meter`. */
export function timedSender<S extends { send(messages: readonly RaftMessage[]): void; flush?(): void }>(meter: PeerRttMeter, inner: S): S {
  return {
    ...inner,
    send: (messages: readonly RaftMessage[]) => {
      meter.onSent(messages);
      inner.send(messages);
    },
    ...(inner.flush === undefined ? {} : { flush: () => inner.flush?.() }),
  };
}
