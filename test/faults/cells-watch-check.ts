// The watch checker of a fault run across cells (issue 24). A namespace's revisions are per cell:
// before a move they are the source's, after it the destination's, raised above the fence (a
// move's imports keep each key's revisions and write no history; the destination's later writes
// get revisions above the fence: docs/design/cells.md "How revisions map"). So there is no one
// committed log to compare with; the truth is the run's own history of the namespace's writes:
// - every event is a put of a value some operation on that key wrote, whose outcome was not a
//   definite refusal (`fail`, or a compare-and-set that did not succeed);
// - no value is seen twice, and revisions strictly increase along the whole watch, across moves;
// - the order respects real time: an event never follows one whose write was invoked after the
//   later event's write was acknowledged;
// - a watch complete through the end (caught up on the final owner at its final revision) holds
//   every acknowledged write, every value a read or a compare-and-set saw, and ends each key at
//   its final read value; writes of unknown outcome may be there or not, but complete watches of
//   one namespace must agree event for event, so an unknown write is in all of them or in none.
// A watcher refused `compacted` (it crossed a move without the move's end) reads the namespace
// again and watches on from the read (cells-watcher.ts). Such a watch skipped what happened
// between its last event and the read, by design: each value the read saw must be one an
// operation wrote (not refused), its events after the read follow the same rules, and, complete,
// it holds every write acknowledged and invoked after its last read, and ends each key (events
// and reads in order) at its final read value. It is left out of the event-for-event agreement.
import type { KvOperation, OperationRecord } from '../../src/check/index.js';

/** One event as a watcher recorded it, with the cell whose stream delivered it. */
export interface CellEvent {
  readonly key: string;
  readonly value: string | null;
  readonly revision: number;
  readonly type: 'put' | 'delete';
  readonly cell: string;
}

export interface NamespaceWatch {
  readonly id: string;
  /** Events of every connection of the watcher, in the order they arrived. */
  readonly events: readonly CellEvent[];
  /** Caught up on the namespace's final owner through its final revision. */
  readonly complete: boolean;
  /** Reads of the namespace after `compacted`, each after the first `afterEvents` of `events`. */
  readonly snapshots?: readonly { readonly afterEvents: number; readonly revision: number; readonly values: ReadonlyMap<string, string>; readonly readMs: number }[];
}

export interface WatchViolation {
  readonly watcher: string;
  readonly kind: 'not-written' | 'refused-write' | 'read-not-written' | 'duplicate' | 'out-of-order' | 'reorder' | 'gap' | 'final' | 'disagree';
  readonly message: string;
}

export interface NamespaceWatchReport {
  readonly violations: WatchViolation[];
  /** Events checked over all watchers. */
  readonly eventsChecked: number;
  /** Watchers complete through the end (the gap checks ran on these). */
  readonly completeWatchers: number;
  /** Of them, watchers that read the namespace again after `compacted` (checked from their last read). */
  readonly rereadWatchers: number;
}

/** Writes and observations of the namespace's keys, from the paired history. */
interface Written {
  readonly record: OperationRecord<KvOperation>;
  /** `ok`: it applied; `unknown`: it may have; `refused`: it did not. */
  readonly outcome: 'ok' | 'unknown' | 'refused';
}

const slot = (key: string, value: string | null): string => `${key}\u0000${value}`;

/**
 * `records`: the namespace's kv operations, keys as the workload names them (`a/k0`); `keyOf`
 * maps a watched key (`/faults/a/k0`) to that name, or null for a key outside the workload (the
 * setup's `ready` put), which is not checked. `finals`: each key's final linearizable read.
 */
export function checkNamespaceWatches(options: {
  readonly watches: readonly NamespaceWatch[];
  readonly records: readonly OperationRecord<KvOperation>[];
  readonly finals: ReadonlyMap<string, string | null>;
  readonly keyOf: (watchedKey: string) => string | null;
}): NamespaceWatchReport {
  const writes = new Map<string, Written>();
  const observed = new Set<string>();
  for (const record of options.records) {
    const op = record.operation;
    if (op.type === 'read') {
      if (record.status === 'ok' && record.result?.type === 'read' && record.result.value !== null) observed.add(slot(op.key, record.result.value));
      continue;
    }
    const refused = record.status === 'fail' || (record.status === 'ok' && record.result?.type === 'cas' && !record.result.succeeded);
    writes.set(slot(op.key, op.value), { record, outcome: refused ? 'refused' : record.status === 'ok' ? 'ok' : 'unknown' });
    // A compare-and-set that succeeded saw its expected value committed.
    if (op.type === 'cas' && record.status === 'ok' && record.result?.type === 'cas' && record.result.succeeded && op.expected !== null) {
      observed.add(slot(op.key, op.expected));
    }
  }
  for (const [key, value] of options.finals) if (value !== null) observed.add(slot(key, value));

  const violations: WatchViolation[] = [];
  let eventsChecked = 0;
  const sequences: { id: string; events: CellEvent[] }[] = [];
  let complete = 0;
  let reread = 0;
  for (const watch of options.watches) {
    const events = watch.events.filter((e) => options.keyOf(e.key) !== null);
    eventsChecked += events.length;
    const found = checkOne(watch.id, events, writes, options.keyOf);
    const snapshots = watch.snapshots ?? [];
    found.push(...checkSnapshots(watch.id, snapshots, writes, options.keyOf));
    violations.push(...found);
    if (!watch.complete) continue;
    complete++;
    if (snapshots.length > 0) {
      reread++;
      if (found.length === 0) violations.push(...checkCompleteAfterRead(watch, writes, options));
      continue;
    }
    sequences.push({ id: watch.id, events });
    if (found.length === 0) violations.push(...checkComplete(watch.id, events, writes, observed, options));
  }
  violations.push(...checkAgreement(sequences));
  return { violations, eventsChecked, completeWatchers: complete, rereadWatchers: reread };
}

/** Every value a re-read saw was written by an operation that was not refused. */
function checkSnapshots(
  id: string,
  snapshots: NonNullable<NamespaceWatch['snapshots']>,
  writes: ReadonlyMap<string, Written>,
  keyOf: (watchedKey: string) => string | null,
): WatchViolation[] {
  for (const [n, snapshot] of snapshots.entries()) {
    for (const [watchedKey, value] of snapshot.values) {
      const key = keyOf(watchedKey);
      if (key === null) continue;
      const written = writes.get(slot(key, value));
      if (written === undefined || written.outcome === 'refused') {
        const why = written === undefined ? 'no operation wrote it' : `its write was answered ${describe(written.record)}`;
        return [{ watcher: id, kind: 'read-not-written', message: `re-read #${n} at ${snapshot.revision}: ${watchedKey} = ${JSON.stringify(value)}: ${why}` }];
      }
    }
  }
  return [];
}

/**
 * A complete watch that read the namespace again: every write acknowledged and invoked after its
 * last read is delivered after it; each key ends, events and reads taken in order, at its final read.
 */
function checkCompleteAfterRead(
  watch: NamespaceWatch,
  writes: ReadonlyMap<string, Written>,
  options: { readonly finals: ReadonlyMap<string, string | null>; readonly keyOf: (watchedKey: string) => string | null },
): WatchViolation[] {
  const snapshots = watch.snapshots ?? [];
  const lastRead = snapshots[snapshots.length - 1] as NonNullable<NamespaceWatch['snapshots']>[number];
  const after = watch.events.slice(lastRead.afterEvents).filter((e) => options.keyOf(e.key) !== null);
  const got = new Set(after.map((e) => slot(options.keyOf(e.key) as string, e.value)));
  const owed = [...writes].filter(([s, w]) => w.outcome === 'ok' && w.record.invokeMs > lastRead.readMs && !got.has(s));
  const out: WatchViolation[] = [];
  if (owed.length > 0) {
    out.push({ watcher: watch.id, kind: 'gap', message: `${owed.length} write(s) invoked after its last re-read never delivered, first acknowledged ${describe(owed[0]![1].record)}` });
  }
  const last = new Map<string, string | null>();
  for (const [watchedKey, value] of lastRead.values) {
    const key = options.keyOf(watchedKey);
    if (key !== null) last.set(key, value);
  }
  for (const event of after) last.set(options.keyOf(event.key) as string, event.value);
  for (const [key, value] of options.finals) {
    if ((last.get(key) ?? null) !== value) {
      out.push({ watcher: watch.id, kind: 'final', message: `key ${key}: last seen ${JSON.stringify(last.get(key) ?? null)} (re-read and events), final read ${JSON.stringify(value)}` });
    }
  }
  return out;
}

/** What holds for any watch, complete or not: each event written once, in order. */
function checkOne(
  id: string,
  events: readonly CellEvent[],
  writes: ReadonlyMap<string, Written>,
  keyOf: (watchedKey: string) => string | null,
): WatchViolation[] {
  const out: WatchViolation[] = [];
  const seen = new Map<string, number>();
  // The latest invoke among the writes of earlier events: a later event's write must not have
  // been acknowledged before it (real-time order, across keys and cells).
  let latestInvoke = { ms: -Infinity, index: -1 };
  for (const [index, event] of events.entries()) {
    const key = keyOf(event.key) as string;
    const what = `event #${index} ${show(event)}`;
    const written = writes.get(slot(key, event.value));
    if (event.type !== 'put' || written === undefined) {
      out.push({ watcher: id, kind: 'not-written', message: `${what}: no operation wrote it` });
      break;
    }
    if (written.outcome === 'refused') {
      out.push({ watcher: id, kind: 'refused-write', message: `${what}: its write was answered ${describe(written.record)}` });
      break;
    }
    const before = seen.get(slot(key, event.value));
    if (before !== undefined) {
      out.push({ watcher: id, kind: 'duplicate', message: `${what}: already delivered as event #${before}` });
      break;
    }
    seen.set(slot(key, event.value), index);
    const previous = events[index - 1];
    if (previous !== undefined && event.revision <= previous.revision) {
      out.push({ watcher: id, kind: 'out-of-order', message: `${what} after #${index - 1} ${show(previous)}` });
      break;
    }
    const record = written.record;
    if (written.outcome === 'ok' && record.completeMs < latestInvoke.ms) {
      const earlier = events[latestInvoke.index] as CellEvent;
      out.push({
        watcher: id,
        kind: 'reorder',
        message: `${what}: its write was acknowledged at ${record.completeMs.toFixed(0)} ms, before the write of ` +
          `#${latestInvoke.index} ${show(earlier)} was invoked (${latestInvoke.ms.toFixed(0)} ms)`,
      });
      break;
    }
    if (record.invokeMs > latestInvoke.ms) latestInvoke = { ms: record.invokeMs, index };
  }
  return out;
}

/** For a watch complete through the end: nothing acknowledged or observed missing, finals last. */
function checkComplete(
  id: string,
  events: readonly CellEvent[],
  writes: ReadonlyMap<string, Written>,
  observed: ReadonlySet<string>,
  options: { readonly finals: ReadonlyMap<string, string | null>; readonly keyOf: (watchedKey: string) => string | null },
): WatchViolation[] {
  const got = new Set(events.map((e) => slot(options.keyOf(e.key) as string, e.value)));
  const owed = [
    ...[...writes].filter(([s, w]) => w.outcome === 'ok' && !got.has(s)).map(([, w]) => `acknowledged ${describe(w.record)}`),
    ...[...observed].filter((s) => !got.has(s)).map((s) => `observed ${s.replace('\u0000', ' = ')}`),
  ];
  const out: WatchViolation[] = [];
  if (owed.length > 0) {
    out.push({ watcher: id, kind: 'gap', message: `${owed.length} write(s) never delivered, first ${owed[0]}` });
  }
  const last = new Map<string, string | null>();
  for (const event of events) last.set(options.keyOf(event.key) as string, event.value);
  for (const [key, value] of options.finals) {
    if ((last.get(key) ?? null) !== value) {
      out.push({ watcher: id, kind: 'final', message: `key ${key}: last event ${JSON.stringify(last.get(key) ?? null)}, final read ${JSON.stringify(value)}` });
    }
  }
  return out;
}

/** Complete watches of one namespace saw one history: the same events in the same order. */
function checkAgreement(sequences: readonly { id: string; events: readonly CellEvent[] }[]): WatchViolation[] {
  const first = sequences[0];
  if (first === undefined) return [];
  const out: WatchViolation[] = [];
  for (const other of sequences.slice(1)) {
    const length = Math.max(first.events.length, other.events.length);
    for (let i = 0; i < length; i++) {
      const a = first.events[i];
      const b = other.events[i];
      if (a !== undefined && b !== undefined && a.key === b.key && a.value === b.value && a.revision === b.revision) continue;
      const shown = (e: CellEvent | undefined): string => (e === undefined ? 'nothing' : show(e));
      out.push({ watcher: other.id, kind: 'disagree', message: `event #${i} is ${shown(b)}; ${first.id} has ${shown(a)}` });
      break;
    }
  }
  return out;
}

function show(event: CellEvent): string {
  return `${event.type} ${event.key}@${event.revision} ${JSON.stringify(event.value)} (${event.cell || 'cell ?'})`;
}

function describe(record: OperationRecord<KvOperation>): string {
  const op = record.operation;
  const value = op.type === 'read' ? '' : ` ${JSON.stringify(op.value)}`;
  const status = record.status === 'ok' ? 'ok' : `${record.status} ${record.error ?? ''}`.trim();
  return `${op.type} ${op.key}${value} by p${record.process} (${status}, ${record.invokeMs.toFixed(0)}-${record.completeMs.toFixed(0)} ms)`;
}
