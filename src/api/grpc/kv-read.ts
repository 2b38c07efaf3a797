// etcd's Range over CellApi.range. A key, a prefix or a [key, range_end) range is one Baton read,
// limit, count and more included (so pagination seeks, as on etcd). Sorting and min/max revision
// filters need the whole range: it is read (bounded by edgeScanKeysMax) and finished here; so are
// ranges that are not a prefix inside a txn, whose gets carry no range end (the covering prefix
// with a byte filter).
import { BatonError, KeyNotFoundError } from '../../base/errors.js';
import type { CellApi, KeyValue, RangeRequest, RangeResult, ReadOptions } from '../types.js';
import { checkScan, edgeScanKeysMax, etcdKey, rangePlan, rangeTarget, type RangePlan, type RangeTarget } from './keys.js';
import { int, sortTarget, type KeyValueMsg, type RangeRequestMsg, type RangeResponseMsg } from './wire.js';

/** etcd answers an absent single key with an empty range, not an error. */
export async function readRange(cell: CellApi, request: RangeRequest, options: ReadOptions, principal: string): Promise<RangeResult> {
  try {
    return await cell.range(request, options, principal);
  } catch (error) {
    if (!(error instanceof KeyNotFoundError) && !(error instanceof BatonError && error.code === 'key_not_found')) throw error;
    const revision = Number(error.details['revision'] ?? cell.revision());
    return { revision, count: 0, more: false, kvs: [] };
  }
}

const emptyValue = Buffer.alloc(0);

export function kvMsg(kv: KeyValue, keysOnly = false): KeyValueMsg {
  return {
    key: etcdKey(kv.key),
    create_revision: kv.createRevision,
    mod_revision: kv.modRevision,
    version: kv.version,
    value: keysOnly ? emptyValue : Buffer.from(kv.value.buffer, kv.value.byteOffset, kv.value.byteLength),
    lease: kv.lease,
  };
}

type Order = { readonly direction: 'asc' | 'desc'; readonly target: RangeRequestMsg['sort_target'] } | null;

/** etcd: an order of NONE with a target other than KEY sorts ascending; ASCEND by KEY is the natural order. */
function sortOrder(request: RangeRequestMsg): Order {
  const target = request.sort_target ?? sortTarget.KEY;
  let direction: 'asc' | 'desc' | null = request.sort_order === 2 ? 'desc' : request.sort_order === 1 ? 'asc' : null;
  if (direction === null && target !== sortTarget.KEY) direction = 'asc';
  if (direction === null || (direction === 'asc' && target === sortTarget.KEY)) return null;
  return { direction, target };
}

/** A Range split into the Baton read and the work left for the edge. */
export interface RangeWork {
  readonly baton: RangeRequest;
  /** null: the Baton answer is the etcd answer. */
  finish: ((result: RangeResult) => { kvs: KeyValue[]; count: number; more: boolean }) | null;
  readonly keysOnly: boolean;
  readonly countOnly: boolean;
}

/** `inTxn`: the read becomes a txn get (one key or a prefix, at the txn's revision). */
export function rangeWork(request: RangeRequestMsg, inTxn: boolean): RangeWork {
  const limit = int(request.limit, 'limit');
  const revision = int(request.revision, 'revision');
  const minMod = int(request.min_mod_revision, 'min_mod_revision');
  const maxMod = int(request.max_mod_revision, 'max_mod_revision');
  const minCreate = int(request.min_create_revision, 'min_create_revision');
  const maxCreate = int(request.max_create_revision, 'max_create_revision');
  const order = sortOrder(request);
  const keysOnly = request.keys_only === true;
  const countOnly = request.count_only === true;
  const revisionFilters = minMod + maxMod + minCreate + maxCreate > 0;
  // Built field by field (no spreads of optional parts): this runs on every Range.
  const at = inTxn || revision === 0 ? undefined : revision;
  let target: RangeTarget;
  let filter: RangePlan['filter'] = null;
  if (inTxn) {
    const plan = rangePlan(request.key, request.range_end);
    target = { key: plan.key, prefix: plan.prefix };
    filter = plan.filter;
  } else {
    target = rangeTarget(request.key, request.range_end);
  }
  if (filter === null && order === null && !revisionFilters) {
    const baton = { key: target.key, prefix: target.prefix, rangeEnd: target.rangeEnd, limit: limit > 0 ? limit : undefined, keysOnly, countOnly, revision: at };
    return { baton, finish: null, keysOnly, countOnly };
  }
  return {
    baton: {
      key: target.key,
      prefix: target.prefix,
      rangeEnd: target.rangeEnd,
      limit: edgeScanKeysMax + 1,
      keysOnly: keysOnly && order?.target !== sortTarget.VALUE,
      revision: at,
    },
    keysOnly,
    countOnly,
    finish(result) {
      checkScan(result.more ? edgeScanKeysMax + 1 : result.kvs.length);
      let kvs = filter === null ? [...result.kvs] : result.kvs.filter((kv) => filter(etcdKey(kv.key)));
      // etcd counts the range before its revision filters.
      const count = kvs.length;
      if (revisionFilters) {
        kvs = kvs.filter(
          (kv) =>
            (minMod === 0 || kv.modRevision >= minMod) &&
            (maxMod === 0 || kv.modRevision <= maxMod) &&
            (minCreate === 0 || kv.createRevision >= minCreate) &&
            (maxCreate === 0 || kv.createRevision <= maxCreate),
        );
      }
      if (order !== null) sortKvs(kvs, order);
      const more = limit > 0 && kvs.length > limit;
      if (limit > 0) kvs = kvs.slice(0, limit);
      return { kvs: countOnly ? [] : kvs, count, more };
    },
  };
}

function sortKvs(kvs: KeyValue[], order: NonNullable<Order>): void {
  const sign = order.direction === 'asc' ? 1 : -1;
  const byKey = (a: KeyValue, b: KeyValue): number => Buffer.compare(etcdKey(a.key), etcdKey(b.key));
  const compare = (a: KeyValue, b: KeyValue): number => {
    switch (order.target) {
      case sortTarget.VERSION:
        return a.version - b.version;
      case sortTarget.CREATE:
        return a.createRevision - b.createRevision;
      case sortTarget.MOD:
        return a.modRevision - b.modRevision;
      case sortTarget.VALUE:
        return Buffer.compare(Buffer.from(a.value), Buffer.from(b.value));
      default:
        return byKey(a, b);
    }
  };
  // Stable: equal targets stay in key order, as in etcd.
  kvs.sort((a, b) => sign * compare(a, b));
}

export function rangeResponse(work: RangeWork, result: RangeResult, header: RangeResponseMsg['header']): RangeResponseMsg {
  const done = work.finish === null ? { kvs: result.kvs, count: result.count, more: result.more } : work.finish(result);
  return {
    header,
    // count_only inside a txn: the Baton get has no such option, so the kvs are dropped here.
    kvs: work.countOnly ? [] : done.kvs.map((kv) => kvMsg(kv, work.keysOnly)),
    more: done.more,
    count: done.count,
  };
}
