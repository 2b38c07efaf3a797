// The production lease service (src/lease/lease-service.ts) inside a simulated member: its
// clock and timers are the simulated ones, its driver is the member's production driver, its
// store view follows the member's MVCC store (which a snapshot replaces), and a follower reaches
// its leader through the simulated network (lease-forwarder.ts). Nothing here reads real time.
import { simGuard } from './sim-guard.js';
import type { ApplyOutcome } from '../mvcc/index.js';
import type { Entry } from '../raft/index.js';
import type { NodeDriver } from '../driver/driver.js';
import type { LeaseServiceOptions } from '../lease/lease-config.js';
import type { LeaseForwarder } from '../lease/api.js';
import { LeaseService, type LeaseStore } from '../lease/lease-service.js';
import { LogProposer, type ProposalLog } from '../driver/command-proposer.js';
import { assert } from '../base/assert.js';
import type { Timers } from '../base/timers.js';
import type { MvccApplier } from './mvcc-machine.js';
import type { AppliedOutcome } from './server-driver.js';
import type { NodeWorld, SimNode } from './sim-node.js';

/** What the lease workload lends every member's lease service. */
export interface SimLeaseEnv {
  readonly options: LeaseServiceOptions;
  /** How `node` reaches its leader. */
  forwarder(node: SimNode): LeaseForwarder;
  /** A proposal id unique across the run (the driver's own are random, so not replayable). */
  nextProposalId(): Uint8Array;
  /** An entry `node` applied, with the MVCC store's answer (the lease checker's tap). */
  onOutcome(node: SimNode, entry: Entry, outcome: ApplyOutcome): void;
}

export function createSimLeaseService(
  node: SimNode,
  world: NodeWorld,
  driver: NodeDriver<AppliedOutcome>,
  applier: MvccApplier,
  timers: Timers,
  env: SimLeaseEnv,
): LeaseService {
  const store: LeaseStore = {
    get appliedTerm() {
      return applier.store.appliedTerm;
    },
    get revision() {
      return applier.store.revision;
    },
    get limits() {
      return applier.store.limits;
    },
    get storeFormat() {
      return applier.store.storeFormat;
    },
    lease: (id) => applier.store.lease(id),
    leaseOrigin: (id) => applier.store.leaseOrigin(id),
    leases: () => applier.store.leases(),
    leasesPage: (afterId, limit) => applier.store.leasesPage(afterId, limit),
    keysOfLease: (id) => applier.store.keysOfLease(id),
  };
  const proposer = new LogProposer(mvccLog(driver, () => env.nextProposalId()), {
    memberId: node.id,
    limits: store.limits,
    wallMs: () => world.nowMs,
    monotonicMs: () => timers.monotonicMs(),
  });
  return new LeaseService({ memberId: node.id, store, timers, driver, proposer, forwarder: env.forwarder(node), guard: simGuard(() => applier.store) }, env.options);
}

/** The member's driver as a log of MVCC commands (its outcomes carry the MVCC store's answer). */
export function mvccLog(driver: NodeDriver<AppliedOutcome>, nextProposalId: () => Uint8Array): ProposalLog {
  return {
    newProposalId: nextProposalId,
    propose: async (proposalId, command, options) => {
      const outcome = (await driver.propose(proposalId, command, options)).mvcc;
      assert(outcome !== undefined, 'an MVCC command applies with an MVCC outcome');
      return outcome;
    },
  };
}
