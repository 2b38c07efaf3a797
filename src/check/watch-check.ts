// Watch delivery against the committed log: each watcher must have received exactly the committed
// events for its key or prefix from its start revision on, in revision order, with no gap and no
// duplicate. It may stop early only by closing or by a `compacted` error that was due (the next
// revision it needed was at or below the compaction point); a watcher still open and caught up
// through a progress revision must hold every matching event up to that revision.
import { assert } from '../base/assert.js';
import type { CheckReport, CommittedEvent, Violation, WatchRecord } from './types.js';

function matches(watch: WatchRecord, key: string): boolean {
  return watch.prefix ? key.startsWith(watch.key) : key === watch.key;
}

function show(event: CommittedEvent): string {
  const value = event.value === null ? '' : ` ${JSON.stringify(event.value)}`;
  return `${event.type} ${event.key}@${event.revision}${value}`;
}

function same(a: CommittedEvent, b: CommittedEvent): boolean {
  return a.revision === b.revision && a.key === b.key && a.type === b.type && a.value === b.value;
}

/** `committed` is the whole committed log (every key), in revision order. */
export function checkWatches(
  committed: readonly CommittedEvent[],
  watches: readonly WatchRecord[],
): CheckReport {
  for (let i = 1; i < committed.length; i++) {
    const a = committed[i - 1] as CommittedEvent;
    const b = committed[i] as CommittedEvent;
    assert(a.revision <= b.revision, 'the committed log is in revision order');
  }
  const violations: Violation[] = [];
  for (const watch of watches) {
    const problem = checkWatch(committed, watch);
    if (problem !== null) {
      const what = `watcher ${watch.id} on ${watch.prefix ? 'prefix ' : ''}${watch.key}`;
      violations.push({
        checker: 'watch',
        kind: problem.kind,
        message: `${what} from revision ${watch.startRevision}: ${problem.message}`,
      });
    }
  }
  return { verdict: violations.length === 0 ? 'ok' : 'violation', violations };
}

function checkWatch(
  committed: readonly CommittedEvent[],
  watch: WatchRecord,
): { kind: string; message: string } | null {
  const expected = committed.filter(
    (e) => e.revision >= watch.startRevision && matches(watch, e.key),
  );
  const received = watch.received;
  for (let i = 0; i < received.length; i++) {
    const got = received[i] as CommittedEvent;
    const want = expected[i];
    if (want !== undefined && same(got, want)) continue;
    return { kind: classify(received, i, expected, watch), message: mismatch(got, want, i) };
  }
  const missing = expected.slice(received.length);
  const end = watch.end;
  const progressRevision =
    end.type === 'open' ? end.progressRevision : end.type === 'closed' ? end.progressRevision : 0;
  if (progressRevision !== undefined) {
    const owed = missing.filter((e) => e.revision <= progressRevision);
    if (owed.length > 0) {
      const first = owed[0] as CommittedEvent;
      return {
        kind: 'gap',
        message:
          `caught up through revision ${progressRevision} but never received ` +
          `${owed.length} event(s), first ${show(first)}`,
      };
    }
  }
  if (end.type === 'compacted') {
    const last = received[received.length - 1];
    const nextNeeded = last === undefined ? watch.startRevision : last.revision + 1;
    if (nextNeeded > end.compactRevision) {
      return {
        kind: 'compacted-not-due',
        message:
          `ended with compacted at ${end.compactRevision}, but it needed revision ` +
          `${nextNeeded} next, which was never compacted`,
      };
    }
  }
  return null;
}

function mismatch(got: CommittedEvent, want: CommittedEvent | undefined, index: number): string {
  const expected = want === undefined ? 'nothing more' : show(want);
  return `event #${index} is ${show(got)}, expected ${expected}`;
}

function classify(
  received: readonly CommittedEvent[],
  index: number,
  expected: readonly CommittedEvent[],
  watch: WatchRecord,
): string {
  const got = received[index] as CommittedEvent;
  const earlier = received.slice(0, index);
  if (earlier.some((e) => same(e, got))) return 'duplicate';
  const previous = earlier[earlier.length - 1];
  if (previous !== undefined && got.revision < previous.revision) return 'out-of-order';
  if (got.revision < watch.startRevision) return 'before-start';
  const position = expected.findIndex((e) => same(e, got));
  if (position > index) return 'gap';
  if (position < 0) return matches(watch, got.key) ? 'not-committed' : 'wrong-key';
  return 'out-of-order';
}
