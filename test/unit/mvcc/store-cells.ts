// The one-replica "cells" the mvcc and lease unit tests apply commands to: a real MvccStore on a
// MemoryEngine, fed each command as a numbered log entry the way the driver hands them over.
import { EntryType } from '../../../src/raft/types.js';
import { MemoryEngine, MvccStore, defaultMvccLimits, encodeCommand } from '../../../src/mvcc/index.js';
import type { ApplyOutcome, Command } from '../../../src/mvcc/index.js';

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

/** An outcome's error code, or its type when it did not fail ('none' when there is none). */
export const codeOf = (outcome: ApplyOutcome | undefined): string => (outcome?.type === 'failed' ? outcome.error.code : outcome?.type ?? 'none');
