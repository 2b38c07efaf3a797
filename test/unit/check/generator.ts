// Seeded random histories that are linearizable by construction: operations get random timings
// per process (one at a time each), a linearization point inside [invoke, complete], and their
// results from a sequential register model applied in linearization-point order. Some fail (never
// happened) and some time out (info: applied or not, at random). Also a brute-force oracle.
import { SeededRandom, randomInt, type Random } from '../../../src/base/random.js';
import type { CompletionStatus, KvOperation, OperationRecord } from '../../../src/check/index.js';

export interface GeneratorOptions {
  readonly seed: bigint;
  readonly operations: number;
  readonly keys: number;
  readonly processes: number;
  readonly infoRate?: number;
  readonly failRate?: number;
  /** Widest gap between invoke and the linearization point, and from it to completion. */
  readonly latencyMax?: number;
}

interface Spec {
  id: number;
  process: number;
  key: string;
  kind: 'read' | 'write' | 'cas';
  status: CompletionStatus;
  happened: boolean; // for info operations
  invokeMs: number;
  pointMs: number;
  completeMs: number;
}

function chance(random: Random, p: number): boolean {
  return random.uint32() / 0x1_0000_0000 < p;
}

export function generateHistory(options: GeneratorOptions): OperationRecord<KvOperation>[] {
  const random = new SeededRandom(options.seed);
  const latencyMax = options.latencyMax ?? 10;
  const cursors = new Array<number>(options.processes).fill(0);
  const specs: Spec[] = [];
  for (let id = 0; id < options.operations; id++) {
    // The least busy process goes next, so processes overlap in time.
    let process = 0;
    for (let p = 1; p < cursors.length; p++) if (cursors[p]! < cursors[process]!) process = p;
    const invokeMs = cursors[process]! + randomInt(random, 0, 3);
    // A fraction keeps points distinct, so the model order is the one real order.
    const pointMs = invokeMs + randomInt(random, 0, latencyMax) + (id + 1) / (options.operations + 2);
    const completeMs = Math.ceil(pointMs) + randomInt(random, 0, latencyMax);
    const roll = random.uint32() % 10;
    const kind = roll < 5 ? 'read' : roll < 8 ? 'write' : 'cas';
    const status: CompletionStatus = chance(random, options.failRate ?? 0.05)
      ? 'fail'
      : chance(random, options.infoRate ?? 0.05)
        ? 'info'
        : 'ok';
    specs.push({
      id,
      process,
      key: `k${randomInt(random, 0, options.keys - 1)}`,
      kind,
      status,
      happened: status === 'ok' || (status === 'info' && chance(random, 0.5)),
      invokeMs,
      pointMs,
      completeMs,
    });
    cursors[process] = completeMs + randomInt(random, 0, 2);
  }
  const state = new Map<string, string | null>();
  const written = new Map<string, string[]>();
  const records: OperationRecord<KvOperation>[] = [];
  for (const spec of [...specs].sort((a, b) => a.pointMs - b.pointMs)) {
    records.push(toRecord(spec, random, state, written));
  }
  return records.sort((a, b) => a.id - b.id);
}

function toRecord(
  spec: Spec,
  random: Random,
  state: Map<string, string | null>,
  written: Map<string, string[]>,
): OperationRecord<KvOperation> {
  const current = state.get(spec.key) ?? null;
  const base = {
    id: spec.id,
    process: spec.process,
    status: spec.status,
    invokeMs: spec.invokeMs,
    completeMs: spec.status === 'info' ? Infinity : spec.completeMs,
  };
  const value = `${spec.key}-v${spec.id}`;
  const history = written.get(spec.key) ?? [];
  written.set(spec.key, [...history, value]);
  if (spec.kind === 'read') {
    const result = spec.status === 'ok' ? { type: 'read' as const, value: current } : null;
    return { ...base, operation: { type: 'read', key: spec.key }, result };
  }
  if (spec.kind === 'write') {
    if (spec.happened) state.set(spec.key, value);
    const result = spec.status === 'ok' ? { type: 'write' as const } : null;
    return { ...base, operation: { type: 'write', key: spec.key, value }, result };
  }
  const other = history.length > 0 ? history[randomInt(random, 0, history.length - 1)]! : null;
  const expected = chance(random, 0.6) ? current : other;
  const succeeded = expected === current;
  if (spec.happened && succeeded) state.set(spec.key, value);
  const operation = { type: 'cas' as const, key: spec.key, expected, value };
  // A refused CAS is reported either as an ok "not swapped" or as a failed precondition.
  if (spec.status === 'ok' && !succeeded && chance(random, 0.5)) {
    return { ...base, status: 'fail', operation, result: null };
  }
  const result = spec.status === 'ok' ? { type: 'cas' as const, succeeded } : null;
  return { ...base, operation, result };
}

/**
 * Brute force: every order of one key's operations that respects real time, skipping any set of
 * info operations. Exponential; for histories of a handful of operations only.
 */
export function bruteForceLinearizable(records: readonly OperationRecord<KvOperation>[]): boolean {
  const ops = records.filter((r) => r.status !== 'fail' && !(r.status === 'info' && r.operation.type === 'read'));
  const done = new Array<boolean>(ops.length).fill(false);
  const search = (state: string | null, remaining: number): boolean => {
    if (ops.every((r, i) => done[i] || r.status === 'info')) return true;
    if (remaining === 0) return false;
    for (let i = 0; i < ops.length; i++) {
      if (done[i]) continue;
      const op = ops[i]!;
      // Something not yet placed that completed before op began must come first.
      if (ops.some((o, j) => !done[j] && j !== i && o.completeMs < op.invokeMs)) continue;
      const after = stepModel(op, state);
      if (after === undefined) continue;
      done[i] = true;
      const found = search(after, remaining - 1);
      done[i] = false;
      if (found) return true;
    }
    return false;
  };
  return search(null, ops.length);
}

function stepModel(op: OperationRecord<KvOperation>, state: string | null): string | null | undefined {
  const operation = op.operation;
  if (operation.type === 'read') {
    return op.result?.type === 'read' && op.result.value === state ? state : undefined;
  }
  if (operation.type === 'write') return operation.value;
  if (op.status === 'info') return operation.expected === state ? operation.value : state;
  const swapped = op.result?.type === 'cas' && op.result.succeeded;
  if (swapped) return operation.expected === state ? operation.value : undefined;
  return operation.expected === state ? undefined : state;
}
