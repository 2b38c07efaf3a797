// Checkers for recorded client histories (issue 11): linearizability of the key-value register
// with CAS, lock safety with fencing, lease expiry, watch delivery, and durability of
// acknowledged writes.
// Pure and deterministic: histories come in as data, nothing here reads a clock or does I/O.
export type {
  CheckReport,
  CommittedEvent,
  CompletionStatus,
  HistoryEvent,
  KeyFailure,
  KvOperation,
  KvResult,
  LinearizabilityOptions,
  LinearizabilityReport,
  LockOperation,
  LockResult,
  Operation,
  OperationRecord,
  OperationResult,
  Verdict,
  Violation,
  WatchRecord,
} from './types.js';
export { EventType } from './types.js';
export { pairHistory, isKvRecord, formatOperation, formatRecord } from './history.js';
export { searchRegister } from './register-search.js';
export {
  checkLinearizable,
  shrinkFailure,
  linearizabilityStepsMaxDefault,
} from './linearizability.js';
export { checkLockSafety } from './lock-safety.js';
export { checkLeases, type LeaseCheckReport } from './lease-check.js';
export { checkWatches } from './watch-check.js';
export { checkDurability, type DurabilityInput } from './durability.js';
