// No acknowledged write lost: after every fault has healed (and every member restarted), a final
// read of each key must show a value that some write could have left last. A final value v is
// explained by a write X of v (acknowledged or of unknown outcome) unless some acknowledged write
// W certainly came after X (X completed before W was invoked): then W, or a later write, should
// be visible instead, and W was lost. Values should be unique per key for sharp answers; with
// repeated values the checker picks the most favourable writer, so it never claims a false loss.
import type {
  CheckReport,
  KvOperation,
  OperationRecord,
  Verdict,
  Violation,
} from './types.js';
import { formatRecord } from './history.js';

export interface DurabilityInput {
  readonly records: readonly OperationRecord<KvOperation>[];
  /** The value each key showed in a linearizable read after the cell healed (null: absent). */
  readonly finalValues: ReadonlyMap<string, string | null>;
  /** Initial register values; keys not named start absent. */
  readonly initial?: ReadonlyMap<string, string | null>;
}

function writtenValue(record: OperationRecord<KvOperation>): string | null | undefined {
  const operation = record.operation;
  if (record.status === 'fail' || operation.type === 'read') return undefined;
  if (operation.type === 'cas' && record.status === 'ok') {
    return record.result?.type === 'cas' && record.result.succeeded ? operation.value : undefined;
  }
  return operation.value;
}

function acknowledged(record: OperationRecord<KvOperation>): boolean {
  return record.status === 'ok' && writtenValue(record) !== undefined;
}

export function checkDurability(input: DurabilityInput): CheckReport & { keysChecked: number } {
  const violations: Violation[] = [];
  const byKey = new Map<string, OperationRecord<KvOperation>[]>();
  for (const record of input.records) {
    if (writtenValue(record) === undefined) continue;
    byKey.set(record.operation.key, [...(byKey.get(record.operation.key) ?? []), record]);
  }
  let unread = false;
  let keysChecked = 0;
  for (const [key, writes] of byKey) {
    if (!input.finalValues.has(key)) {
      unread ||= writes.some(acknowledged);
      continue;
    }
    keysChecked += 1;
    const final = input.finalValues.get(key) ?? null;
    const problem = checkKey(key, writes, final, input.initial?.get(key) ?? null);
    if (problem !== null) violations.push(problem);
  }
  const verdict: Verdict = violations.length > 0 ? 'violation' : unread ? 'unknown' : 'ok';
  return { verdict, violations, keysChecked };
}

function checkKey(
  key: string,
  writes: readonly OperationRecord<KvOperation>[],
  final: string | null,
  initial: string | null,
): Violation | null {
  const shown = final === null ? 'absent' : JSON.stringify(final);
  const writers = writes.filter((w) => writtenValue(w) === final);
  // The writer that could have come latest; the initial value "completed" before everything.
  let latestCompleteMs = final === initial ? -Infinity : undefined;
  let latest: OperationRecord<KvOperation> | null = null;
  for (const writer of writers) {
    if (latestCompleteMs === undefined || writer.completeMs > latestCompleteMs) {
      latestCompleteMs = writer.completeMs;
      latest = writer;
    }
  }
  if (latestCompleteMs === undefined) {
    return {
      checker: 'durability',
      kind: 'unknown-value',
      message: `key ${JSON.stringify(key)} finally reads ${shown}, which no write wrote`,
    };
  }
  const cutoff = latestCompleteMs;
  const lost = writes.filter((w) => acknowledged(w) && cutoff < w.invokeMs);
  if (lost.length === 0) return null;
  const source = latest === null ? 'the initial value' : `from ${formatRecord(latest)}`;
  const lines = lost.map((w) => `  ${formatRecord(w)}`).join('\n');
  return {
    checker: 'durability',
    kind: 'lost-write',
    message:
      `key ${JSON.stringify(key)} finally reads ${shown} (${source}), so these ` +
      `acknowledged writes, all begun after it completed, were lost:\n${lines}`,
  };
}
