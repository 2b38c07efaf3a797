// Reading stored history for watchers in bounded steps that always end on a revision boundary:
// a batch holds whole revisions, so "resume after the last revision you saw" can never split a
// transaction into a half seen and a half lost (or seen twice).
import { assert } from '../base/assert.js';
import type { MvccEvent } from '../mvcc/index.js';
import type { WatchSource, WatchSpec } from './types.js';

export interface HistoryChunk {
  /** Every stored event with startRevision <= revision <= throughRevision, in order. */
  readonly events: readonly MvccEvent[];
  /** Invariant: startRevision - 1 <= throughRevision <= the requested bound. */
  readonly throughRevision: number;
}

/**
 * Reads about `limit` events from `startRevision`, never past `throughRevision`, cut back to the
 * last complete revision. A single revision larger than `limit` (a big delete-prefix) is read
 * whole: its events are bounded by what the store holds, and splitting it would break resume.
 * Throws CompactedError when startRevision is below the compaction point.
 */
export function readHistory(
  source: WatchSource,
  options: { startRevision: number; throughRevision: number; limit: number; skipCutRevision?: boolean },
): HistoryChunk {
  const { startRevision, throughRevision } = options;
  assert(startRevision >= 1, 'history starts at revision 1');
  assert(options.limit >= 1, 'a read makes progress');
  if (startRevision > throughRevision) return { events: [], throughRevision: startRevision - 1 };
  for (let limit = options.limit; ; limit *= 2) {
    const read = source.events({ startRevision, limit });
    assert(read.length <= limit, 'the source honours the limit');
    const last = read[read.length - 1];
    if (last === undefined) return { events: [], throughRevision };
    assert((read[0] as MvccEvent).revision >= startRevision, 'history starts where asked');
    if (last.revision > throughRevision) {
      return { events: read.filter((e) => e.revision <= throughRevision), throughRevision };
    }
    if (read.length < limit) return { events: read, throughRevision };
    // Full read: the last revision may continue past it, so keep only the revisions before it.
    if ((read[0] as MvccEvent).revision === last.revision) continue;
    let end = read.length;
    while (end > 0 && (read[end - 1] as MvccEvent).revision === last.revision) end--;
    assert(end > 0, 'a full read spanning two revisions keeps at least one');
    // (Test-only bug skipCutRevision: claims the cut-off revision as read.)
    return { events: read.slice(0, end), throughRevision: options.skipCutRevision === true ? last.revision : last.revision - 1 };
  }
}

/** Whether `event` is one `spec` asks for (key or prefix, event type). */
export function watchMatches(spec: WatchSpec, event: MvccEvent): boolean {
  if (spec.filter !== 'all' && spec.filter !== event.type) return false;
  return spec.prefix ? event.kv.key.startsWith(spec.key) : event.kv.key === spec.key;
}

/** Memory an event pins while queued: key, value, prevKv and a fixed overhead per object. */
export function eventBytes(event: MvccEvent, withPrevKv: boolean): number {
  let bytes = 96 + event.kv.key.length + event.kv.value.byteLength;
  if (withPrevKv && event.prevKv !== null) bytes += 64 + event.prevKv.key.length + event.prevKv.value.byteLength;
  return bytes;
}
