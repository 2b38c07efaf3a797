// The production lease service (src/lease/lease-service.ts) inside a simulated member: its
// clock and timers are the simulated ones, its driver is the member's production driver, its
// store view follows the member's MVCC store (which a snapshot replaces), and a follower reaches
// its leader through the simulated network (lease-forwarder.ts). Nothing here reads real time.
import type { ApplyOutcome } from '../mvcc/index.js';
import type { Entry } from '../raft/index.js';
import type { NodeDriver } from '../driver/driver.js';
import type { LeaseServiceOptions } from '../lease/lease-config.js';
import type { LeaseForwarder } from '../lease/api.js';
import { LeaseService, type LeaseDriver, type LeaseStore } from '../lease/lease-service.js';
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
    lease: (id) => applier.store.lease(id),
    leases: () => applier.store.leases(),
    leasesPage: (afterId, limit) => applier.store.leasesPage(afterId, limit),
    keysOfLease: (id) => applier.store.keysOfLease(id),
  };
  const leaseDriver: LeaseDriver = {
    get isLeader() {
      return driver.isLeader;
    },
    get leaderId() {
      return driver.leaderId;
    },
    linearizableRead: () => driver.linearizableRead(),
    newProposalId: () => env.nextProposalId(),
    propose: (proposalId, command) =>
      driver.propose(proposalId, command).then((outcome) => {
        if (outcome.mvcc === undefined) throw new Error('a lease command applied without an MVCC outcome');
        return outcome.mvcc;
      }),
  };
  const service = new LeaseService(
    { memberId: node.id, store, timers, wallMs: () => world.nowMs, forwarder: env.forwarder(node) },
    env.options,
  );
  service.attach(leaseDriver, { status: () => ({ term: node.core?.status().term ?? 0 }) });
  return service;
}
