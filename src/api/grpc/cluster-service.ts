// etcd's Cluster.MemberList and Maintenance.Status from the node's status. Member IDs are
// Baton's (1, 2, 3, ...); a member's client URL is its gRPC URL when the node knows it.
import type { CellApi } from '../types.js';
import type { HeaderSource, ResponseHeader } from './header.js';
import type { MaintenanceAccess } from './maintenance-service.js';
import type { MemberAccess } from './member-service.js';

/** The etcd API version the facade reports in Status (the one its behaviour follows). */
export const reportedEtcdVersion = '3.5.0';

export interface ClusterInfo {
  /** Member name -> its gRPC URL (http://HOST:PORT), for MemberList's clientURLs. */
  readonly grpcUrls: ReadonlyMap<string, string>;
  dbBytes(): number;
  /** The bytes of the file's pages in use (the rest are LMDB's free pages, reused by later writes). */
  dbBytesInUse?(): number;
  /** MemberAdd/Promote/Remove/Update are served only when given. */
  readonly members?: MemberAccess;
  /** MoveLeader, Hash, HashKV, Defragment and alarms are served only when given. */
  readonly maintenance?: MaintenanceAccess;
}

export interface EtcdMember {
  readonly ID: string;
  readonly name: string;
  readonly peerURLs: string[];
  readonly clientURLs: string[];
  readonly isLearner: boolean;
}

/** etcd's Member message for a Baton member; `grpcUrl` is its client URL for etcd clients. */
export function etcdMember(
  member: { readonly id: number; readonly name: string; readonly peerUrl: string; readonly role: string },
  grpcUrl: string | undefined,
): EtcdMember {
  return {
    ID: String(member.id),
    name: member.name,
    peerURLs: member.peerUrl === '' ? [] : [member.peerUrl],
    clientURLs: grpcUrl === undefined ? [] : [grpcUrl],
    isLearner: member.role === 'learner',
  };
}

export class ClusterFacade {
  constructor(
    private readonly cell: CellApi,
    private readonly headers: HeaderSource,
    private readonly info: ClusterInfo,
  ) {}

  memberList(): { header: ResponseHeader; members: unknown[] } {
    const status = this.cell.status();
    return {
      // etcd's cluster server fills in no revision (membership is not part of the key space).
      header: { ...this.headers.header(), revision: 0 },
      members: status.members.map((member) => etcdMember(member, this.info.grpcUrls.get(member.name))),
    };
  }

  /** `alarms`: raised alarms, listed in `errors` as etcd does. */
  status(alarms: readonly string[] = []): Record<string, unknown> {
    const status = this.cell.status();
    const self = status.members.find((member) => member.id === status.member);
    const dbBytes = this.info.dbBytes();
    const dbSize = String(dbBytes);
    const inUse = this.info.dbBytesInUse?.() ?? dbBytes;
    const ready = this.cell.ready();
    return {
      header: this.headers.header(status.revision),
      version: reportedEtcdVersion,
      dbSize,
      dbSizeInUse: String(Math.min(inUse, dbBytes)),
      leader: String(status.leader),
      raftIndex: String(status.commitIndex),
      raftTerm: String(status.term),
      raftAppliedIndex: String(status.appliedIndex),
      errors: ready.ready ? [...alarms] : [ready.reason, ...alarms],
      isLearner: self?.role === 'learner',
    };
  }
}
