// etcd's Maintenance.MoveLeader, Hash, HashKV, Defragment and Alarm over the node (see
// docs/etcd-compat.md). Hashes are Baton's content hashes (src/mvcc/kv-hash.ts, MvccStore.hash):
// functions of the replicated state, so members agree unless one's store was damaged.
import { status } from '@grpc/grpc-js';
import { BatonError } from '../../base/errors.js';
import type { KvHash } from '../../mvcc/index.js';
import { GrpcStatusError } from './errors.js';
import type { HeaderSource, ResponseHeader } from './header.js';

export interface MaintenanceAccess {
  readonly memberId: number;
  isLeader(): boolean;
  /** Baton's leader transfer (Membership.transferLeadership): resolves once `to` leads. */
  transferLeadership(to: number): Promise<void>;
  /** The key space's hash at `revision` (0: now), a page per step (hashKeySpaceSteps). */
  hashKv(revision: number): Generator<void, KvHash, undefined>;
  /** The whole store's content hash (keys, history, leases, dedup table), as uint32. */
  hashAll(): number;
}

export const etcdMaintenanceMessages = {
  notLeader: 'etcdserver: not leader',
  badTransferee: 'etcdserver: bad leader transferee',
  transferTimeout: 'etcdserver: request timed out, leader transfer took too long',
} as const;

/** etcd's AlarmType and AlarmRequest.AlarmAction, as numbers on the wire. */
export const alarmType = { none: 0, nospace: 1, corrupt: 2 } as const;
const alarmAction = { get: 0, activate: 1, deactivate: 2 } as const;

interface AlarmMember {
  readonly memberID: string;
  readonly alarm: number;
}

export class MaintenanceFacade {
  /**
   * This node's alarms, "memberID alarm" -> the alarm. Baton itself raises none today (it has no
   * byte quota, and no corruption check runs yet); etcdctl can raise and disarm them.
   */
  private readonly alarms = new Map<string, AlarmMember>();

  constructor(
    private readonly access: MaintenanceAccess,
    private readonly headers: HeaderSource,
  ) {}

  /** Like etcd: only the leader moves leadership (etcdctl move-leader finds it first). */
  async moveLeader(request: { targetID?: string }): Promise<{ header: ResponseHeader }> {
    if (!this.access.isLeader()) throw new GrpcStatusError(status.FAILED_PRECONDITION, etcdMaintenanceMessages.notLeader);
    const target = Number(request.targetID ?? '0');
    if (!Number.isSafeInteger(target) || target < 1) throw new GrpcStatusError(status.FAILED_PRECONDITION, etcdMaintenanceMessages.badTransferee);
    try {
      await this.access.transferLeadership(target);
    } catch (error) {
      const reason = error instanceof BatonError ? error.details['reason'] : undefined;
      if (reason === 'bad_transferee') throw new GrpcStatusError(status.FAILED_PRECONDITION, etcdMaintenanceMessages.badTransferee);
      if (reason === 'not_leader') throw new GrpcStatusError(status.FAILED_PRECONDITION, etcdMaintenanceMessages.notLeader);
      if (reason === 'transfer_timeout' || reason === 'transfer_failed') {
        throw new GrpcStatusError(status.UNAVAILABLE, `${etcdMaintenanceMessages.transferTimeout} (${(error as Error).message})`);
      }
      throw error;
    }
    return { header: this.headers.header() };
  }

  hash(): { header: ResponseHeader; hash: number } {
    const header = this.headers.header();
    return { header, hash: this.access.hashAll() };
  }

  /** A page per event-loop turn: a big key space does not stall heartbeats and other calls. */
  async hashKv(request: { revision?: string }): Promise<{ header: ResponseHeader; hash: number; compact_revision: number }> {
    const steps = this.access.hashKv(Number(request.revision ?? '0'));
    for (let step = steps.next(); ; step = steps.next()) {
      if (step.done === true) {
        return { header: this.headers.header(), hash: step.value.hash, compact_revision: step.value.compactRevision };
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  /**
   * Succeeds and changes nothing: LMDB reuses the pages compaction frees (its free list), so the
   * file stops growing without a defragment; it never shrinks while open (a compacting copy would
   * need the node to reopen its store, which it does not do live).
   */
  defragment(): { header: ResponseHeader } {
    return { header: this.headers.header() };
  }

  alarm(request: { action?: number; memberID?: string; alarm?: number }): { header: ResponseHeader; alarms: AlarmMember[] } {
    const action = request.action ?? alarmAction.get;
    const alarm = request.alarm ?? alarmType.none;
    const memberID = request.memberID === undefined || request.memberID === '0' ? String(this.access.memberId) : request.memberID;
    const key = `${memberID} ${alarm}`;
    let answered: AlarmMember[];
    if (action === alarmAction.get) {
      answered = [...this.alarms.values()].filter((a) => alarm === alarmType.none || a.alarm === alarm);
    } else if (action === alarmAction.activate) {
      if (alarm !== alarmType.nospace && alarm !== alarmType.corrupt) throw new GrpcStatusError(status.INVALID_ARGUMENT, 'etcdserver: unknown alarm');
      const raised = { memberID, alarm };
      this.alarms.set(key, raised);
      answered = [raised];
    } else if (action === alarmAction.deactivate) {
      const raised = this.alarms.get(key);
      this.alarms.delete(key);
      answered = raised === undefined ? [] : [raised];
    } else {
      throw new GrpcStatusError(status.INVALID_ARGUMENT, `etcdserver: unknown alarm action ${action}`);
    }
    return { header: this.headers.header(), alarms: answered };
  }

  /** Raised alarms as etcd's Status lists them in `errors` ("memberID:1 alarm:NOSPACE"). */
  alarmErrors(): string[] {
    return [...this.alarms.values()].map((a) => `memberID:${a.memberID} alarm:${a.alarm === alarmType.nospace ? 'NOSPACE' : 'CORRUPT'}`);
  }
}
