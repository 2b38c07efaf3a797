// Test nodes on 127.0.0.1 with ephemeral ports: each records what it received, what it logged
// and what it reported, and `until` polls a condition with a deadline instead of sleeping.
import type { MemberId, RaftMessage } from '../../../src/raft/index.js';
import {
  PeerTransport, type PeerTransportOptions, type TransportLimits,
} from '../../../src/transport/index.js';
import { SeededRandom } from '../../../src/base/random.js';

export interface TestNode {
  readonly id: MemberId;
  readonly transport: PeerTransport;
  readonly received: RaftMessage[];
  readonly warnings: string[];
  readonly unreachable: MemberId[];
  readonly snapshotReports: { to: MemberId; ok: boolean }[];
}

export const fastLimits: Partial<TransportLimits> = {
  reconnectDelayMsBase: 10,
  reconnectDelayMsMax: 100,
};

export async function startNode(
  id: MemberId,
  options: Partial<PeerTransportOptions> = {},
): Promise<TestNode> {
  const received: RaftMessage[] = [];
  const warnings: string[] = [];
  const unreachable: MemberId[] = [];
  const snapshotReports: { to: MemberId; ok: boolean }[] = [];
  const transport = await PeerTransport.start({
    memberId: id,
    clusterId: 'cluster-a',
    listen: { host: '127.0.0.1', port: 0 },
    peers: new Map(),
    onMessages: (batch) => received.push(...batch),
    reportUnreachable: (to) => unreachable.push(to),
    reportSnapshot: (to, ok) => snapshotReports.push({ to, ok }),
    logger: { info: () => {}, warn: (_fields, message) => warnings.push(message) },
    random: new SeededRandom(BigInt(id)),
    limits: fastLimits,
    ...options,
  });
  return { id, transport, received, warnings, unreachable, snapshotReports };
}

/** Makes every node know every other node's address. */
export function connectAll(nodes: readonly TestNode[]): void {
  for (const node of nodes) {
    for (const other of nodes) {
      if (other !== node) node.transport.addPeer(other.id, other.transport.address());
    }
  }
}

export async function until(condition: () => boolean, what: string, timeoutMs = 5000) {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

export function heartbeat(from: MemberId, to: MemberId, commit: number): RaftMessage {
  return { type: 'heartbeat', from, to, term: 1, commit, readRound: 0, contact: [from] };
}
