// etcd's Maintenance.MoveLeader, Hash, HashKV, Defragment and Alarm over the node (see
// docs/etcd-compat.md). Hashes are Baton's content hashes (src/mvcc/kv-hash.ts, MvccStore.hash):
// functions of the replicated state, so members agree unless one's store was damaged.
import { status } from '@grpc/grpc-js';
import { BatonError } from '../../base/errors.js';
import type { KvHash } from '../../mvcc/index.js';
import { alarmType, type AlarmTable, type RaisedAlarm } from '../alarms.js';
import { GrpcStatusError } from './errors.js';
import type { HeaderSource, ResponseHeader } from './header.js';

export interface MaintenanceAccess {
  readonly memberId: number;
  isLeader(): boolean;
  /** Baton's leader transfer (Membership.transferLeadership): resolves once `to` leads. */
  transferLeadership(to: number): Promise<void>;
  /** The key space's hash at `revision` (0: now), paced (api/hash-kv.ts). */
  hashKv(revision: number): Promise<KvHash>;
  /** The whole store's content hash (keys, history, leases, dedup table), as uint32. */
  hashAll(): number;
  /** This node's alarms (shared with its corruption check). */
  readonly alarms: AlarmTable;
}

export const etcdMaintenanceMessages = {
  notLeader: 'etcdserver: not leader',
  badTransferee: 'etcdserver: bad leader transferee',
  transferTimeout: 'etcdserver: request timed out, leader transfer took too long',
} as const;

/** etcd's AlarmRequest.AlarmAction, as numbers on the wire. */
const alarmAction = { get: 0, activate: 1, deactivate: 2 } as const;

export class MaintenanceFacade {
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

  async hashKv(request: { revision?: string }): Promise<{ header: ResponseHeader; hash: number; compact_revision: number }> {
    const result = await this.access.hashKv(Number(request.revision ?? '0'));
    return { header: this.headers.header(), hash: result.hash, compact_revision: result.compactRevision };
  }

  /**
   * Succeeds and changes nothing: LMDB reuses the pages compaction frees (its free list), so the
   * file stops growing without a defragment; it never shrinks while open (a compacting copy would
   * need the node to reopen its store, which it does not do live).
   */
  defragment(): { header: ResponseHeader } {
    return { header: this.headers.header() };
  }

  /** etcd 3.4 answers Alarm without a header (recorded from its gateway: test/fixtures/etcd-gateway). */
  alarm(request: { action?: number; memberID?: string; alarm?: number }): { alarms: RaisedAlarm[] } {
    const action = request.action ?? alarmAction.get;
    const alarm = request.alarm ?? alarmType.none;
    const memberID = request.memberID === undefined || request.memberID === '0' ? String(this.access.memberId) : request.memberID;
    const { alarms } = this.access;
    let answered: RaisedAlarm[];
    if (action === alarmAction.get) {
      answered = alarms.list(alarm);
    } else if (action === alarmAction.activate) {
      if (alarm !== alarmType.nospace && alarm !== alarmType.corrupt) throw new GrpcStatusError(status.INVALID_ARGUMENT, 'etcdserver: unknown alarm');
      answered = [alarms.activate(memberID, alarm)];
    } else if (action === alarmAction.deactivate) {
      const cleared = alarms.deactivate(memberID, alarm);
      answered = cleared === null ? [] : [cleared];
    } else {
      throw new GrpcStatusError(status.INVALID_ARGUMENT, `etcdserver: unknown alarm action ${action}`);
    }
    return { alarms: answered };
  }

  /** Raised alarms as etcd's Status lists them in `errors` ("memberID:1 alarm:NOSPACE"). */
  alarmErrors(): string[] {
    return this.access.alarms.errors();
  }
}
