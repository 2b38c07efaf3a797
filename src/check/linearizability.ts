// Linearizability of a key-value history with CAS. Registers are independent objects, so by
// P-compositionality (Herlihy & Wing's locality) the history is linearizable exactly when each
// key's sub-history is: the checker partitions by key and searches each one alone, which turns
// one exponential search into many small ones. A failing key is shrunk to a minimal failing
// sub-history (delta debugging: drop chunks, then single operations, while it still fails).
import { assert } from '../base/assert.js';
import { formatRecord } from './history.js';
import { isSearchRelevant, searchRegister } from './register-search.js';
import type {
  KeyFailure,
  KvOperation,
  LinearizabilityOptions,
  LinearizabilityReport,
  OperationRecord,
} from './types.js';

export const linearizabilityStepsMaxDefault = 5_000_000;

export function checkLinearizable(
  records: readonly OperationRecord<KvOperation>[],
  options: LinearizabilityOptions = {},
): LinearizabilityReport {
  const stepsMax = options.stepsMax ?? linearizabilityStepsMaxDefault;
  const byKey = partitionByKey(records);
  const failures: KeyFailure[] = [];
  const unknownKeys: string[] = [];
  let steps = 0;
  let operationsChecked = 0;
  for (const [key, keyRecords] of byKey) {
    const initial = options.initial?.get(key) ?? null;
    const outcome = searchRegister(keyRecords, initial, Math.max(0, stepsMax - steps));
    steps += outcome.steps;
    operationsChecked += keyRecords.length;
    if (outcome.verdict === 'unknown') unknownKeys.push(key);
    if (outcome.verdict !== 'violation') continue;
    let operations = keyRecords.filter(isSearchRelevant);
    if (options.shrink !== false) {
      const shrunk = shrinkFailure(operations, initial, Math.max(0, stepsMax - steps));
      steps += shrunk.steps;
      operations = shrunk.operations;
    }
    failures.push({ key, operations, explanation: explain(key, operations, initial) });
  }
  const verdict = failures.length > 0 ? 'violation' : unknownKeys.length > 0 ? 'unknown' : 'ok';
  return { verdict, keysChecked: byKey.size, operationsChecked, steps, failures, unknownKeys };
}

function partitionByKey(
  records: readonly OperationRecord<KvOperation>[],
): Map<string, OperationRecord<KvOperation>[]> {
  const byKey = new Map<string, OperationRecord<KvOperation>[]>();
  for (const record of records) {
    let list = byKey.get(record.operation.key);
    if (list === undefined) {
      list = [];
      byKey.set(record.operation.key, list);
    }
    list.push(record);
  }
  // Sorted keys, so reports and budgets do not depend on the order operations arrived in.
  return new Map([...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * ddmin-style shrinking: try removing chunks (halves, quarters, ... single operations) and keep
 * every removal after which the search still says "violation". A removal never drops the writer
 * of a value a remaining operation observed (it is put back), so the result reads as a story
 * ("read "a" before the write of "a" began") rather than a bare "read of a value never written".
 * A search that runs out of its share of the budget counts as "not shown to fail", so the result
 * is always a real failure, minimal in that sense when the budget sufficed.
 */
export function shrinkFailure(
  operations: readonly OperationRecord<KvOperation>[],
  initial: string | null,
  stepsMax: number,
): { operations: OperationRecord<KvOperation>[]; steps: number } {
  const writers = writersByValue(operations);
  let current = [...operations];
  let steps = 0;
  let chunk = Math.max(1, Math.ceil(current.length / 2));
  for (let rounds = 0; rounds < 10_000; rounds++) {
    let removedAny = false;
    for (let start = 0; start < current.length && current.length > 1; ) {
      if (steps >= stepsMax) return { operations: current, steps };
      const kept = [...current.slice(0, start), ...current.slice(start + chunk)];
      const candidate = withWriters(kept, operations, writers, initial);
      if (candidate.length === current.length) {
        start += chunk;
        continue;
      }
      const outcome = searchRegister(candidate, initial, stepsMax - steps);
      steps += outcome.steps;
      if (outcome.verdict === 'violation') {
        current = candidate;
        removedAny = true;
      } else {
        start += chunk;
      }
    }
    if (chunk === 1 && !removedAny) break;
    if (!removedAny) chunk = Math.max(1, Math.floor(chunk / 2));
  }
  assert(current.length > 0, 'an empty history is linearizable, so a failure keeps an operation');
  return { operations: current, steps };
}

function observedValue(record: OperationRecord<KvOperation>): string | null | undefined {
  if (record.operation.type === 'cas') return record.operation.expected;
  const result = record.result;
  if (record.operation.type === 'read' && result?.type === 'read') return result.value;
  return undefined;
}

function writersByValue(
  operations: readonly OperationRecord<KvOperation>[],
): Map<string | null, Set<number>> {
  const writers = new Map<string | null, Set<number>>();
  for (const record of operations) {
    const operation = record.operation;
    if (operation.type === 'read') continue;
    if (operation.type === 'cas' && record.result?.type === 'cas' && !record.result.succeeded) {
      continue;
    }
    const set = writers.get(operation.value) ?? new Set<number>();
    set.add(record.id);
    writers.set(operation.value, set);
  }
  return writers;
}

/**
 * `kept` plus the writers of every value it observes, transitively (a CAS put back as a writer
 * observes a value too), in the original order.
 */
function withWriters(
  kept: readonly OperationRecord<KvOperation>[],
  operations: readonly OperationRecord<KvOperation>[],
  writers: ReadonlyMap<string | null, ReadonlySet<number>>,
  initial: string | null,
): OperationRecord<KvOperation>[] {
  const byId = new Map(operations.map((record) => [record.id, record]));
  const ids = new Set(kept.map((record) => record.id));
  const pending = [...kept];
  for (let record = pending.pop(); record !== undefined; record = pending.pop()) {
    const value = observedValue(record);
    if (value === undefined || value === initial) continue;
    for (const id of writers.get(value) ?? []) {
      if (ids.has(id)) continue;
      ids.add(id);
      pending.push(byId.get(id) as OperationRecord<KvOperation>);
    }
  }
  assert(ids.size <= operations.length, 'the closure stays inside the history');
  return operations.filter((record) => ids.has(record.id));
}

function explain(
  key: string,
  operations: readonly OperationRecord<KvOperation>[],
  initial: string | null,
): string {
  const start = initial === null ? 'absent' : JSON.stringify(initial);
  const lines = [...operations]
    .sort((a, b) => a.invokeMs - b.invokeMs || a.id - b.id)
    .map((record) => `  ${formatRecord(record)}`);
  const what = `key ${JSON.stringify(key)} (initially ${start}) has no linearization of these`;
  return `${what} ${operations.length} operations:\n${lines.join('\n')}`;
}
