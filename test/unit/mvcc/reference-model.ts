// An obviously-correct reference for the MVCC store: it keeps a full copy of the key space at
// every retained revision, so a past read is a map lookup and compaction drops whole copies.
// Slow and memory-hungry by design; the property tests compare the real store against it.
import {
  CompactedError,
  FutureRevisionError,
  InvalidArgumentError,
  KeyNotFoundError,
  PreconditionFailedError,
  RequestIdReusedError,
  TooLargeError,
  BatonError,
} from '../../../src/base/errors.js';
import { compareBytes, utf8 } from '../../../src/mvcc/index.js';
import type {
  Command,
  CommandEnvelope,
  CommandResult,
  Compare,
  KeyValue,
  MvccEvent,
  MvccLimits,
  PutOp,
  RangeRequest,
  RangeResult,
  TxnOp,
  TxnOpResult,
} from '../../../src/mvcc/index.js';

type State = Map<string, KeyValue>;
export type ModelOutcome =
  | { ok: true; result: CommandResult; duplicate: boolean }
  | { ok: false; error: BatonError; duplicate: boolean };

/** JSON with sorted object keys and bytes as hex: equal text, equal request. */
function canonical(value: unknown): string {
  if (value instanceof Uint8Array) return `bytes:${Buffer.from(value).toString('hex')}`;
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : 1));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

function firstKey(op: Command): string | null {
  if (op.type === 'put' || op.type === 'delete' || op.type === 'seqCheck' || op.type === 'seqRelease') return op.key;
  if (op.type === 'seqCreate') return op.prefix;
  if (op.type === 'txn') return op.compare[0]?.key ?? op.success[0]?.key ?? op.failure[0]?.key ?? null;
  return null;
}

const byBytes = (a: string, b: string): number => compareBytes(utf8(a), utf8(b));

export class ReferenceModel {
  revision = 0;
  compactRevision = 0;
  appliedIndex = 0;
  private clockMs = 0;
  private states = new Map<number, State>([[0, new Map()]]);
  private events: MvccEvent[] = [];
  private dedup = new Map<string, { stampMs: number; outcome: ModelOutcome; op: Command }>();
  /** Per proposer: its last stamp and the dedup clock right after that entry. */
  private sources = new Map<number, { lastMs: number; anchorMs: number }>();

  constructor(private readonly limits: MvccLimits) {}

  private get current(): State {
    return this.states.get(this.revision) as State;
  }

  /** Live keys now (what the store's etcd_debugging_mvcc_keys_total must say). */
  get keyCount(): number {
    return this.current.size;
  }

  noop(index: number): void {
    this.appliedIndex = index;
  }

  apply(index: number, envelope: CommandEnvelope): ModelOutcome {
    this.appliedIndex = index;
    this.advanceClock(envelope.source, envelope.proposedAtMs);
    const id = envelope.requestId;
    const earlier = id === undefined ? undefined : this.dedup.get(id);
    if (earlier !== undefined && this.clockMs - earlier.stampMs <= this.limits.dedupWindowMs) {
      // Only the same request replays; the same ID on another request is refused.
      const whole = (op: Command): string => (op.type === 'put' || op.type === 'delete' || op.type === 'txn' ? canonical(op) : `${op.type} ${firstKey(op)}`);
      if (whole(earlier.op) !== whole(envelope.op)) {
        const first = { kind: earlier.op.type, key: firstKey(earlier.op) };
        const again = { kind: envelope.op.type, key: firstKey(envelope.op) };
        return { ok: false, error: new RequestIdReusedError(id as string, first, again), duplicate: true };
      }
      return { ...earlier.outcome, duplicate: true };
    }
    let outcome: ModelOutcome;
    try {
      outcome = { ok: true, result: this.run(envelope.op), duplicate: false };
    } catch (error) {
      if (!(error instanceof BatonError)) throw error;
      outcome = { ok: false, error, duplicate: false };
    }
    if (id !== undefined) this.dedup.set(id, { stampMs: this.clockMs, outcome, op: envelope.op });
    return outcome;
  }

  /** The documented rule: a proposer's own step since its last entry, clamped to [0, window/60]. */
  private advanceClock(source: number | undefined, atMs: number): void {
    if (this.clockMs === 0) this.clockMs = atMs;
    if (source === undefined) return;
    const previous = this.sources.get(source);
    const stepMaxMs = Math.max(1, Math.floor(this.limits.dedupWindowMs / 60));
    if (previous !== undefined) {
      if (atMs < previous.lastMs && previous.lastMs - atMs <= stepMaxMs) return;
      const stepMs = Math.min(stepMaxMs, Math.max(0, atMs - previous.lastMs));
      this.clockMs = Math.max(this.clockMs, previous.anchorMs + stepMs);
    }
    this.sources.set(source, { lastMs: atMs, anchorMs: this.clockMs });
  }

  private checkLimits(op: Command): void {
    const value = (v: Uint8Array): void => {
      if (v.length > this.limits.valueBytesMax) throw new TooLargeError('value', v.length, this.limits.valueBytesMax);
    };
    if (op.type === 'put') value(op.value);
    if (op.type !== 'txn') return;
    const count = op.compare.length + op.success.length + op.failure.length;
    if (count > this.limits.txnOpsMax) {
      throw new TooLargeError('txn operations and compares', count, this.limits.txnOpsMax, 'too_many_operations');
    }
    for (const compare of op.compare) if (compare.target === 'value') value(compare.value as Uint8Array);
    for (const branch of [op.success, op.failure]) {
      const puts = branch.filter((o): o is PutOp => o.type === 'put');
      for (const put of puts) value(put.value);
      if (new Set(puts.map((p) => p.key)).size !== puts.length) {
        throw new InvalidArgumentError('a txn branch puts the same key twice');
      }
      for (const put of puts) {
        for (const del of branch) {
          if (del.type === 'delete' && this.covers(del.key, del.prefix === true, put.key)) {
            throw new InvalidArgumentError('a txn branch puts and deletes the same key');
          }
        }
      }
    }
  }

  private covers(key: string, prefix: boolean, candidate: string): boolean {
    if (!prefix) return key === candidate;
    const a = utf8(key);
    const b = utf8(candidate);
    return b.length >= a.length && compareBytes(b.subarray(0, a.length), a) === 0;
  }

  private run(op: Command): CommandResult {
    this.checkLimits(op);
    if (op.type === 'compact') {
      if (op.revision > this.revision) throw new FutureRevisionError(op.revision, this.revision);
      if (op.revision <= this.compactRevision) throw new CompactedError(this.compactRevision);
      for (const revision of [...this.states.keys()]) if (revision < op.revision) this.states.delete(revision);
      this.events = this.events.filter((event) => event.revision >= op.revision);
      this.compactRevision = op.revision;
      return { type: 'compact', revision: this.revision, compactRevision: op.revision };
    }
    const next = new Map(this.current);
    const revision = this.revision + 1;
    const events: MvccEvent[] = [];
    const put = (p: PutOp): TxnOpResult => {
      const prev = next.get(p.key) ?? null;
      const kv: KeyValue = {
        key: p.key,
        value: p.value,
        version: (prev?.version ?? 0) + 1,
        createRevision: prev?.createRevision ?? revision,
        modRevision: revision,
        lease: p.lease ?? 0,
      };
      next.set(p.key, kv);
      events.push({ type: 'put', revision, kv, prevKv: prev });
      return { type: 'put', created: prev === null, version: kv.version, revision, fencingToken: kv.createRevision };
    };
    const del = (key: string, prefix: boolean): number => {
      const doomed = [...next.keys()].filter((k) => this.covers(key, prefix, k)).sort(byBytes);
      for (const k of doomed) {
        const prevKv = next.get(k) as KeyValue;
        next.delete(k);
        const kv = { key: k, value: new Uint8Array(0), version: 0, createRevision: 0, modRevision: revision, lease: 0 };
        events.push({ type: 'delete', revision, kv, prevKv });
      }
      return doomed.length;
    };
    let result: CommandResult | TxnOpResult;
    if (op.type === 'put') {
      this.precondition(next.get(op.key), op);
      result = put(op);
    } else if (op.type === 'delete') {
      if (op.prefix !== true) this.precondition(next.get(op.key), op);
      result = { type: 'delete', deleted: del(op.key, op.prefix === true), revision: 0 };
    } else if (op.type === 'deleteLeaseKeys') {
      const keys = [...next.values()].filter((kv) => kv.lease === op.lease).map((kv) => kv.key);
      let deleted = 0;
      for (const key of keys.sort(byBytes)) deleted += del(key, false);
      result = { type: 'deleteLeaseKeys', deleted, revision: 0 };
    } else if (op.type !== 'txn') {
      // The lease table has its own tests (test/unit/lease); the workload never grants.
      throw new Error(`the reference model does not model ${op.type}`);
    } else {
      const succeeded = op.compare.every((c) => this.compareHolds(next.get(c.key), c));
      const results: TxnOpResult[] = [];
      for (const inner of succeeded ? op.success : op.failure) {
        if (inner.type === 'put') results.push(put(inner));
        else if (inner.type === 'delete') {
          results.push({ type: 'delete', deleted: del(inner.key, inner.prefix === true), revision: 0 });
        } else results.push(this.rangeOf(next, inner, 0));
      }
      result = { type: 'txn', succeeded, revision: 0, results };
    }
    if (events.length > 0) {
      this.revision = revision;
      this.states.set(revision, next);
      this.events.push(...events);
    }
    return withRevision(result, this.revision);
  }

  private precondition(current: KeyValue | undefined, op: { ifVersion?: number; ifRevision?: number }): void {
    const version = current?.version ?? 0;
    const modRevision = current?.modRevision ?? 0;
    const bad =
      (op.ifVersion !== undefined && op.ifVersion !== version) ||
      (op.ifRevision !== undefined && op.ifRevision !== modRevision);
    if (bad) {
      throw new PreconditionFailedError('precondition failed', {
        current: current === undefined ? null : { version, modRevision },
      });
    }
  }

  private compareHolds(kv: KeyValue | undefined, c: Compare): boolean {
    let order: number;
    if (c.target === 'value') {
      if (kv === undefined) return false;
      order = compareBytes(kv.value, c.value as Uint8Array);
    } else order = (kv?.[c.target] ?? 0) - (c.value as number);
    return c.op === '==' ? order === 0 : c.op === '!=' ? order !== 0 : c.op === '<' ? order < 0 : order > 0;
  }

  range(request: RangeRequest): RangeResult {
    const revision = request.revision === undefined || request.revision === 0 ? this.revision : request.revision;
    if (revision > this.revision) throw new FutureRevisionError(revision, this.revision);
    if (revision < this.compactRevision) throw new CompactedError(this.compactRevision);
    const result = this.rangeOf(this.states.get(revision) as State, request, revision);
    if (request.prefix !== true && result.count === 0) {
      throw new KeyNotFoundError('not found', { key: request.key, revision });
    }
    return result;
  }

  private rangeOf(state: State, request: RangeRequest, revision: number): RangeResult {
    const keys = [...state.keys()].filter((k) => this.covers(request.key, request.prefix === true, k)).sort(byBytes);
    const count = keys.length;
    if (request.countOnly === true) return { type: 'get', revision, count, more: false, kvs: [] };
    const limited = request.limit !== undefined && request.limit > 0 ? keys.slice(0, request.limit) : keys;
    const kvs = limited.map((k) => {
      const kv = state.get(k) as KeyValue;
      return request.keysOnly === true ? { ...kv, value: new Uint8Array(0) } : kv;
    });
    return { type: 'get', revision, count, more: kvs.length < count, kvs };
  }

  eventsSince(startRevision: number, limit: number): MvccEvent[] {
    if (startRevision < this.compactRevision) throw new CompactedError(this.compactRevision);
    return this.events.filter((e) => e.revision >= startRevision).slice(0, limit);
  }

  keysOfLease(lease: number): string[] {
    return [...this.current.values()].filter((kv) => kv.lease === lease).map((kv) => kv.key).sort(byBytes);
  }
}

function withRevision(result: CommandResult | TxnOpResult, revision: number): CommandResult {
  if (result.type === 'get') throw new Error('a get is not a command');
  if (result.type === 'compact') return result;
  if (result.type === 'put') return result;
  if (result.type === 'txn') {
    return { ...result, revision, results: result.results.map((r) => ({ ...r, revision })) };
  }
  return { ...result, revision };
}
