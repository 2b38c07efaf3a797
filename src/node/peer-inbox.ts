// What the peers send this node: Raft messages, lease frames, snapshot streams, and the
// transport's delivery reports. The transport must listen before the driver exists (the driver
// sends through it), so this is the node's one late binding: connect() names the receivers once
// every service is built. Until then inbound traffic is dropped, which Raft (retransmits) and the
// lease forwarders (timeouts, then HTTP) already survive.
import { assert } from '../base/assert.js';
import { UnavailableError } from '../base/errors.js';
import type { MemberId, RaftMessage } from '../raft/index.js';
import type { IncomingSnapshot, LeasePeerMessage } from '../transport/index.js';

export interface InboxReceivers {
  readonly driver: {
    receive(messages: readonly RaftMessage[]): void;
    reportUnreachable(to: MemberId): void;
    reportNoLedger(to: MemberId): void;
    reportSnapshot(to: MemberId, ok: boolean): void;
  };
  readonly leaseFrame: (from: MemberId, message: LeasePeerMessage) => void;
  readonly snapshot: (incoming: IncomingSnapshot) => Promise<void>;
  readonly removedByPeer: (peer: MemberId) => void;
}

export class PeerInbox {
  private receivers: InboxReceivers | null = null;

  connect(receivers: InboxReceivers): void {
    assert(this.receivers === null, 'the inbox is connected once');
    this.receivers = receivers;
  }

  readonly onMessages = (batch: readonly RaftMessage[]): void => this.receivers?.driver.receive(batch);
  readonly onLeaseMessage = (from: MemberId, message: LeasePeerMessage): void => this.receivers?.leaseFrame(from, message);
  readonly reportUnreachable = (to: MemberId): void => this.receivers?.driver.reportUnreachable(to);
  readonly reportNoLedger = (to: MemberId): void => this.receivers?.driver.reportNoLedger(to);
  readonly reportSnapshot = (to: MemberId, ok: boolean): void => this.receivers?.driver.reportSnapshot(to, ok);
  readonly onRemovedByPeer = (peer: MemberId): void => this.receivers?.removedByPeer(peer);
  readonly onSnapshot = (incoming: IncomingSnapshot): Promise<void> => {
    // Refused while starting: the sender retries the stream later.
    if (this.receivers === null) return Promise.reject(new UnavailableError('the node is starting'));
    return this.receivers.snapshot(incoming);
  };
}
