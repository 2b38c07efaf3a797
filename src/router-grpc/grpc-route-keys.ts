// Which keys an etcd gRPC call names, so the router can pick the owning cell (docs/design/cells.md,
// "The router's gRPC relay"): the gRPC twin of src/router/route-keys.ts. Pure: a decoded request
// message in, a route out. Keys are read the way the facade reads them (src/api/grpc/keys.ts:
// etcd key K is Baton key '/' + K), so the router and the cell agree on every namespace.
import { spanOf, rootNamespace, type KeySpan } from '../base/namespaces.js';
import { electionKeyPrefix, lockKeyPrefix } from '../base/queue-prefixes.js';
import { batonKey, rangeTarget, utf8 } from '../api/grpc/keys.js';

export type GrpcRoute =
  | { readonly kind: 'keys'; readonly spans: readonly KeySpan[] }
  /** Names no key (leases): the namespace in `baton-namespace` metadata, else the root's cell. */
  | { readonly kind: 'lease' }
  /** Per-cell (maintenance, members, auth, compact): the cell in `baton-cell` metadata, else the root's. */
  | { readonly kind: 'cell' }
  /** Answered by the router itself (MemberList without `baton-cell`). */
  | { readonly kind: 'router' };

/** A key whose form the facade refuses: sent to the root's cell, which refuses it in its own words. */
const unreadable: GrpcRoute = { kind: 'cell' };

interface KeyRange { key?: Uint8Array; range_end?: Uint8Array }
interface RequestOp {
  request_range?: KeyRange;
  request_put?: KeyRange;
  request_delete_range?: KeyRange;
  request_txn?: TxnMessage;
}
interface TxnMessage { compare?: KeyRange[]; success?: RequestOp[]; failure?: RequestOp[] }

/** The route of one call: `method` is the gRPC path, `request` its message as proto-loader decodes it. */
export function grpcRoute(method: string, request: unknown, metadataCell: string | undefined): GrpcRoute {
  const [service, name] = method.slice(1).split('/') as [string, string];
  try {
    switch (service) {
      case 'etcdserverpb.KV':
        if (name === 'Compact') return { kind: 'cell' };
        if (name === 'Txn') return { kind: 'keys', spans: txnSpans(request as TxnMessage, 0) };
        return { kind: 'keys', spans: [rangeSpan(request as KeyRange)] };
      case 'etcdserverpb.Lease':
        return { kind: 'lease' };
      case 'etcdserverpb.Cluster':
        return name === 'MemberList' && metadataCell === undefined ? { kind: 'router' } : { kind: 'cell' };
      case 'v3lockpb.Lock':
        return { kind: 'keys', spans: [lockSpan(name, request as { name?: Uint8Array; key?: Uint8Array })] };
      case 'v3electionpb.Election':
        return { kind: 'keys', spans: [electionSpan(request as { name?: Uint8Array; leader?: { name?: Uint8Array } })] };
      default:
        return { kind: 'cell' };
    }
  } catch {
    return unreadable;
  }
}

/** A key and range end as the facade reads them: one key, a prefix, or [key, range_end). */
export function rangeSpan(range: KeyRange): KeySpan {
  const target = rangeTarget(range.key ?? new Uint8Array(0), range.range_end ?? new Uint8Array(0));
  return spanOf(target);
}

/** Every compare and every operation of both branches, nested txns included (etcd 3.3+). */
function txnSpans(txn: TxnMessage, depth: number): KeySpan[] {
  if (depth > 8) throw new Error('txn nested too deep'); // the cell refuses it in its own words
  const spans = (txn.compare ?? []).map(rangeSpan);
  for (const op of [...(txn.success ?? []), ...(txn.failure ?? [])]) {
    if (op.request_range) spans.push(rangeSpan(op.request_range));
    else if (op.request_put) spans.push(rangeSpan({ key: op.request_put.key ?? new Uint8Array(0) }));
    else if (op.request_delete_range) spans.push(rangeSpan(op.request_delete_range));
    else if (op.request_txn) spans.push(...txnSpans(op.request_txn, depth + 1));
  }
  // A txn of no key (empty compare and branches) is answered by the root's cell, as etcd answers it.
  return spans.length > 0 ? spans : [spanOf({ key: rootNamespace })];
}

/** Lock: the lock's queue; Unlock: the contender key Lock handed back (`locks/NAME/...`). */
function lockSpan(method: string, request: { name?: Uint8Array; key?: Uint8Array }): KeySpan {
  if (method === 'Unlock') return spanOf({ key: batonKey(request.key ?? new Uint8Array(0)) });
  return spanOf({ key: lockKeyPrefix(utf8(request.name ?? new Uint8Array(0), 'lock name')), prefix: true });
}

/** Campaign, Leader, Observe name the election; Proclaim and Resign their leader key's election. */
function electionSpan(request: { name?: Uint8Array; leader?: { name?: Uint8Array } }): KeySpan {
  const name = request.leader?.name ?? request.name ?? new Uint8Array(0);
  return spanOf({ key: electionKeyPrefix(utf8(name, 'election name')), prefix: true });
}

/** The lease's namespace from `baton-namespace` metadata (default the root): its owner holds the lease. */
export function leaseSpan(namespace: string | undefined): KeySpan {
  return spanOf({ key: namespace === undefined || namespace === '' ? rootNamespace : namespace });
}
