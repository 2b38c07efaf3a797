// etcd's KV service (Range, Put, DeleteRange, Txn, Compact) over the node's CellApi: every
// write is one Baton command (a put, a delete or a txn), so revisions and versions are Baton's.
// Put's prev_kv and DeleteRange's prev_kv become a txn that reads before it writes; ignore_value
// and ignore_lease a compare-and-put on the key's mod revision, retried a few times.
import { status } from '@grpc/grpc-js';
import type { CellApi, Compare, CompareOp, CompareTarget, DeleteResult, KeyValue, RangeResult, TxnOp, TxnOpResult } from '../types.js';
import { GrpcStatusError, etcdMessages } from './errors.js';
import type { HeaderSource } from './header.js';
import { batonKey, checkScan, edgeScanKeysMax, rangePlan, rangeTarget, type RangeTarget } from './keys.js';
import { kvMsg, rangeResponse, rangeWork, readRange } from './kv-read.js';
import {
  int,
  type CompareMsg,
  type DeleteRangeRequestMsg,
  type DeleteRangeResponseMsg,
  type PutRequestMsg,
  type PutResponseMsg,
  type RangeRequestMsg,
  type RangeResponseMsg,
  type RequestOpMsg,
  type ResponseOpMsg,
  type TxnRequestMsg,
} from './wire.js';

/** etcd's --max-txn-ops default: per list (compares, success, failure). */
export const etcdTxnOpsMax = 128;
const casAttemptsMax = 8;

export class KvFacade {
  constructor(
    private readonly cell: CellApi,
    private readonly headers: HeaderSource,
  ) {}

  async range(request: RangeRequestMsg, principal: string): Promise<RangeResponseMsg> {
    const work = rangeWork(request, false);
    const result = await readRange(this.cell, work.baton, { consistency: request.serializable ? 'serializable' : 'linearizable' }, principal);
    return rangeResponse(work, result, this.headers.header(result.revision));
  }

  /** Synchronous checks throw (the unary wrapper answers them); the write is a promise. */
  put(request: PutRequestMsg, principal: string): Promise<PutResponseMsg> {
    const key = batonKey(request.key);
    const lease = int(request.lease, 'lease');
    const value = request.value ?? Buffer.alloc(0);
    if (request.ignore_value && value.length > 0) throw new GrpcStatusError(status.INVALID_ARGUMENT, etcdMessages.valueProvided);
    if (request.ignore_lease && lease !== 0) throw new GrpcStatusError(status.INVALID_ARGUMENT, etcdMessages.leaseProvided);
    if (request.ignore_value || request.ignore_lease) return this.putKeeping(request, key, value, lease, principal);
    const put = lease !== 0 ? { key, value, lease } : { key, value };
    if (!request.prev_kv) {
      // The hot write: a .then instead of an async frame.
      return this.cell.put(put, undefined, principal).then((result) => ({ header: this.headers.header(result.revision), prev_kv: null }));
    }
    return this.cell.txn({ compare: [], success: [{ get: { key } }, { put }], failure: [] }, undefined, principal).then((result) => {
      const previous = (result.results[0] as RangeResult).kvs[0];
      return { header: this.headers.header(result.revision), prev_kv: previous === undefined ? null : kvMsg(previous) };
    });
  }

  /** ignore_value / ignore_lease: keep the key's current value or lease (the key must exist). */
  private async putKeeping(request: PutRequestMsg, key: string, value: Uint8Array, lease: number, principal: string): Promise<PutResponseMsg> {
    for (let attempt = 0; attempt < casAttemptsMax; attempt++) {
      const current = (await readRange(this.cell, { key }, { consistency: 'linearizable' }, principal)).kvs[0];
      if (current === undefined) throw new GrpcStatusError(status.INVALID_ARGUMENT, etcdMessages.keyNotFound);
      const keepLease = request.ignore_lease ? current.lease : lease;
      const result = await this.cell.txn(
        {
          compare: [{ key, target: 'modRevision', op: '==', value: current.modRevision }],
          success: [{ put: { key, value: request.ignore_value ? current.value : value, ...(keepLease !== 0 ? { lease: keepLease } : {}) } }],
          failure: [],
        },
        undefined,
        principal,
      );
      if (result.succeeded) {
        return { header: this.headers.header(result.revision), prev_kv: request.prev_kv ? kvMsg(current) : null };
      }
    }
    throw new GrpcStatusError(status.ABORTED, 'etcdserver: the key kept changing during a put with ignore_value/ignore_lease; retry');
  }

  async deleteRange(request: DeleteRangeRequestMsg, principal: string): Promise<DeleteRangeResponseMsg> {
    const range = rangeTarget(request.key, request.range_end);
    if (range.rangeEnd !== undefined) return this.deleteRangeEnd(request, range, principal);
    const target = { key: range.key, prefix: range.prefix };
    if (!request.prev_kv) {
      const result = await this.cell.deleteRange(target, undefined, principal);
      return { header: this.headers.header(result.revision), deleted: String(result.deleted), prev_kvs: [] };
    }
    const result = await this.cell.txn({ compare: [], success: [{ get: target }, { delete: target }], failure: [] }, undefined, principal);
    const previous = result.results[0] as RangeResult;
    const deleted = result.results[1] as DeleteResult;
    return { header: this.headers.header(result.revision), deleted: String(deleted.deleted), prev_kvs: previous.kvs.map((kv) => kvMsg(kv)) };
  }

  /**
   * A range that is not a prefix (Baton deletes keys and prefixes): read the keys in it, then
   * delete exactly those in one txn that checks none of them changed. Keys created in the range
   * meanwhile are not deleted (documented).
   */
  private async deleteRangeEnd(request: DeleteRangeRequestMsg, range: RangeTarget, principal: string): Promise<DeleteRangeResponseMsg> {
    for (let attempt = 0; attempt < casAttemptsMax; attempt++) {
      const read = await readRange(this.cell, { ...range, limit: edgeScanKeysMax + 1 }, { consistency: 'linearizable' }, principal);
      checkScan(read.more ? edgeScanKeysMax + 1 : read.kvs.length);
      const victims = read.kvs;
      if (victims.length === 0) return { header: this.headers.header(read.revision), deleted: '0', prev_kvs: [] };
      const result = await this.cell.txn(
        {
          compare: victims.map((kv) => ({ key: kv.key, target: 'modRevision', op: '==', value: kv.modRevision })),
          success: victims.map((kv) => ({ delete: { key: kv.key } })),
          failure: [],
        },
        undefined,
        principal,
      );
      if (result.succeeded) {
        return {
          header: this.headers.header(result.revision),
          deleted: String(victims.length),
          prev_kvs: request.prev_kv ? victims.map((kv) => kvMsg(kv)) : [],
        };
      }
    }
    throw new GrpcStatusError(status.ABORTED, 'etcdserver: the range kept changing during a delete; retry');
  }

  async txn(request: TxnRequestMsg, principal: string): Promise<{ header: ReturnType<HeaderSource['header']>; succeeded: boolean; responses: ResponseOpMsg[] }> {
    const compares = request.compare ?? [];
    const success = request.success ?? [];
    const failure = request.failure ?? [];
    if (compares.length > etcdTxnOpsMax || success.length > etcdTxnOpsMax || failure.length > etcdTxnOpsMax) {
      throw new GrpcStatusError(status.INVALID_ARGUMENT, etcdMessages.tooManyOps);
    }
    const onSuccess = success.map(compileOp);
    const onFailure = failure.map(compileOp);
    const result = await this.cell.txn(
      {
        compare: compares.map(compileCompare).filter((compare): compare is Compare => compare !== null),
        success: onSuccess.flatMap((op) => op.ops),
        failure: onFailure.flatMap((op) => op.ops),
      },
      undefined,
      principal,
    );
    const header = this.headers.header(result.revision);
    const inner = this.headers.revisionOnly(result.revision);
    const compiled = result.succeeded ? onSuccess : onFailure;
    const responses: ResponseOpMsg[] = [];
    let at = 0;
    for (const op of compiled) {
      responses.push(op.respond(result.results.slice(at, at + op.ops.length), inner));
      at += op.ops.length;
    }
    return { header, succeeded: result.succeeded, responses };
  }

  async compact(request: { revision: string }, principal: string): Promise<{ header: ReturnType<HeaderSource['header']> }> {
    const result = await this.cell.compact(int(request.revision, 'revision', 1), principal);
    return { header: this.headers.header(result.revision) };
  }
}

interface CompiledOp {
  readonly ops: TxnOp[];
  respond(results: readonly TxnOpResult[], header: ReturnType<HeaderSource['header']>): ResponseOpMsg;
}

function unsupported(what: string): never {
  throw new GrpcStatusError(status.INVALID_ARGUMENT, `etcdserver: ${what} is not supported inside a txn on Baton (docs/etcd-compat.md)`);
}

function compileOp(op: RequestOpMsg): CompiledOp {
  if (op.request_range !== undefined && op.request_range !== null) {
    const request = op.request_range;
    if (int(request.revision, 'revision') !== 0) unsupported('a range at a past revision');
    const work = rangeWork(request, true);
    return {
      ops: [{ get: { key: work.baton.key, prefix: work.baton.prefix === true, ...(work.baton.limit !== undefined ? { limit: work.baton.limit } : {}) } }],
      respond: (results, header) => ({ response_range: rangeResponse(work, results[0] as RangeResult, header) }),
    };
  }
  if (op.request_put !== undefined && op.request_put !== null) {
    const request = op.request_put;
    if (request.ignore_value || request.ignore_lease) unsupported('ignore_value/ignore_lease');
    const key = batonKey(request.key);
    const lease = int(request.lease, 'lease');
    const put: TxnOp = { put: { key, value: request.value ?? Buffer.alloc(0), ...(lease !== 0 ? { lease } : {}) } };
    if (!request.prev_kv) return { ops: [put], respond: (_r, header) => ({ response_put: { header, prev_kv: null } }) };
    return {
      ops: [{ get: { key } }, put],
      respond: (results, header) => {
        const previous: KeyValue | undefined = (results[0] as RangeResult).kvs[0];
        return { response_put: { header, prev_kv: previous === undefined ? null : kvMsg(previous) } };
      },
    };
  }
  if (op.request_delete_range !== undefined && op.request_delete_range !== null) {
    const request = op.request_delete_range;
    const plan = rangePlan(request.key, request.range_end);
    if (plan.filter !== null) unsupported('a delete of a range that is not a prefix');
    const target = { key: plan.key, prefix: plan.prefix };
    if (!request.prev_kv) {
      return {
        ops: [{ delete: target }],
        respond: (results, header) => ({
          response_delete_range: { header, deleted: String((results[0] as DeleteResult).deleted), prev_kvs: [] },
        }),
      };
    }
    return {
      ops: [{ get: target }, { delete: target }],
      respond: (results, header) => ({
        response_delete_range: {
          header,
          deleted: String((results[1] as DeleteResult).deleted),
          prev_kvs: (results[0] as RangeResult).kvs.map((kv) => kvMsg(kv)),
        },
      }),
    };
  }
  if (op.request_txn !== undefined && op.request_txn !== null) unsupported('a nested txn');
  throw new GrpcStatusError(status.INVALID_ARGUMENT, 'etcdserver: a txn operation names no request');
}

const compareOps: readonly CompareOp[] = ['==', '>', '<', '!=']; // EQUAL, GREATER, LESS, NOT_EQUAL
// VERSION, CREATE, MOD, VALUE, LEASE
const compareTargets: readonly { target: CompareTarget; field: keyof CompareMsg }[] = [
  { target: 'version', field: 'version' },
  { target: 'createRevision', field: 'create_revision' },
  { target: 'modRevision', field: 'mod_revision' },
  { target: 'value', field: 'value' },
  { target: 'lease', field: 'lease' },
];

/**
 * An etcd compare as Baton's, or null for one that always holds (it is dropped from the
 * conjunction). etcd takes any int64; Baton's log stores compare values unsigned, and every
 * numeric attribute is >= 0, so a negative constant decides the compare by itself: `> c` and
 * `!= c` always hold, `< c` and `== c` never do (then `< 0`, which never holds either).
 */
export function compileCompare(compare: CompareMsg): Compare | null {
  if (compare.range_end !== undefined && compare.range_end.length > 0) unsupported('a compare over a key range');
  const op = compareOps[compare.result ?? 0];
  const target = compareTargets[compare.target ?? 0];
  if (op === undefined || target === undefined) throw new GrpcStatusError(status.INVALID_ARGUMENT, 'etcdserver: unknown compare');
  const key = batonKey(compare.key);
  if (target.target === 'value') return { key, target: 'value', op, value: compare.value ?? Buffer.alloc(0) };
  const raw = Number(compare[target.field] ?? 0);
  if (Number.isSafeInteger(raw) && raw < 0) {
    return op === '>' || op === '!=' ? null : { key, target: target.target, op: '<', value: 0 };
  }
  return { key, target: target.target, op, value: int(compare[target.field] as string | undefined, target.field) };
}

