// etcd's Cluster.MemberList and Maintenance.Status from the node's status. Member IDs are
// Baton's (1, 2, 3, ...); a member's client URL is its gRPC URL when the node knows it.
import type { CellApi } from '../types.js';
import type { HeaderSource, ResponseHeader } from './header.js';

/** The etcd API version the facade reports in Status (the one its behaviour follows). */
export const reportedEtcdVersion = '3.5.0';

export interface ClusterInfo {
  /** Member name -> its gRPC URL (http://HOST:PORT), for MemberList's clientURLs. */
  readonly grpcUrls: ReadonlyMap<string, string>;
  dbBytes(): number;
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
      members: status.members.map((member) => {
        const url = this.info.grpcUrls.get(member.name);
        return {
          ID: String(member.id),
          name: member.name,
          peerURLs: [member.peerUrl],
          clientURLs: url === undefined ? [] : [url],
          isLearner: member.role === 'learner',
        };
      }),
    };
  }

  status(): Record<string, unknown> {
    const status = this.cell.status();
    const self = status.members.find((member) => member.id === status.member);
    const dbSize = String(this.info.dbBytes());
    const ready = this.cell.ready();
    return {
      header: this.headers.header(status.revision),
      version: reportedEtcdVersion,
      dbSize,
      dbSizeInUse: dbSize,
      leader: String(status.leader),
      raftIndex: String(status.commitIndex),
      raftTerm: String(status.term),
      raftAppliedIndex: String(status.appliedIndex),
      errors: ready.ready ? [] : [ready.reason],
      isLearner: self?.role === 'learner',
    };
  }
}
