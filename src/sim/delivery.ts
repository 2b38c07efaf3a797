// Messages between members: routed through the network model at send time, checked again at
// delivery (a partition that starts mid-flight breaks the connection), held while the receiver is
// paused, and reported back to the sender the way a transport would (snapshot done or failed,
// peer unreachable), so the core's flow control sees what a real transport tells it.
import { assert } from '../base/assert.js';
import type { MemberId, RaftApi, RaftMessage } from '../raft/index.js';
import type { SimNode } from './sim-node.js';
import { describeMessage } from './trace.js';
import type { WorldEvent } from './types.js';
import type { World } from './world.js';

type DeliverEvent = WorldEvent & { type: 'deliver' };
type ReportEvent = WorldEvent & { type: 'snapshotReport' | 'unreachable' };

export class Delivery {
  /** Sender>receiver pairs with an unreachable report already on its way (one is enough). */
  private readonly unreachablePending = new Set<string>();

  constructor(private readonly world: World) {}

  send(node: SimNode, messages: readonly RaftMessage[]): void {
    const world = this.world;
    for (const message of messages) {
      assert(message.from === node.id, 'a member sends only its own messages');
      const times = world.network.route(world.nowMs, message.from, message.to);
      if (times.length === 0) {
        world.stats.messagesDropped++;
        this.onUndeliverable(message);
      }
      for (const atMs of times) world.schedule(atMs, { type: 'deliver', message });
      if (message.type === 'snapshot') world.stats.snapshotsSent++;
    }
  }

  deliver(event: DeliverEvent): void {
    const world = this.world;
    const message = event.message;
    const node = world.nodes.get(message.to);
    if (node === undefined || node.state === 'crashed' || node.state === 'removed') {
      world.stats.messagesDropped++;
      if (message.type === 'snapshot') this.onUndeliverable(message);
      return;
    }
    if (world.network.isBlocked(message.from, message.to)) {
      // The partition started while the message was in flight: the connection broke.
      world.stats.messagesDropped++;
      this.onUndeliverable(message);
      return;
    }
    if (node.state === 'paused') {
      world.hold(node, event);
      return;
    }
    world.stats.messagesDelivered++;
    if (world.tracing) world.trace(node, `recv ${describeMessage(message)}`);
    // Through the production driver when it runs, as in a real node: it may refuse a message
    // (an overloaded leader drops forwarded proposals).
    const binding = node.serverDriver;
    if (binding !== null) binding.driver.receive([message]);
    else (node.core as RaftApi).step(message);
    if (message.type === 'snapshot') {
      const backMs = world.nowMs + world.scenario.networkDelayMsMin;
      world.schedule(backMs, {
        type: 'snapshotReport',
        member: message.from,
        to: message.to,
        ok: true,
      });
    }
    node.pump();
  }

  report(event: ReportEvent): void {
    const world = this.world;
    if (event.type === 'snapshotReport' && world.options.driverBugs?.noSnapshotReports === true)
      return;
    if (event.type === 'unreachable')
      this.unreachablePending.delete(pairKey(event.member, event.to));
    const node = world.nodes.get(event.member);
    if (node === undefined || node.state === 'crashed' || node.state === 'removed') return;
    if (node.state === 'paused') {
      world.hold(node, event);
      return;
    }
    const core = node.core as RaftApi;
    if (event.type === 'snapshotReport') core.reportSnapshot(event.to, event.ok);
    else core.reportUnreachable(event.to);
    node.pump();
  }

  private onUndeliverable(message: RaftMessage): void {
    const world = this.world;
    const atMs = world.nowMs + world.scenario.networkDelayMsMax * 2;
    if (message.type === 'snapshot') {
      world.schedule(atMs, {
        type: 'snapshotReport',
        member: message.from,
        to: message.to,
        ok: false,
      });
    } else if (message.type === 'append' && world.network.isBlocked(message.from, message.to)) {
      const key = pairKey(message.from, message.to);
      if (this.unreachablePending.has(key)) return;
      this.unreachablePending.add(key);
      world.schedule(atMs, { type: 'unreachable', member: message.from, to: message.to });
    }
  }
}

function pairKey(from: MemberId, to: MemberId): string {
  return `${from}>${to}`;
}
