// When to take a snapshot: every N applied entries or M bytes of log, whichever comes first.
// Pure, so the driver and the simulator decide the same way.
import { assert } from '../base/assert.js';
import { snapshotLogBytes } from '../base/limits.js';
import type { SnapshotPolicy, SnapshotPolicyInput } from './types.js';

export const defaultSnapshotPolicy: SnapshotPolicy = {
  entriesMax: 10_000,
  logBytesMax: snapshotLogBytes,
};

export function shouldSnapshot(
  input: SnapshotPolicyInput,
  policy = defaultSnapshotPolicy,
): boolean {
  assert(input.appliedIndex >= input.snapshotIndex, 'a snapshot never runs ahead of apply');
  assert(policy.entriesMax > 0 && policy.logBytesMax > 0, 'policy bounds are positive');
  if (input.appliedIndex === input.snapshotIndex) return false;
  return (
    input.appliedIndex - input.snapshotIndex >= policy.entriesMax ||
    input.logBytesSinceSnapshot >= policy.logBytesMax
  );
}
