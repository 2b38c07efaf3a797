// One recorded client operation against a real member over HTTP. Each operation is one attempt
// with its own Request-ID; its completion says what the client can know: ok (with the result),
// fail (the request certainly did not take effect) or info (it may have, at any later time).
import type { HistoryEvent, KvOperation, KvResult } from '../../src/check/index.js';

export interface Recorder {
  /** Milliseconds on one monotonic clock since the run started. */
  now(): number;
  record(event: HistoryEvent): void;
}

const prefix = '/faults/';

export function keyPath(key: string): string {
  return `${prefix}${key}`;
}

type Outcome = { type: 'ok'; result: KvResult } | { type: 'fail' | 'info'; error: string };

/**
 * `serializable` reads may be stale by design: a run with them must fail the linearizability
 * checker under partitions, which shows the whole pipeline can see a violation.
 */
export type ReadConsistency = 'linearizable' | 'serializable';

export async function runOperation(
  recorder: Recorder,
  process: number,
  baseUrl: string,
  operation: KvOperation,
  timeoutMs: number,
  reads: ReadConsistency = 'linearizable',
): Promise<Outcome> {
  recorder.record({ type: 'invoke', process, timeMs: recorder.now(), operation });
  let outcome: Outcome;
  try {
    const requestId = `p${process}-${recorder.now().toFixed(3)}`;
    outcome = await send(baseUrl, operation, timeoutMs, requestId, reads);
  } catch (error) {
    outcome = transportFailure(operation, error);
  }
  const timeMs = recorder.now();
  if (outcome.type === 'ok') recorder.record({ type: 'ok', process, timeMs, result: outcome.result });
  else recorder.record({ type: outcome.type, process, timeMs, error: outcome.error });
  return outcome;
}

/** A refused connection never delivered the request; anything else may have. */
function transportFailure(operation: KvOperation, error: unknown): Outcome {
  const cause = error instanceof Error ? (error.cause as { code?: string } | undefined) : undefined;
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  if (cause?.code === 'ECONNREFUSED') return { type: 'fail', error: 'connection refused' };
  // A read that did not answer changed nothing; the checker ignores it either way.
  return { type: operation.type === 'read' ? 'fail' : 'info', error: cause?.code ?? message };
}

async function send(
  baseUrl: string,
  operation: KvOperation,
  timeoutMs: number,
  requestId: string,
  reads: ReadConsistency,
): Promise<Outcome> {
  const signal = AbortSignal.timeout(timeoutMs);
  const url = `${baseUrl}/v1/kv${keyPath(operation.key)}`;
  if (operation.type === 'read') {
    const query = reads === 'serializable' ? '?consistency=serializable' : '';
    const res = await fetch(`${url}${query}`, { signal });
    const body = (await res.json()) as { kvs?: { value: string }[]; error?: { code: string } };
    if (res.status === 200) return ok({ type: 'read', value: body.kvs?.[0]?.value ?? null });
    if (res.status === 404 && body.error?.code === 'key_not_found') {
      return ok({ type: 'read', value: null });
    }
    return { type: 'fail', error: `${res.status} ${body.error?.code ?? ''}` };
  }
  const headers = { 'Request-ID': requestId, 'content-type': 'application/json' };
  if (operation.type === 'write') {
    if (operation.value === null) throw new Error('the runner writes values only');
    const res = await fetch(url, { method: 'PUT', body: operation.value, headers, signal });
    const body = (await res.json()) as { error?: { code: string } };
    if (res.status === 200 || res.status === 201) return ok({ type: 'write' });
    return writeError(res.status, body.error?.code);
  }
  if (operation.value === null) throw new Error('the runner swaps in values only');
  const path = keyPath(operation.key);
  const compare =
    operation.expected === null
      ? { key: path, target: 'version', op: '==', value: 0 }
      : { key: path, target: 'value', op: '==', value: operation.expected };
  const txn = { compare: [compare], success: [{ put: { key: path, value: operation.value } }] };
  const res = await fetch(`${baseUrl}/v1/txn`, {
    method: 'POST',
    body: JSON.stringify(txn),
    headers,
    signal,
  });
  const body = (await res.json()) as { succeeded?: boolean; error?: { code: string } };
  if (res.status === 200) return ok({ type: 'cas', succeeded: body.succeeded === true });
  return writeError(res.status, body.error?.code);
}

function ok(result: KvResult): Outcome {
  return { type: 'ok', result };
}

/** 4xx answers reject a write before it is proposed; 503 and 504 leave its outcome open. */
function writeError(status: number, code: string | undefined): Outcome {
  const error = `${status} ${code ?? ''}`.trim();
  if (status >= 400 && status < 500 && status !== 429) return { type: 'fail', error };
  return { type: 'info', error };
}
