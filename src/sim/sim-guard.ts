// The production authorization guard over a simulated member's store (which a snapshot install
// replaces, hence the getter). The simulated clients call as an anonymous principal: with the
// policy off (the simulator never enables it) every request passes both the guard and the
// apply-time decision, so the simulated paths are the production ones.
import { AccessGuard } from '../auth/index.js';
import type { MvccStore } from '../mvcc/index.js';

export const simClient = '';

export function simGuard(store: () => MvccStore): AccessGuard {
  return new AccessGuard({ policyRecord: () => store().policyRecord(), keysOfLease: (lease) => store().keysOfLease(lease) });
}
