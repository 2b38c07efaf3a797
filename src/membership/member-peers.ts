// The peer transport follows the committed configuration: every member of it is dialled (its
// address from the member directory), a member that leaves it is dropped for good (ids are never
// reused), and this node notices its own removal. Driven by the configuration entries and
// snapshots the node applies, in log order, so a node replaying old history never drops a member
// it has not seen leave.
import { assert } from '../base/assert.js';
import type { ConfState } from '../raft/index.js';
import type { MemberDirectory } from './member-directory.js';
import type { Timers } from '../base/timers.js';
import type { PeerSender } from '../transport/types.js';

export interface PeerDialer {
  addPeer(id: number, address: { host: string; port: number }): void;
  removePeer(id: number): void;
  /** Is a connection to `id` open now? */
  isConnected(id: number): boolean;
}

export interface MemberPeersOptions {
  readonly memberId: number;
  /** Where to dial a member by name when it differs from its peer URL (a test's fault proxy). */
  readonly peerDial: ReadonlyMap<string, { host: string; port: number }>;
  /** Removed peers' connections close this long after the change (queued messages leave first). */
  readonly removeDelayMs: number;
}

export function allMemberIds(conf: ConfState): number[] {
  return [...new Set([...conf.voters, ...conf.votersOutgoing, ...conf.learners])].sort((a, b) => a - b);
}

export class MemberPeers {
  private readonly dialed = new Set<number>();
  /** Removed members (never dialled again) and ids whose URLs are not known yet. */
  private readonly gone = new Set<number>();
  private readonly unknown = new Set<number>();
  /** The configuration as of the last configuration entry (or snapshot) this node applied. */
  private lastConf: ConfState;
  private selfRemoved = false;

  constructor(
    private readonly options: MemberPeersOptions,
    initialConf: ConfState,
    private readonly store: { membersRecord(): string | null },
    private readonly directory: MemberDirectory,
    private readonly transport: PeerDialer,
    private readonly timers: Timers,
    private readonly log: { info(message: string): void; warn(message: string): void },
    /** This member left the configuration (called once, after its last messages had time to leave). */
    private readonly onSelfRemoved: () => void,
  ) {
    this.lastConf = initialConf;
  }

  /** Is this member's connection to `id` open (as far as the transport knows)? */
  isConnected(id: number): boolean {
    return this.transport.isConnected(id);
  }

  get removed(): boolean {
    return this.selfRemoved;
  }

  /** The configuration this node has applied (its member table is in the directory with it). */
  get appliedConf(): ConfState {
    return this.lastConf;
  }

  /** Dials `ids` (at start: the configuration, or everyone known while not in it yet). */
  dialAll(ids: readonly number[]): void {
    for (const id of ids) this.ensure(id);
  }

  /**
   * At start, for a node in the configuration: every id given out (up to the member table's
   * highest; ids are never reused) that the configuration does not hold was removed. The
   * transport refuses those as removed, so a member removed while cut off stops when it reaches
   * this node, even if this node restarted since the removal (it had forgotten it).
   */
  refuseRemoved(): void {
    const inConf = new Set(allMemberIds(this.lastConf));
    assert(inConf.has(this.options.memberId), 'only a member knows who left');
    for (let id = 1; id <= this.directory.maxMemberId; id++) {
      if (inConf.has(id)) continue;
      this.gone.add(id);
      this.transport.removePeer(id);
    }
  }

  /** A configuration entry or snapshot this node applied: follow it. */
  follow(next: ConfState): void {
    this.unknown.clear();
    this.directory.mergeRecordText(this.store.membersRecord());
    const self = this.options.memberId;
    const after = allMemberIds(next);
    const gone = allMemberIds(this.lastConf).filter((id) => !after.includes(id));
    this.lastConf = next;
    if (gone.includes(self)) {
      this.markSelfRemoved(this.options.removeDelayMs);
      this.dropLater([...this.dialed]);
      return;
    }
    this.dropLater(gone);
    for (const id of after) this.ensure(id);
  }

  /** This member is not in the configuration any more (now, or found so at start). */
  markSelfRemoved(stopAfterMs: number): void {
    if (this.selfRemoved) return;
    this.selfRemoved = true;
    this.log.warn('membership: this member was removed from the cell; it stops (wipe its data before adding it again)');
    this.timers.setTimeout(() => this.onSelfRemoved(), stopAfterMs);
  }

  /** Wraps the sender so that a message to a member not dialled yet dials it first. */
  sender(inner: PeerSender): PeerSender {
    return {
      send: (messages) => {
        for (const message of messages) {
          if (!this.dialed.has(message.to) && !this.unknown.has(message.to)) this.ensure(message.to);
        }
        inner.send(messages);
      },
      flush: () => inner.flush?.(),
      flushSoon: () => (inner.flushSoon === undefined ? inner.flush?.() : inner.flushSoon()),
    };
  }

  private dropLater(ids: readonly number[]): void {
    if (ids.length === 0) return;
    for (const id of ids) {
      this.dialed.delete(id);
      this.gone.add(id);
    }
    // Messages queued this turn (the commit of the change itself) still leave first.
    this.timers.setTimeout(() => {
      for (const id of ids) {
        this.transport.removePeer(id);
        this.log.info(`membership: stopped talking to removed member ${id}`);
      }
    }, this.options.removeDelayMs);
  }

  private ensure(id: number): void {
    if (id === this.options.memberId || this.dialed.has(id) || this.gone.has(id) || this.selfRemoved) return;
    let info = this.directory.get(id);
    if (info === undefined && this.directory.mergeRecordText(this.store.membersRecord())) info = this.directory.get(id);
    if (info === undefined || info.peerUrl === '') {
      if (!this.unknown.has(id)) this.log.warn(`membership: no peer URL known for member ${id} yet`);
      this.unknown.add(id);
      return;
    }
    const url = new URL(info.peerUrl);
    const address = this.options.peerDial.get(info.name) ?? { host: url.hostname, port: Number(url.port) };
    assert(address.port > 0 && address.port < 65536, 'a member\'s peer URL has a port');
    this.transport.addPeer(id, address);
    this.dialed.add(id);
  }
}
