// The native API's operations and answers, as the HTTP, stream and gRPC layers hand them to a
// cell (see ../shared/spec/api.md). Values are bytes; the wire layers choose UTF-8 or base64.

import type { RestoreRecord } from '../membership/member-identity.js';
import type { StoredPolicy } from '../mvcc/index.js';
import type * as mvcc from '../mvcc/index.js';

// One schema: the requests and answers are the state machine's commands and results (mvcc/types.ts)
// without their `type` tag, so a field added there reaches every API. The client's JSON shapes
// derive from these in turn (client/types.ts: the same with values as UTF-8 strings).

type Untagged<T> = Omit<T, 'type'>;

export type KeyValue = mvcc.KeyValue;
export type PutRequest = Untagged<mvcc.PutOp>;
export type PutResult = Untagged<mvcc.PutResult>;
/** `skipCount` is internal (locks): never parsed from a client. */
export type RangeRequest = Omit<mvcc.RangeRequest, 'type' | 'skipCount'>;
export type RangeResult = Untagged<mvcc.RangeResult>;
export type DeleteRequest = Untagged<mvcc.DeleteOp>;
export type DeleteResult = Untagged<mvcc.DeleteResult>;
export type CompareTarget = mvcc.CompareTarget;
export type CompareOp = mvcc.CompareOperator;
export type Compare = mvcc.Compare;

/** A txn step as the APIs spell it: one key per object; no preconditions or past revisions inside. */
export type TxnOp =
  | { readonly put: Pick<mvcc.PutOp, 'key' | 'value' | 'lease'> }
  | { readonly get: Pick<mvcc.RangeRequest, 'key' | 'prefix' | 'limit'> }
  | { readonly delete: Pick<mvcc.DeleteOp, 'key' | 'prefix'> };

export interface TxnRequest {
  readonly compare: readonly Compare[];
  readonly success: readonly TxnOp[];
  readonly failure: readonly TxnOp[];
}

export type TxnOpResult = PutResult | RangeResult | DeleteResult;

export interface TxnResult {
  readonly succeeded: boolean;
  readonly revision: number;
  readonly results: readonly TxnOpResult[];
}

export type Consistency = 'linearizable' | 'serializable';

export interface ReadOptions {
  readonly consistency: Consistency;
  /** Wait (bounded) until this node has applied at least this revision. */
  readonly minRevision?: number;
  /**
   * A linearizable read of a namespace fenced here for a move (administration: the mover's read
   * after the fence). Anyone else's is refused wrong_cell: the destination may take writes from
   * any moment after the fence, so the source's answer could be stale.
   */
  readonly fenced?: boolean;
  /**
   * A prefix read of a namespace's own keys (administration: a move's reads, a creation's count):
   * the keys of these namespaces nested in it are left out, and the read is judged for the
   * namespace alone, wherever the nested ones are (docs/design/cells.md "Nested namespaces").
   */
  readonly exclude?: readonly string[];
  /**
   * A page of a namespace's prefix read (administration: a move's copy, which would otherwise read
   * a large namespace in one answer): the keys strictly after `after` (null: from the first), at
   * most the request's limit; `count` is the keys returned and `more` whether another follows, so
   * a page costs its own keys, not a count of the whole namespace.
   */
  readonly page?: { readonly after: string | null };
}

export interface MemberStatus {
  readonly id: number;
  readonly name: string;
  readonly peerUrl: string;
  readonly clientUrl: string;
  readonly role: 'voter' | 'learner';
  readonly healthy: boolean;
  /** Its etcd gRPC facade's URL where this member knows it (--listen-grpc, --initial-cluster-grpc): routers relay gRPC there. */
  readonly grpcUrl?: string;
  /**
   * The leader's replication progress: the highest log index known to be on this member. Only
   * in the leader's own answer (a follower does not know it); the web console's member table.
   */
  readonly matchIndex?: number;
}

export interface ClusterStatus {
  readonly cell: string;
  readonly clusterId: string;
  readonly member: number;
  readonly leader: number;
  readonly term: number;
  readonly commitIndex: number;
  readonly appliedIndex: number;
  readonly revision: number;
  readonly compactRevision: number;
  /** The fencing epoch (docs/design/restore.md): 0 unless the cell came from a restore. */
  readonly epoch: number;
  /**
   * The store format this member's state is in (replicated: the same on every member once it has
   * applied the same entries); a leader moves an older one forward once every member's build
   * applies the newest (docs/design/storage.md).
   */
  readonly storeFormat: number;
  /**
   * The namespace-move protocol this member's build applies (src/base/namespace-import.ts:
   * 1 = landing imports); absent in builds older than it. Not replicated: each member's own build.
   */
  readonly moveProtocol: number;
  /** The backup this cell was restored from, or null. */
  readonly restoredFrom: RestoreRecord | null;
  /**
   * This member after a restart: 'recovering' while it asks its peers what it promised them,
   * 'regressed' when they showed its data went back in time (it no longer votes; replace it),
   * else 'ok' (src/raft/peer-ledger.ts).
   */
  readonly data: 'ok' | 'recovering' | 'regressed';
  readonly regressedBecause?: string;
  readonly members: readonly MemberStatus[];
}

/** What a restored cell records of its backup: membership/member-identity.ts writes it. */
export type { RestoreRecord } from '../membership/member-identity.js';

/**
 * The node's audit log as the edges see it (src/audit): an operation decided at the edge and not
 * through the log (a snapshot save) is recorded here, and answered once the record is durable.
 */
export interface EdgeAudit {
  record(record: { readonly event: string; readonly principal: string | null; readonly address?: string | null; readonly result: string; readonly revision?: number; readonly detail?: Readonly<Record<string, unknown>> }): void;
  /** Resolves once every record so far is on disk; rejects (unavailable) if the log cannot be written. */
  flushed(): Promise<void>;
}

/**
 * What the HTTP API needs from the node it runs on. Every request names its principal (a
 * certificate's CN or a user; '' anonymous): writes carry it through the log and are decided at
 * apply, reads are decided by the serving member (docs/design/authorization.md).
 */
export interface CellApi {
  readonly cellId: string;
  revision(): number;
  put(request: PutRequest, requestId: string | undefined, principal: string): Promise<PutResult>;
  /**
   * Throws the quota_exceeded a request on `key` would get from its tenant's admission now, taking
   * nothing (#28), after permission_denied if `principal` may not make it: the HTTP edge asks
   * before reading a body. Absent: no tenant admission.
   */
  admitEarly?(key: string, kind: 'read' | 'write', principal: string): void;
  range(request: RangeRequest, options: ReadOptions, principal: string): Promise<RangeResult>;
  deleteRange(request: DeleteRequest, requestId: string | undefined, principal: string): Promise<DeleteResult>;
  txn(request: TxnRequest, requestId: string | undefined, principal: string): Promise<TxnResult>;
  compact(revision: number, principal: string): Promise<{ revision: number; compactRevision: number }>;
  /** The authorization policy record (src/auth's JSON, opaque here) and its version, read linearizably. */
  policyRecord(principal: string): Promise<StoredPolicy>;
  /** Replaces it through the log if it is still at `ifVersion` (else precondition_failed). */
  setPolicyRecord(record: Uint8Array, ifVersion: number, principal: string): Promise<{ version: number }>;
  /** The cell's status as this member sees it (the edges ask checkClusterInfo first). */
  status(): ClusterStatus;
  /** Resolves once this member has applied everything committed when it was called (a ReadIndex). */
  readBarrier(): Promise<void>;
  /** The policy record as applied here, unchecked: for the edges' own use (tokens, AuthStatus). */
  localPolicyRecord(): StoredPolicy;
  /** Throws permission_denied unless `principal` administers the cell (members, maintenance). */
  checkAdmin(principal: string): void;
  /** Throws permission_denied unless `principal` may see the cell's members and status (any known principal). */
  checkClusterInfo(principal: string): void;
  /** Process alive and serving. */
  healthy(): boolean;
  /** Has a leader and has applied what it knows to be committed. */
  ready(): { ready: boolean; reason: string };
  metricsText(): Promise<string>;
}
