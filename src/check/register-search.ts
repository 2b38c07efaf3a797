// Linearizability of one register's history, by Wing & Gong's search with Lowe's just-in-time
// linearization and memoization (the algorithm of Knossos' "linear" and Porcupine). Calls and
// returns sit in one list in real-time order; the search linearizes a call only when every
// return before it belongs to an already linearized operation, backtracks when it meets the
// return of one that is not, and never revisits a (linearized set, register value) pair.
//
// Unknown outcomes: an `info` operation returns at +infinity, so it may linearize anywhere after
// its invoke; linearizing it after everything else is the same as "it never happened", so that
// case needs no extra branch. `fail` operations never happened and are not in the search.
import { assert } from '../base/assert.js';
import type { KvOperation, OperationRecord } from './types.js';

export interface SearchOutcome {
  readonly verdict: 'ok' | 'violation' | 'unknown';
  readonly steps: number;
}

const head = 0; // sentinel entry before the first call or return
const none = -1;

/** One operation as the search sees it: the step it takes on the register. */
interface Step {
  readonly kind: 'read' | 'write' | 'cas-swapped' | 'cas-not-swapped' | 'cas-unknown';
  readonly read: number; // the value id a read or CAS compares with
  readonly written: number; // the value id a write or swapping CAS leaves
}

/** Whether an operation constrains this register's search at all. */
export function isSearchRelevant(record: OperationRecord<KvOperation>): boolean {
  if (record.status === 'fail') return false; // it never happened
  // A read that timed out saw nothing the checker knows: it constrains nothing.
  return !(record.status === 'info' && record.operation.type === 'read');
}

export function searchRegister(
  records: readonly OperationRecord<KvOperation>[],
  initial: string | null,
  stepsMax: number,
): SearchOutcome {
  assert(stepsMax >= 0, 'a step budget is not negative');
  const values = new Map<string | null, number>([[null, 0]]);
  const valueId = (value: string | null): number => {
    let id = values.get(value);
    if (id === undefined) {
      id = values.size;
      values.set(value, id);
    }
    return id;
  };
  const operations = pruneUnobservedInfo(records.filter(isSearchRelevant));
  const steps = operations.map((record) => toStep(record, valueId));
  const count = operations.length;
  // Entry 2i+1 is operation i's call, 2i+2 its return; 0 is the head.
  const order: number[] = [];
  for (let i = 0; i < count; i++) order.push(2 * i + 1, 2 * i + 2);
  const timeOf = (entry: number): number => {
    const record = operations[(entry - 1) >> 1] as OperationRecord<KvOperation>;
    return entry % 2 === 1 ? record.invokeMs : record.completeMs;
  };
  // Real-time order; at equal times calls go first, so touching operations count as concurrent
  // (a coarse clock must never make the checker claim an order it did not see).
  order.sort((a, b) => timeOf(a) - timeOf(b) || (b % 2) - (a % 2) || a - b);
  const next = new Int32Array(2 * count + 1).fill(none);
  const prev = new Int32Array(2 * count + 1).fill(none);
  let last = head;
  for (const entry of order) {
    next[last] = entry;
    prev[entry] = last;
    last = entry;
  }
  const lift = (entry: number): void => {
    for (const e of [entry, entry + 1]) {
      const p = prev[e] as number;
      const n = next[e] as number;
      next[p] = n;
      if (n !== none) prev[n] = p;
    }
  };
  const unlift = (entry: number): void => {
    for (const e of [entry + 1, entry]) {
      const p = prev[e] as number;
      const n = next[e] as number;
      next[p] = e;
      if (n !== none) prev[n] = e;
    }
  };
  const linearized = new Uint32Array(Math.ceil(count / 32) + 1);
  const seen = new Set<string>();
  const stack: { entry: number; state: number }[] = [];
  let state = valueId(initial);
  let entry = next[head] as number;
  let taken = 0;
  while (next[head] !== none) {
    if (taken >= stepsMax) return { verdict: 'unknown', steps: taken };
    taken += 1;
    assert(entry !== none, 'a non-empty list ends with a return, which stops the scan');
    if (entry % 2 === 0) {
      // The return of an operation not yet linearized: every order tried so far fails here.
      const top = stack.pop();
      if (top === undefined) return { verdict: 'violation', steps: taken };
      const op = (top.entry - 1) >> 1;
      linearized[op >> 5] = (linearized[op >> 5] as number) & ~(1 << (op & 31));
      state = top.state;
      unlift(top.entry);
      entry = next[top.entry] as number;
      continue;
    }
    const op = (entry - 1) >> 1;
    const after = apply(steps[op] as Step, state);
    if (after !== none) {
      linearized[op >> 5] = (linearized[op >> 5] as number) | (1 << (op & 31));
      const key = `${linearized.join(',')}|${after}`;
      if (!seen.has(key)) {
        seen.add(key);
        stack.push({ entry, state });
        state = after;
        lift(entry);
        entry = next[head] as number;
        continue;
      }
      linearized[op >> 5] = (linearized[op >> 5] as number) & ~(1 << (op & 31));
    }
    entry = next[entry] as number;
  }
  assert(stack.length === count, 'a full linearization holds every operation');
  return { verdict: 'ok', steps: taken };
}

/**
 * Timed-out writes make the search exponential (each may or may not have happened at every
 * point), so drop those that cannot matter: an info write or CAS whose value no read returned
 * and no CAS expected. Any linearization that places it can move it to the end instead, unless a
 * refused CAS needed the register to hold some other value; so keys with an acknowledged refused
 * CAS keep them all.
 */
function pruneUnobservedInfo(
  records: readonly OperationRecord<KvOperation>[],
): OperationRecord<KvOperation>[] {
  const observed = new Set<string | null>();
  for (const record of records) {
    const operation = record.operation;
    if (operation.type === 'cas') {
      if (record.result?.type === 'cas' && !record.result.succeeded) return [...records];
      observed.add(operation.expected);
    }
    if (record.result?.type === 'read') observed.add(record.result.value);
  }
  return records.filter(
    (r) => r.status !== 'info' || r.operation.type === 'read' || observed.has(r.operation.value),
  );
}

function toStep(
  record: OperationRecord<KvOperation>,
  valueId: (value: string | null) => number,
): Step {
  const operation = record.operation;
  switch (operation.type) {
    case 'read': {
      assert(record.result?.type === 'read', 'an ok read carries the value it saw');
      return { kind: 'read', read: valueId(record.result.value), written: none };
    }
    case 'write':
      return { kind: 'write', read: none, written: valueId(operation.value) };
    case 'cas': {
      const read = valueId(operation.expected);
      const written = valueId(operation.value);
      if (record.status === 'info') return { kind: 'cas-unknown', read, written };
      assert(record.result?.type === 'cas', 'an ok CAS says whether it swapped');
      return { kind: record.result.succeeded ? 'cas-swapped' : 'cas-not-swapped', read, written };
    }
  }
}

/** The register value after the step, or `none` if the step cannot happen in this state. */
function apply(step: Step, state: number): number {
  switch (step.kind) {
    case 'read':
      return step.read === state ? state : none;
    case 'write':
      return step.written;
    case 'cas-swapped':
      return step.read === state ? step.written : none;
    case 'cas-not-swapped':
      return step.read === state ? none : state;
    case 'cas-unknown':
      // Had it found its expected value it may have swapped; the "did not happen" branch is the
      // search linearizing it last, after every other operation.
      return step.read === state ? step.written : state;
  }
}
