// Reconnect delays: exponential so a dead peer costs little, jittered so that members which lost
// a peer together do not retry in lockstep, capped so a recovered peer is found again quickly.
import { assert } from '../base/assert.js';

export interface BackoffLimits {
  readonly reconnectDelayMsBase: number;
  readonly reconnectDelayMsMax: number;
}

/** Delay before reconnect attempt `failures` (1 = after the first failure): in [d/2, d]. */
export function reconnectDelayMs(
  failures: number,
  limits: BackoffLimits,
  random: { uint32(): number },
): number {
  assert(Number.isInteger(failures) && failures >= 1, 'a delay follows a failure');
  const exponent = Math.min(failures - 1, 30);
  const ceiling = Math.min(limits.reconnectDelayMsMax, limits.reconnectDelayMsBase * 2 ** exponent);
  const delay = ceiling / 2 + (random.uint32() / 0x1_0000_0000) * (ceiling / 2);
  assert(delay >= 0 && delay <= limits.reconnectDelayMsMax, 'delay within bounds');
  return Math.round(delay);
}
