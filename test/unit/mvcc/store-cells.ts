// The one-replica "cells" the mvcc and lease unit tests apply commands to: a real MvccStore on a
// MemoryEngine, fed each command as a numbered log entry the way the driver hands them over.
import assert from 'node:assert/strict';
import { EntryType } from '../../../src/raft/types.js';
import { MemoryEngine, MvccStore, defaultMvccLimits, encodeCommand } from '../../../src/mvcc/index.js';
import type { ApplyOutcome, Command, CommandResult, MvccLimits } from '../../../src/mvcc/index.js';

/**
 * `apply(...ops)` applies the ops as one batch of entries, proposed at 1_000 + index by member 1
 * (with `requestIds`, entry i also carries request id `r<i>`); `applyOne(op)` is a batch of one.
 */
export function batchCell(options: { requestIds?: boolean } = {}): {
  store: MvccStore;
  apply(...ops: Command[]): ApplyOutcome[];
  applyOne(op: Command): ApplyOutcome;
} {
  const store = new MvccStore(new MemoryEngine());
  let index = 0;
  const apply = (...ops: Command[]): ApplyOutcome[] => {
    const entries = ops.map((op) => {
      index++;
      const requestId = options.requestIds === true ? { requestId: `r${index}` } : {};
      return { index, term: 1, type: EntryType.normal, data: encodeCommand({ proposedAtMs: 1_000 + index, source: 1, ...requestId, op }, defaultMvccLimits) };
    });
    return store.applyBatch(entries);
  };
  return { store, apply, applyOne: (op) => apply(op)[0] as ApplyOutcome };
}

/**
 * `run(op)` applies one op as the store's next entry (proposed at 1 ms, no member, no request id)
 * and returns its outcome; `ok(op)` also asserts that it applied and returns its result. The store
 * is a fresh one with `limits` unless one is given (it then goes on from its applied index).
 */
export function commandCell(options: { limits?: MvccLimits; store?: MvccStore } = {}): {
  store: MvccStore;
  run: (op: Command) => ApplyOutcome;
  ok: (op: Command) => CommandResult;
} {
  const limits = options.limits ?? defaultMvccLimits;
  const store = options.store ?? new MvccStore(new MemoryEngine(), limits);
  let index = store.appliedIndex;
  const run = (op: Command): ApplyOutcome => {
    const data = encodeCommand({ proposedAtMs: 1, op }, limits);
    const [outcome] = store.applyBatch([{ index: ++index, term: 1, type: EntryType.normal, data }]);
    assert.ok(outcome !== undefined);
    return outcome;
  };
  const ok = (op: Command): CommandResult => {
    const outcome = run(op);
    assert.equal(outcome.type, 'applied', JSON.stringify(outcome));
    return (outcome as { result: CommandResult }).result;
  };
  return { store, run, ok };
}

/** An outcome's error code, or its type when it did not fail ('none' when there is none). */
export const codeOf = (outcome: ApplyOutcome | undefined): string => (outcome?.type === 'failed' ? outcome.error.code : outcome?.type ?? 'none');
