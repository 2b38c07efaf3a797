// The history model the checkers read. A runner records every client operation as an invoke
// event and one completion: ok (it happened, with its result), fail (it certainly did not
// happen) or info (the outcome is unknown: a timeout or a lost connection, so it may have taken
// effect at any moment after its invoke, or never). Times are numbers the runner supplies
// (milliseconds on one monotonic clock); the checkers never read a clock themselves.

/** A key-value register operation. `null` is "the key is absent" (a delete writes null). */
export type KvOperation =
  | { readonly type: 'read'; readonly key: string }
  | { readonly type: 'write'; readonly key: string; readonly value: string | null }
  | {
      readonly type: 'cas';
      readonly key: string;
      readonly expected: string | null;
      readonly value: string | null;
    };

/** What an ok completion returned: the value a read saw, whether a CAS swapped. */
export type KvResult =
  | { readonly type: 'read'; readonly value: string | null }
  | { readonly type: 'write' }
  | { readonly type: 'cas'; readonly succeeded: boolean };

/** Lock, lease and fencing-guard operations, checked by the lock-safety checker. */
export type LockOperation =
  | { readonly type: 'lease-grant'; readonly ttlMs: number }
  | { readonly type: 'lease-keepalive'; readonly leaseId: string; readonly ttlMs: number }
  | { readonly type: 'lease-revoke'; readonly leaseId: string }
  | { readonly type: 'acquire'; readonly lock: string; readonly leaseId: string }
  | { readonly type: 'release'; readonly lock: string; readonly fencingToken: number }
  /** A write to the protected resource, presented to the fencing guard with a token. */
  | { readonly type: 'guarded-write'; readonly resource: string; readonly fencingToken: number }
  /** A put of `key` attached to a lease (each such key is written once, with a unique value). */
  | { readonly type: 'lease-put'; readonly key: string; readonly value: string; readonly leaseId: string }
  /** A linearizable read of a lease-attached key. */
  | { readonly type: 'lease-read'; readonly key: string };

export type LockResult =
  | { readonly type: 'lease-grant'; readonly leaseId: string }
  /** `expired`: the cell answered lease_not_found, so the lease was gone by this completion. */
  | { readonly type: 'lease-keepalive'; readonly expired: boolean }
  | { readonly type: 'lease-revoke' }
  | { readonly type: 'acquire'; readonly fencingToken: number }
  | { readonly type: 'release' }
  | { readonly type: 'guarded-write'; readonly accepted: boolean }
  | { readonly type: 'lease-put' }
  | { readonly type: 'lease-read'; readonly value: string | null };

export type Operation = KvOperation | LockOperation;
export type OperationResult = KvResult | LockResult;

export const EventType = { invoke: 'invoke', ok: 'ok', fail: 'fail', info: 'info' } as const;
export type EventType = (typeof EventType)[keyof typeof EventType];

/** One line of a recorded history, in the order the runner saw them. */
export type HistoryEvent =
  | {
      readonly type: 'invoke';
      readonly process: number;
      readonly timeMs: number;
      readonly operation: Operation;
    }
  | {
      readonly type: 'ok';
      readonly process: number;
      readonly timeMs: number;
      readonly result: OperationResult;
    }
  | {
      readonly type: 'fail' | 'info';
      readonly process: number;
      readonly timeMs: number;
      readonly error?: string;
    };

export type CompletionStatus = 'ok' | 'fail' | 'info';

/**
 * An invoke paired with its completion. An operation still open when the history ends is
 * `info`. Invariant: invokeMs <= completeMs; completeMs is Infinity for info operations, since
 * they may take effect at any later time.
 */
export interface OperationRecord<O extends Operation = Operation> {
  readonly id: number;
  readonly process: number;
  readonly operation: O;
  readonly status: CompletionStatus;
  readonly invokeMs: number;
  readonly completeMs: number;
  readonly result: OperationResult | null;
  readonly error?: string;
}

/** Linearizable, not linearizable, or the step budget ran out first. */
export type Verdict = 'ok' | 'violation' | 'unknown';

export interface KeyFailure {
  readonly key: string;
  /** A minimal non-linearizable sub-history of this key (every operation in it is needed). */
  readonly operations: readonly OperationRecord<KvOperation>[];
  /** The same operations, one readable line each, in invoke order. */
  readonly explanation: string;
}

export interface LinearizabilityReport {
  readonly verdict: Verdict;
  readonly keysChecked: number;
  readonly operationsChecked: number;
  readonly steps: number;
  readonly failures: readonly KeyFailure[];
  /** Keys whose search ran out of budget. */
  readonly unknownKeys: readonly string[];
}

export interface LinearizabilityOptions {
  /** Search steps over all keys before the answer becomes "unknown" rather than a hang. */
  readonly stepsMax?: number;
  /** Initial register values; keys not named start absent (null). */
  readonly initial?: ReadonlyMap<string, string | null>;
  /** Shrink a failing key to a minimal sub-history (costs extra searches, within the budget). */
  readonly shrink?: boolean;
}

/** One finding of the lock, watch or durability checkers. */
export interface Violation {
  readonly checker: 'lock-safety' | 'lease' | 'watch' | 'durability' | 'dedup';
  readonly kind: string;
  readonly message: string;
}

export interface CheckReport {
  readonly verdict: Verdict;
  readonly violations: readonly Violation[];
}

/** A committed mutation, as a final full read of history gives it (revision order). */
export interface CommittedEvent {
  readonly revision: number;
  readonly key: string;
  readonly type: 'put' | 'delete';
  readonly value: string | null;
}

/** What one watcher received, and how it ended. */
export interface WatchRecord {
  readonly id: string;
  /** A key, or a prefix when `prefix` is true. */
  readonly key: string;
  readonly prefix: boolean;
  /** The first revision the watcher asked for. */
  readonly startRevision: number;
  readonly received: readonly CommittedEvent[];
  /**
   * How the watch ended. `open`: still running at the end, caught up through `progressRevision`
   * (a progress notification or the final header), so nothing at or below it may be missing.
   */
  readonly end:
    | { readonly type: 'open'; readonly progressRevision: number }
    | { readonly type: 'compacted'; readonly compactRevision: number }
    /** Closed (a lost connection), having been caught up through `progressRevision` if given. */
    | { readonly type: 'closed'; readonly progressRevision?: number };
}
