// The etcd messages as @grpc/proto-loader decodes them (keepCase, longs as strings, enums as
// numbers, defaults filled in, oneof names set), or kv-codec.ts for Range and Put (longs as
// numbers): only the fields the facade reads or writes.
import { InvalidArgumentError } from '../../base/errors.js';
import type { ResponseHeader } from './header.js';

/** Decimal text from proto-loader, a number from kv-codec.ts; answers use numbers (both encoders take them). */
export type Int64 = string | number;

export interface KeyValueMsg {
  key: Buffer;
  create_revision: Int64;
  mod_revision: Int64;
  version: Int64;
  value: Buffer;
  lease: Int64;
}

/** NONE, ASCEND, DESCEND. */
export type SortOrder = 0 | 1 | 2;
/** KEY, VERSION, CREATE, MOD, VALUE. */
export type SortTarget = 0 | 1 | 2 | 3 | 4;
export const sortTarget = { KEY: 0, VERSION: 1, CREATE: 2, MOD: 3, VALUE: 4 } as const;

export interface RangeRequestMsg {
  key: Buffer;
  range_end: Buffer;
  limit: Int64;
  revision: Int64;
  sort_order: SortOrder;
  sort_target: SortTarget;
  serializable: boolean;
  keys_only: boolean;
  count_only: boolean;
  min_mod_revision: Int64;
  max_mod_revision: Int64;
  min_create_revision: Int64;
  max_create_revision: Int64;
}

export interface RangeResponseMsg {
  header?: ResponseHeader | undefined;
  kvs: KeyValueMsg[];
  more: boolean;
  count: Int64;
}

export interface PutRequestMsg {
  key: Buffer;
  value: Buffer;
  lease: Int64;
  prev_kv: boolean;
  ignore_value: boolean;
  ignore_lease: boolean;
}

export interface PutResponseMsg {
  header?: ResponseHeader;
  prev_kv: KeyValueMsg | null;
}

export interface DeleteRangeRequestMsg {
  key: Buffer;
  range_end: Buffer;
  prev_kv: boolean;
}

export interface DeleteRangeResponseMsg {
  header?: ResponseHeader;
  deleted: Int64;
  prev_kvs: KeyValueMsg[];
}

export interface RequestOpMsg {
  request?: 'request_range' | 'request_put' | 'request_delete_range' | 'request_txn';
  request_range?: RangeRequestMsg;
  request_put?: PutRequestMsg;
  request_delete_range?: DeleteRangeRequestMsg;
  request_txn?: TxnRequestMsg;
}

export interface ResponseOpMsg {
  response_range?: RangeResponseMsg;
  response_put?: PutResponseMsg;
  response_delete_range?: DeleteRangeResponseMsg;
}

export interface CompareMsg {
  /** EQUAL, GREATER, LESS, NOT_EQUAL. */
  result: 0 | 1 | 2 | 3;
  /** VERSION, CREATE, MOD, VALUE, LEASE. */
  target: 0 | 1 | 2 | 3 | 4;
  key: Buffer;
  target_union?: 'version' | 'create_revision' | 'mod_revision' | 'value' | 'lease';
  version?: Int64;
  create_revision?: Int64;
  mod_revision?: Int64;
  value?: Buffer;
  lease?: Int64;
  range_end: Buffer;
}

export interface TxnRequestMsg {
  compare: CompareMsg[];
  success: RequestOpMsg[];
  failure: RequestOpMsg[];
}

/** A unary handler's call and callback, as grpc-js passes them (typed loosely on purpose). */
export interface UnaryCall<Req> {
  readonly request: Req;
  getDeadline(): Date | number;
  on(event: 'cancelled', listener: () => void): unknown;
}
export type Callback<Res> = (error: unknown, response?: Res) => void;

/** An int64 field as a safe JS integer; bigger values are refused (Baton's numbers are < 2^53). */
export function int(value: Int64 | number | undefined, what: string, min = 0): number {
  const n = Number(value ?? 0);
  if (!Number.isSafeInteger(n) || n < min) {
    throw new InvalidArgumentError(`etcdserver: ${what} must be an integer from ${min} to 2^53-1, not ${String(value)}`);
  }
  return n;
}
