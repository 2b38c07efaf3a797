// etcd's ResponseHeader: cluster_id, member_id, revision, raft_term on every answer.
// Baton's cluster id is 16 hex digits (64 bits): the same number in decimal here. The term comes
// from the node's status, which builds the member list: it is read at most every termCacheMs
// (a term is informational to etcd clients; the revision is always exact).
import type { CellApi } from '../types.js';

const termCacheMs = 50;

export interface ResponseHeader {
  /** uint64: decimal text (it may exceed 2^53). */
  readonly cluster_id: string;
  readonly member_id: number;
  readonly revision: number;
  readonly raft_term: number;
}

export class HeaderSource {
  private readonly clusterId: string;
  private readonly memberId: number;
  private term = 0;
  private termReadAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly cell: CellApi) {
    const status = cell.status();
    this.clusterId = BigInt(`0x${status.clusterId}`).toString();
    this.memberId = status.member;
  }

  private currentTerm(): number {
    const now = performance.now();
    if (now - this.termReadAt >= termCacheMs) {
      this.term = this.cell.status().term;
      this.termReadAt = now;
    }
    return this.term;
  }

  /** The header of a response inside a Txn answer: etcd fills in only its revision. */
  revisionOnly(revision: number): ResponseHeader {
    return { cluster_id: '0', member_id: 0, revision, raft_term: 0 };
  }

  /** A header at `revision` (default: the node's applied revision now). */
  header(revision?: number): ResponseHeader {
    return {
      cluster_id: this.clusterId,
      member_id: this.memberId,
      revision: revision ?? this.cell.revision(),
      raft_term: this.currentTerm(),
    };
  }
}
