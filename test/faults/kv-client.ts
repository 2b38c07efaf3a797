// Recorded client operations through the real client library (src/client): the invoke event is
// recorded before the call, the completion after it. BatonClient retries an attempt that timed out
// or found no leader, with the same Request-ID, across members; so its final answer says what the
// caller can know: a result (ok), a definite refusal (fail: a non-retryable error answered by the
// cell, which dedup makes authoritative even after earlier lost attempts), or nothing certain
// (info: a timeout or unavailability after the request may have been sent, for a mutation).
import { BatonError, BatonClient, type ClientOptions } from '../../src/client/index.js';
import type { HistoryEvent, KvOperation, KvResult, Operation, OperationResult } from '../../src/check/index.js';

export interface Recorder {
  /** Milliseconds on one monotonic clock since the run started. */
  now(): number;
  record(event: HistoryEvent): void;
}

const prefix = '/faults/';

export function keyPath(key: string): string {
  return `${prefix}${key}`;
}

export type Outcome<R extends OperationResult> = { type: 'ok'; result: R } | { type: 'fail' | 'info'; error: string };

/**
 * `serializable` reads may be stale by design: a run with them must fail the linearizability
 * checker under partitions, which shows the whole pipeline can see a violation.
 */
export type ReadConsistency = 'linearizable' | 'serializable';

/** Retries bounded so one operation ends within a few seconds even while a fault lasts. */
export function faultClient(urls: readonly string[], random: () => number, attemptTimeoutMs: number): BatonClient {
  return new BatonClient(faultClientOptions(urls, random, attemptTimeoutMs));
}

export function faultClientOptions(urls: readonly string[], random: () => number, attemptTimeoutMs: number): ClientOptions {
  return {
    endpoints: urls,
    random,
    // The member list is the seed list here; discovery would only put everyone on the leader.
    discover: false,
    retry: { attemptsMax: 4, delayMsBase: 50, delayMsMax: 500, deadlineMs: attemptTimeoutMs * 2, attemptTimeoutMs },
  };
}

/** Records `operation`, runs `call`, records its completion. Reads never end `info`. */
export async function recorded<R extends OperationResult>(
  recorder: Recorder,
  process: number,
  operation: Operation,
  call: () => Promise<R>,
): Promise<Outcome<R>> {
  recorder.record({ type: 'invoke', process, timeMs: recorder.now(), operation });
  let outcome: Outcome<R>;
  try {
    outcome = { type: 'ok', result: await call() };
  } catch (error) {
    outcome = classify(error, !isRead(operation));
  }
  const timeMs = recorder.now();
  if (outcome.type === 'ok') recorder.record({ type: 'ok', process, timeMs, result: outcome.result });
  else recorder.record({ type: outcome.type, process, timeMs, error: outcome.error });
  return outcome;
}

function isRead(operation: Operation): boolean {
  return operation.type === 'read' || operation.type === 'lease-read';
}

export function classify(error: unknown, mutation: boolean): { type: 'fail' | 'info'; error: string } {
  const text = error instanceof BatonError ? error.code : error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  // A read that did not answer changed nothing: the checkers ignore it either way.
  if (!mutation) return { type: 'fail', error: text };
  if (error instanceof BatonError && !error.retryable) return { type: 'fail', error: text };
  return { type: 'info', error: text };
}

export function runKvOperation(
  recorder: Recorder,
  process: number,
  client: BatonClient,
  operation: KvOperation,
  reads: ReadConsistency = 'linearizable',
): Promise<Outcome<KvResult>> {
  return recorded<KvResult>(recorder, process, operation, async () => {
    const path = keyPath(operation.key);
    if (operation.type === 'read') {
      const kv = await client.getValue(path, { consistency: reads });
      return { type: 'read', value: kv?.value ?? null };
    }
    if (operation.value === null) throw new Error('the runner writes values only');
    if (operation.type === 'write') {
      await client.put(path, operation.value);
      return { type: 'write' };
    }
    const compare =
      operation.expected === null
        ? ({ key: path, target: 'version', op: '==', value: 0 } as const)
        : ({ key: path, target: 'value', op: '==', value: operation.expected } as const);
    const txn = { compare: [compare], success: [{ put: { key: path, value: operation.value } }], failure: [] };
    const result = await client.txn(txn);
    return { type: 'cas', succeeded: result.succeeded };
  });
}
