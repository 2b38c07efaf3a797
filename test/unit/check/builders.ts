// Terse builders for hand-made histories: `write(1, 0, 10, 'x', 'a')` is process 1 writing
// x := "a" invoked at 0 and acknowledged at 10. Status defaults to ok.
import type {
  CompletionStatus,
  KvOperation,
  Operation,
  OperationRecord,
  OperationResult,
} from '../../../src/check/index.js';

let nextId = 1;

export function record<O extends Operation>(
  process: number,
  invokeMs: number,
  completeMs: number,
  operation: O,
  result: OperationResult | null,
  status: CompletionStatus = 'ok',
): OperationRecord<O> {
  return {
    id: nextId++,
    process,
    operation,
    status,
    invokeMs,
    completeMs: status === 'info' ? Infinity : completeMs,
    result: status === 'ok' ? result : null,
  };
}

type Kv = OperationRecord<KvOperation>;

export function read(p: number, from: number, to: number, key: string, value: string | null): Kv {
  return record(p, from, to, { type: 'read', key }, { type: 'read', value });
}

export function write(
  p: number,
  from: number,
  to: number,
  key: string,
  value: string | null,
  status: CompletionStatus = 'ok',
): Kv {
  return record(p, from, to, { type: 'write', key, value }, { type: 'write' }, status);
}

export function cas(
  p: number,
  from: number,
  to: number,
  key: string,
  expected: string | null,
  value: string | null,
  outcome: boolean | 'fail' | 'info',
): Kv {
  const operation = { type: 'cas', key, expected, value } as const;
  if (outcome === 'fail' || outcome === 'info') return record(p, from, to, operation, null, outcome);
  return record(p, from, to, operation, { type: 'cas', succeeded: outcome });
}

/** Lease grants and keepalives of `ttlMs`, each acknowledged 5 ms after it was invoked. */
export function leaseBuilders(ttlMs: number) {
  return {
    grant(p: number, at: number, leaseId: string): OperationRecord {
      return record(p, at, at + 5, { type: 'lease-grant', ttlMs }, { type: 'lease-grant', leaseId });
    },
    keepalive(p: number, at: number, leaseId: string, expired = false): OperationRecord {
      const op = { type: 'lease-keepalive', leaseId, ttlMs } as const;
      return record(p, at, at + 5, op, { type: 'lease-keepalive', expired });
    },
  };
}
