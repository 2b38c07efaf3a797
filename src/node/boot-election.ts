// etcd's initial election tick advance: a starting member otherwise waits a whole election timeout
// (plus its random part) before the cell's first election, a second at the defaults, on every
// start and restart. Advanced once a peer is connected, the member's pre-vote can reach someone;
// advanced before that, a lone member would campaign into the void and wait a whole timeout again.
import type { NodeConfig } from './config.js';

/**
 * Called once per tick: true on the one tick the election clock should be advanced, which is the
 * first tick with a peer connected (at once in a one-member cell) within the first two election
 * timeouts after boot; false ever after, and always when the flag is off.
 */
export function bootElectionAdvance(
  config: Pick<NodeConfig, 'initialElectionTickAdvance' | 'electionTicks' | 'members'>,
  anyPeerConnected: () => boolean,
): () => boolean {
  let ticksLeft = config.initialElectionTickAdvance ? 2 * config.electionTicks : 0;
  return () => {
    if (ticksLeft === 0) return false;
    ticksLeft--;
    if (config.members.length > 1 && !anyPeerConnected()) return false;
    ticksLeft = 0;
    return true;
  };
}
