// etcd's ResponseHeader: cluster_id, member_id, revision, raft_term on every answer.
// Baton's cluster id is 16 hex digits (64 bits): the same number in decimal here.
import type { CellApi } from '../types.js';

export interface ResponseHeader {
  readonly cluster_id: string;
  readonly member_id: string;
  readonly revision: string;
  readonly raft_term: string;
}

export class HeaderSource {
  private readonly clusterId: string;
  private readonly memberId: string;

  constructor(private readonly cell: CellApi) {
    const status = cell.status();
    this.clusterId = BigInt(`0x${status.clusterId}`).toString();
    this.memberId = String(status.member);
  }

  /** A header at `revision` (default: the node's applied revision now). */
  header(revision?: number): ResponseHeader {
    return {
      cluster_id: this.clusterId,
      member_id: this.memberId,
      revision: String(revision ?? this.cell.revision()),
      raft_term: String(this.cell.status().term),
    };
  }
}
