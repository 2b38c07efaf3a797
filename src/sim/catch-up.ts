// How long the cell may need after the faults just to ship the log they left behind. Faults can
// leave a long uncommitted tail (a leader cut off from its quorum keeps accepting writes until
// it notices; followers forward theirs to it), and every member must receive it before the
// liveness probe, proposed after it, can commit and be applied everywhere. At the slowest
// scenarios' flow control (64-byte appends, one in flight) 750 entries take 7-8 s of round
// trips on their own (seed 6045, chaos, server driver): a fixed budget would call that a stuck
// cell. The allowance is an upper bound from the scenario's own limits, so a cell that catches
// up more slowly than its flow control allows is still reported.
import type { Scenario } from './types.js';
import type { SimNode } from './sim-node.js';

export interface CatchUp {
  /** Append messages the slowest member needs (a snapshot counts as one). */
  readonly messages: number;
  /** Entries behind the longest log, for the slowest member. */
  readonly entries: number;
  readonly allowanceMs: number;
}

/**
 * The worst member's catch-up right after the faults: the entries it has not applied, up to the
 * end of the longest log, packed into append messages as the leader packs them (at least one
 * entry each, at most `appendBytesMax` of data), `inflightMessagesMax` per round trip, each round
 * trip at the slowest the network and disk can be once the faults stopped.
 */
export function catchUpAfterFaults(nodes: Iterable<SimNode>, scenario: Scenario): CatchUp {
  const members = [...nodes].filter((node) => node.state !== 'removed');
  let longest: SimNode | null = null;
  for (const node of members) if (longest === null || node.log.lastIndex > longest.log.lastIndex) longest = node;
  if (longest === null) return { messages: 0, entries: 0, allowanceMs: 0 };
  const log = longest.log;
  let worst = { messages: 0, entries: 0 };
  for (const node of members) {
    let from = node.appliedIndex + 1;
    let messages = 0;
    if (from <= log.snapshotIndex) {
      messages++; // compacted away there: a snapshot first
      from = log.snapshotIndex + 1;
    }
    let bytes = 0;
    let inMessage = 0;
    for (let index = from; index <= log.lastIndex; index++) {
      const entryBytes = log.dataBytesAt(index) ?? 0;
      if (inMessage > 0 && bytes + entryBytes > scenario.appendBytesMax) {
        inMessage = 0;
        bytes = 0;
      }
      if (inMessage === 0) messages++;
      inMessage++;
      bytes += entryBytes;
    }
    if (messages > worst.messages) worst = { messages, entries: log.lastIndex - node.appliedIndex };
  }
  const rounds = Math.ceil(worst.messages / scenario.inflightMessagesMax);
  return { ...worst, allowanceMs: rounds * roundTripMsMax(scenario) };
}

/** An append and its answer at the slowest: the network's delay plus jitter each way, one disk write. */
function roundTripMsMax(scenario: Scenario): number {
  const oneWayMs = scenario.networkDelayMsMax + Math.max(1, scenario.networkDelayMsMax >> 1);
  return 2 * oneWayMs + scenario.diskLatencyMsMax;
}
