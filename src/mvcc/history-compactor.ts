// Compaction in bounded steps. A compact command only moves the compact revision (reads below it
// fail at once); the history below it is then deleted a fixed number of events per applied entry,
// so a big compaction never stalls apply, and every replica deletes exactly the same events at
// the same entries (the work depends on the entry sequence only, never on batching or time).
import { historyKey, parseHistoryKey, revisionIndexKey, tablePrefix } from './layout.js';
import { storedEventKey } from './records.js';
import type { KvReader, KvWriter } from './types.js';

const historyStart = historyKey(0, 0);
const historyEnd = Uint8Array.of((tablePrefix.history[0] as number) + 1);

/** The oldest revision still in history, or undefined when history is empty. */
export function oldestHistoryRevision(reader: KvReader): number | undefined {
  for (const entry of reader.range({ start: historyStart, end: historyEnd })) {
    return parseHistoryKey(entry.key).revision;
  }
  return undefined;
}

/** Deletes up to `eventsMax` events below `compactRevision` (and their index entries). */
export function compactHistoryStep(
  writer: KvWriter,
  options: { compactRevision: number; eventsMax: number },
): void {
  const doomed: { historyKey: Uint8Array; indexKey: Uint8Array }[] = [];
  const range = { start: historyStart, end: historyKey(options.compactRevision, 0) };
  for (const entry of writer.range(range)) {
    if (doomed.length >= options.eventsMax) break;
    const { revision } = parseHistoryKey(entry.key);
    doomed.push({ historyKey: entry.key, indexKey: revisionIndexKey(storedEventKey(entry.value), revision) });
  }
  // Deleted after the scan: the engine forbids writes while a range is being iterated.
  for (const item of doomed) {
    writer.delete(item.historyKey);
    writer.delete(item.indexKey);
  }
}
