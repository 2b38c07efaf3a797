// The leader moves an older store to the newest store format every member runs a build that
// applies (docs/design/storage.md "Store formats"). A member learns nothing about its peers'
// builds from the log, so the leader reads it off the peer handshake: each outbound connection
// names the newest protocol version both ends speak, and version storeFormat3Version says "this
// build applies store format 3", storeFormat4Version "... format 4". Older builds refuse an
// upgradeStore to a format they do not know without changing anything, but they cannot apply what
// the new format allows (leaseGrantBatch, op 19, from 3; leaseRevokeBatch, op 21, from 4): so a
// format is proposed only while every other member of the configuration (voters, outgoing voters
// and learners: all apply the log) holds an accepted connection at its version, and the leader
// proposes the newest such format (a cell with one member still on a format-3 build goes to 3).
// Until it commits, the lease service keeps granting one entry per lease (below 3) and revoking
// one entry per expired lease (below 4).
import type { Timers } from '../base/timers.js';
import { cellWork, storeFormatLatest, type CommandProposer, type StoreFormat } from '../mvcc/index.js';
import type { ConfState, MemberId, Role } from '../raft/index.js';
import { storeFormat3Version, storeFormat4Version, storeFormat5Version } from '../transport/index.js';
import type { NodeLogger } from './node.js';

/** The peer protocol version from which a member's build applies each store format. */
const peerVersionApplying: Readonly<Partial<Record<StoreFormat, number>>> = {
  3: storeFormat3Version, 4: storeFormat4Version, 5: storeFormat5Version,
};

/** How often the leader looks (a rolling upgrade's last restart is followed within about this long). */
export const storeUpgradeCheckMs = 1_000;

export interface UpgradeView {
  readonly self: MemberId;
  readonly role: Role;
  readonly storeFormat: StoreFormat;
  readonly confState: ConfState;
  /** The protocol version member `id` accepted on this member's current connection to it, or null. */
  readonly acceptedVersion: (id: MemberId) => number | null;
}

/**
 * The format to propose now, or why not (for the log, said once per reason). Pure: the caller
 * supplies what the driver, the store and the transport say at this moment.
 */
export function upgradeDecision(view: UpgradeView): { readonly propose: StoreFormat } | { readonly wait: string } {
  if (view.role !== 'leader') return { wait: 'not the leader' };
  if (view.storeFormat >= storeFormatLatest) return { wait: 'the store is at the newest format' };
  // The oldest protocol version among the other members: it says the newest format all apply.
  const { voters, votersOutgoing, learners } = view.confState;
  const members = new Set([...voters, ...votersOutgoing, ...learners]);
  let oldest: { id: MemberId; version: number } | null = null;
  for (const id of members) {
    if (id === view.self) continue;
    const version = view.acceptedVersion(id);
    if (version === null) return { wait: `member ${id} is not connected` };
    if (oldest === null || version < oldest.version) oldest = { id, version };
  }
  for (let format = storeFormatLatest; format > view.storeFormat; format--) {
    const needed = peerVersionApplying[format as StoreFormat];
    if (needed !== undefined && (oldest === null || oldest.version >= needed)) return { propose: format as StoreFormat };
  }
  // The nearest format a peer version is known to apply: what the oldest member lacks.
  let next = view.storeFormat + 1;
  while (next < storeFormatLatest && peerVersionApplying[next as StoreFormat] === undefined) next++;
  const needed = peerVersionApplying[next as StoreFormat];
  if (needed === undefined || oldest === null) return { wait: `no peer version is known to apply format ${next}` };
  return { wait: `member ${oldest.id} speaks peer protocol ${oldest.version} (format ${next} needs ${needed})` };
}

export interface StoreUpgraderDeps {
  readonly view: () => UpgradeView;
  readonly proposer: CommandProposer;
  readonly timers: Timers;
  readonly log: NodeLogger;
}

/** Looks every storeUpgradeCheckMs on every member; only a leader with every peer upgraded proposes. */
export class StoreUpgrader {
  private timer: { cancel(): void } | null = null;
  private inFlight = false;
  private stopped = false;
  private lastWait = '';

  constructor(private readonly deps: StoreUpgraderDeps) {}

  start(): void {
    this.schedule();
  }

  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
    this.timer = null;
  }

  /** One look (the timer's; tests call it directly). */
  check(): void {
    if (this.inFlight || this.stopped) return;
    const view = this.deps.view();
    const decision = upgradeDecision(view);
    if ('wait' in decision) {
      // Said once per reason, and only while there is something to upgrade.
      if (view.role === 'leader' && view.storeFormat < storeFormatLatest && decision.wait !== this.lastWait) {
        this.deps.log.info(`store format ${view.storeFormat}: not moving to ${storeFormatLatest} yet: ${decision.wait}`);
      }
      this.lastWait = decision.wait;
      return;
    }
    this.inFlight = true;
    this.lastWait = '';
    this.deps.log.info(`store format ${view.storeFormat}: every member applies format ${decision.propose}; proposing upgradeStore`);
    this.deps.proposer.propose({ type: 'upgradeStore', storeFormat: decision.propose }, undefined, cellWork).then(
      ({ result }) => this.deps.log.info(`store format ${result.storeFormat} from revision ${result.revision}`),
      (error: unknown) => this.deps.log.warn(`upgradeStore to format ${decision.propose} failed (tried again): ${String(error)}`),
    ).finally(() => {
      this.inFlight = false;
    });
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = this.deps.timers.setTimeout(() => {
      this.check();
      this.schedule();
    }, storeUpgradeCheckMs);
  }
}
