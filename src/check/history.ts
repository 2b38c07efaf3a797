// Pairing a flat event history into operation records, and printing records readably. A process
// runs one operation at a time (as Jepsen's do): its next event after an invoke is that
// operation's completion. A process whose operation ended `info` may invoke again (the runner
// reused the client); the info operation stays open forever, since it may still take effect.
import { assert } from '../base/assert.js';
import type {
  HistoryEvent,
  KvOperation,
  Operation,
  OperationRecord,
  OperationResult,
} from './types.js';

export function pairHistory(events: readonly HistoryEvent[]): OperationRecord[] {
  const open = new Map<number, { id: number; operation: Operation; invokeMs: number }>();
  const records: (OperationRecord | null)[] = [];
  for (const event of events) {
    assert(Number.isFinite(event.timeMs), 'event times are finite numbers');
    if (event.type === 'invoke') {
      assert(!open.has(event.process), `process ${event.process} invoked twice without completing`);
      const pending = { id: records.length, operation: event.operation, invokeMs: event.timeMs };
      open.set(event.process, pending);
      records.push(null);
      continue;
    }
    const pending = open.get(event.process);
    assert(pending !== undefined, `process ${event.process} completed with nothing invoked`);
    assert(event.timeMs >= pending.invokeMs, 'an operation completes after its invoke');
    open.delete(event.process);
    const ok = event.type === 'ok';
    if (ok) assert(event.result.type === pending.operation.type, 'a result matches its operation');
    records[pending.id] = {
      id: pending.id,
      process: event.process,
      operation: pending.operation,
      status: event.type,
      invokeMs: pending.invokeMs,
      completeMs: event.type === 'info' ? Infinity : event.timeMs,
      result: ok ? event.result : null,
      ...(event.type !== 'ok' && event.error !== undefined ? { error: event.error } : {}),
    };
  }
  // Operations still open when recording stopped have unknown outcomes.
  for (const [process, pending] of open) {
    records[pending.id] = {
      id: pending.id,
      process,
      operation: pending.operation,
      status: 'info',
      invokeMs: pending.invokeMs,
      completeMs: Infinity,
      result: null,
    };
  }
  return records.map((record) => {
    assert(record !== null, 'every invoke has a record');
    return record;
  });
}

export function isKvRecord(record: OperationRecord): record is OperationRecord<KvOperation> {
  const type = record.operation.type;
  return type === 'read' || type === 'write' || type === 'cas';
}

function showValue(value: string | null): string {
  return value === null ? '∅' : JSON.stringify(value);
}

export function formatOperation(operation: Operation, result: OperationResult | null): string {
  switch (operation.type) {
    case 'read': {
      const seen = result?.type === 'read' ? showValue(result.value) : '?';
      return `read ${operation.key} -> ${seen}`;
    }
    case 'write':
      return `write ${operation.key} := ${showValue(operation.value)}`;
    case 'cas': {
      const swapped = result?.type === 'cas' && result.succeeded;
      const outcome = result?.type === 'cas' ? (swapped ? ' swapped' : ' not swapped') : '';
      const parts = `${showValue(operation.expected)} -> ${showValue(operation.value)}`;
      return `cas ${operation.key} ${parts}${outcome}`;
    }
    case 'lease-grant': {
      const id = result?.type === 'lease-grant' ? ` -> ${result.leaseId}` : '';
      return `lease-grant ttl=${operation.ttlMs}ms${id}`;
    }
    case 'lease-keepalive': {
      const expired = result?.type === 'lease-keepalive' ? (result.expired ? ' expired' : ' renewed') : '';
      return `lease-keepalive ${operation.leaseId}${expired}`;
    }
    case 'lease-revoke':
      return `lease-revoke ${operation.leaseId}`;
    case 'acquire': {
      const token = result?.type === 'acquire' ? ` token=${result.fencingToken}` : '';
      return `acquire ${operation.lock} lease=${operation.leaseId}${token}`;
    }
    case 'release':
      return `release ${operation.lock} token=${operation.fencingToken}`;
    case 'guarded-write': {
      const verdict = result?.type === 'guarded-write' ? (result.accepted ? ' accepted' : ' rejected') : '';
      return `guarded-write ${operation.resource} token=${operation.fencingToken}${verdict}`;
    }
    case 'lease-put':
      return `lease-put ${operation.key} := ${showValue(operation.value)} lease=${operation.leaseId}`;
    case 'lease-read': {
      const seen = result?.type === 'lease-read' ? showValue(result.value) : '?';
      return `lease-read ${operation.key} -> ${seen}`;
    }
  }
}

/** `p3 [120 .. 135] ok    write k1 := "v7"`: one operation per line, times in ms. */
export function formatRecord(record: OperationRecord): string {
  const end = record.completeMs === Infinity ? '?' : showTime(record.completeMs);
  const when = `[${showTime(record.invokeMs)} .. ${end}]`;
  const what = formatOperation(record.operation, record.result);
  const error = record.error === undefined ? '' : ` (${record.error})`;
  return `p${record.process} ${when} ${record.status.padEnd(4)} ${what}${error}`;
}

/** Whole milliseconds print as they are; a runner's fractional clock prints to 0.1 ms. */
function showTime(ms: number): string {
  return Number.isInteger(ms) ? String(ms) : ms.toFixed(1);
}
