// The native API's operations and answers, as the HTTP, stream and gRPC layers hand them to a
// cell (see ../shared/spec/api.md). Values are bytes; the wire layers choose UTF-8 or base64.

export interface KeyValue {
  readonly key: string;
  readonly value: Uint8Array;
  readonly version: number;
  readonly createRevision: number;
  readonly modRevision: number;
  readonly lease: number;
}

export interface PutRequest {
  readonly key: string;
  readonly value: Uint8Array;
  /** 0 = create only if absent. */
  readonly ifVersion?: number;
  readonly ifRevision?: number;
  readonly lease?: number;
}

export interface PutResult {
  readonly created: boolean;
  readonly version: number;
  readonly revision: number;
  readonly fencingToken: number;
}

export interface RangeRequest {
  readonly key: string;
  readonly prefix?: boolean;
  /**
   * Every key in [key, rangeEnd), by UTF-8 byte order (the etcd facade's ranges; the native HTTP
   * API has no such form). A bound, not a key: any bytes; `0x30` ('0') = every key from `key` on.
   */
  readonly rangeEnd?: Uint8Array;
  readonly limit?: number;
  readonly keysOnly?: boolean;
  readonly countOnly?: boolean;
  /** Read at a past revision (0/undefined = current). */
  readonly revision?: number;
}

export interface RangeResult {
  readonly revision: number;
  readonly count: number;
  readonly more: boolean;
  readonly kvs: readonly KeyValue[];
}

export interface DeleteRequest {
  readonly key: string;
  readonly prefix?: boolean;
  readonly ifVersion?: number;
  readonly ifRevision?: number;
}

export interface DeleteResult {
  readonly deleted: number;
  readonly revision: number;
}

export type CompareTarget = 'version' | 'createRevision' | 'modRevision' | 'value' | 'lease';
export type CompareOp = '==' | '!=' | '<' | '>';

export interface Compare {
  readonly key: string;
  readonly target: CompareTarget;
  readonly op: CompareOp;
  /** A number for every target but `value`, which compares bytes. */
  readonly value: number | Uint8Array;
}

export type TxnOp =
  | { readonly put: { readonly key: string; readonly value: Uint8Array; readonly lease?: number } }
  | { readonly get: { readonly key: string; readonly prefix?: boolean; readonly limit?: number } }
  | { readonly delete: { readonly key: string; readonly prefix?: boolean } };

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
}

export interface MemberStatus {
  readonly id: number;
  readonly name: string;
  readonly peerUrl: string;
  readonly clientUrl: string;
  readonly role: 'voter' | 'learner';
  readonly healthy: boolean;
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
  readonly members: readonly MemberStatus[];
}

/** What the HTTP API needs from the node it runs on. */
export interface CellApi {
  readonly cellId: string;
  revision(): number;
  put(request: PutRequest, requestId: string | undefined): Promise<PutResult>;
  range(request: RangeRequest, options: ReadOptions): Promise<RangeResult>;
  deleteRange(request: DeleteRequest, requestId: string | undefined): Promise<DeleteResult>;
  txn(request: TxnRequest, requestId: string | undefined): Promise<TxnResult>;
  compact(revision: number): Promise<{ revision: number; compactRevision: number }>;
  status(): ClusterStatus;
  /** Process alive and serving. */
  healthy(): boolean;
  /** Has a leader and has applied what it knows to be committed. */
  ready(): { ready: boolean; reason: string };
  metricsText(): string;
}
