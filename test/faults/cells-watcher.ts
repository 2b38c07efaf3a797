// A watcher of one namespace in a fault run across cells: an SSE watch of the namespace's prefix
// from revision 1, kept for the whole run, either through the router or directly on a cell's
// members. It resumes as a client must:
// - after a `wrong_cell` end (the namespace was fenced and moved) from the end's resumeRevision,
//   on the cell the end names (directly) or through the router (which follows the map);
// - after a dropped connection (router or member killed) from the revision after the last event
//   or progress it saw, on the same cell's next member (directly) or through the router;
// - after a refusal at creation (`421 wrong_cell`: a stale router or a cell the namespace left)
//   from the same revision, on the named cell (directly) or through the router again;
// - after `compacted` (it crossed a move without the move's end, and the destination does not hold
//   the source's last events: docs/design/cells.md) by reading the namespace again (linearizable)
//   and watching from the read's revision + 1, as etcd's clients do after a compaction. The read
//   is kept as the segment's snapshot: the checker checks its values and what came after it.
// Every connection is one segment (the cell that served it, why it was opened, how it ended), and
// every event keeps the cell that delivered it, for the checker (cells-watch-check.ts).
import type { CellEvent } from './cells-watch-check.js';
import { sseData } from './sse-data.js';

export interface WatchSegment {
  /** The cell that answered (its `Baton-Cell` header). */
  cell: string;
  readonly startRevision: number;
  /** Why this connection was opened (`reread`: no connection, a read of the namespace after `compacted`). */
  readonly after: 'start' | 'wrong_cell' | 'dropped' | 'refused' | 'reread';
  /** With `reread`: the namespace as read at `revision` (each key's value), answered at `readMs` on the run's clock. */
  snapshot?: WatchSnapshot;
  readonly events: CellEvent[];
  progressRevision: number;
  end: string;
  /** When it was answered and when it ended, on the run's clock. */
  readonly openedMs: number;
  endedMs: number;
}

export interface WatchSnapshot {
  readonly revision: number;
  readonly values: ReadonlyMap<string, string>;
  readonly readMs: number;
}

/** `drop` or `dup`: the recorder loses or repeats one delivered event (the checker's teeth). */
export type WatchTeeth = 'drop' | 'dup' | 'none';

interface Batch {
  revision?: number;
  events?: { type: 'put' | 'delete'; kv: { key: string; value: string; modRevision: number } }[];
  error?: { code: string; cell?: string; resumeRevision?: number; lastRevision?: number; compactRevision?: number };
}

type Ended =
  | { type: 'wrong_cell'; cell: string; resumeRevision: number }
  | { type: 'refused'; cell: string }
  | { type: 'compacted' }
  | { type: 'dropped' };

/** The event the teeth drop or repeat: a few in, so the watch is under way across cells. */
const teethEventIndex = 7;
const attemptsMax = 20_000;
const silentMsMax = 5_000;

export class CellsWatcher {
  readonly segments: WatchSegment[] = [];
  private readonly abort = new AbortController();
  private readonly done: Promise<void>;
  private delivered = 0;
  private next = 1;
  private cell: string;
  /** Connections that failed without a segment or ended abnormally, by cause (status, silent, error). */
  private readonly failures = new Map<string, number>();
  /** Set once the watch stopped for good (out of attempts). */
  private gaveUp: string | null = null;

  constructor(
    readonly id: string,
    private readonly prefix: string,
    /** `router`: the router's URL; `direct`: each cell's client URLs by id. */
    private readonly target: { readonly router: string } | { readonly cells: (cell: string) => readonly string[] },
    firstCell: string,
    private readonly now: () => number,
    private readonly teeth: WatchTeeth = 'none',
  ) {
    this.cell = firstCell;
    this.done = this.run();
  }

  /** All events in the order they arrived, over every connection. */
  events(): CellEvent[] {
    return this.segments.flatMap((s) => s.events);
  }

  /** Whether the watch is caught up on `cell` through `revision` (its live connection says so). */
  caughtUp(cell: string, revision: number): boolean {
    const live = this.segments[this.segments.length - 1];
    return live !== undefined && live.end === 'open' && live.cell === cell && live.progressRevision >= revision;
  }

  /** Wait (bounded) until caught up on `cell` through `revision`, then stop; true if it was. */
  async finish(cell: string, revision: number, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (!this.caughtUp(cell, revision) && this.gaveUp === null && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const caught = this.caughtUp(cell, revision);
    this.abort.abort();
    await this.done;
    return caught;
  }

  /**
   * Connections that resumed on another cell than the previous one without its wrong_cell end (a
   * move completed while the watcher was disconnected): the destination has no history of the
   * namespace from before its landing, so what the source wrote between the watcher's last
   * revision and the fence cannot be delivered (docs/design/cells.md "How revisions map").
   */
  crossedMoves(): string[] {
    const out: string[] = [];
    for (let i = 1; i < this.segments.length; i++) {
      const before = this.segments[i - 1] as WatchSegment;
      const now = this.segments[i] as WatchSegment;
      if (now.cell !== before.cell && !before.end.startsWith('wrong_cell')) {
        out.push(`${before.cell} -> ${now.cell} at ${now.openedMs.toFixed(0)} ms from ${now.startRevision} (${before.cell} ended: ${before.end})`);
      }
    }
    return out;
  }

  /** `router 812 events, 9 connections (4 wrong_cell, 3 dropped, 1 refused)`. */
  describe(): string {
    const count = (after: WatchSegment['after']): number => this.segments.filter((s) => s.after === after).length;
    return `${this.id} ${this.events().length} events, ${this.segments.length} connections ` +
      `(after wrong_cell ${count('wrong_cell')}, dropped ${count('dropped')}, refused ${count('refused')}; re-read after compacted ${this.rereads()})` +
      (this.failures.size > 0 ? `; failed ${[...this.failures].map(([k, n]) => `${k}=${n}`).join(' ')}` : '') +
      (this.gaveUp !== null ? `, gave up: ${this.gaveUp}` : '');
  }

  private async run(): Promise<void> {
    let after: WatchSegment['after'] = 'start';
    for (let attempt = 0; attempt < attemptsMax && !this.abort.signal.aborted; attempt++) {
      const url = this.url(attempt);
      const segment: WatchSegment = {
        cell: '', startRevision: this.next, after, events: [], progressRevision: 0, end: 'open', openedMs: this.now(), endedMs: 0,
      };
      const ended = await this.connect(url, segment);
      segment.endedMs = this.now();
      if (this.abort.signal.aborted) return;
      if (ended.type === 'compacted') {
        // Read the namespace again and watch on from there (a failed read: the watch is asked again).
        if (!(await this.reread(this.url(attempt)))) await new Promise((resolve) => setTimeout(resolve, 100));
        after = 'reread';
        continue;
      }
      if (ended.type === 'wrong_cell') {
        this.next = ended.resumeRevision;
        if (ended.cell !== '') this.cell = ended.cell;
      } else if (ended.type === 'refused') {
        if (ended.cell !== '') this.cell = ended.cell;
      } else {
        const last = segment.events[segment.events.length - 1]?.revision ?? 0;
        this.next = Math.max(this.next, last + 1, segment.progressRevision + 1);
      }
      after = ended.type === 'wrong_cell' ? 'wrong_cell' : ended.type === 'refused' ? 'refused' : 'dropped';
      // A resume after a move goes at once; after a failure, a short pause (a member restarting).
      if (ended.type !== 'wrong_cell') await new Promise((resolve) => setTimeout(resolve, 100));
    }
    if (!this.abort.signal.aborted) this.gaveUp = 'out of attempts';
  }

  /**
   * After `compacted`: the namespace as a linearizable read sees it, kept as a segment of its own;
   * the watch goes on from its revision + 1. A refusal naming another cell moves there first.
   */
  private async reread(url: string): Promise<boolean> {
    const openedMs = this.now();
    try {
      const res = await fetch(`${url}/v1/kv${encodeURI(this.prefix)}?prefix=true&consistency=linearizable`, { signal: AbortSignal.timeout(silentMsMax) });
      const body = (await res.json()) as { revision?: number; more?: boolean; kvs?: { key: string; value: string }[]; error?: { code?: string; cell?: string } };
      if (res.status === 421 && body.error?.code === 'wrong_cell' && body.error.cell !== undefined) this.cell = body.error.cell;
      if (res.status !== 200 || body.revision === undefined || body.more === true) {
        this.failures.set(`reread ${res.status}`, (this.failures.get(`reread ${res.status}`) ?? 0) + 1);
        return false;
      }
      const cell = res.headers.get('baton-cell') ?? this.cell;
      const snapshot = { revision: body.revision, values: new Map((body.kvs ?? []).map((kv) => [kv.key, kv.value])), readMs: this.now() };
      this.segments.push({
        cell, startRevision: this.next, after: 'reread', events: [], progressRevision: body.revision, end: `read at ${body.revision}`,
        openedMs, endedMs: snapshot.readMs, snapshot,
      });
      this.cell = cell;
      this.next = body.revision + 1;
      return true;
    } catch {
      this.failures.set('reread error', (this.failures.get('reread error') ?? 0) + 1);
      return false;
    }
  }

  /** Each re-read's snapshot with the number of events delivered before it. */
  snapshots(): { afterEvents: number; snapshot: WatchSnapshot }[] {
    const out: { afterEvents: number; snapshot: WatchSnapshot }[] = [];
    let delivered = 0;
    for (const segment of this.segments) {
      if (segment.snapshot !== undefined) out.push({ afterEvents: delivered, snapshot: segment.snapshot });
      delivered += segment.events.length;
    }
    return out;
  }

  /** Segments that read the namespace again after `compacted`. */
  rereads(): number {
    return this.segments.filter((s) => s.snapshot !== undefined).length;
  }

  private url(attempt: number): string {
    if ('router' in this.target) return this.target.router;
    const urls = this.target.cells(this.cell);
    return urls[attempt % urls.length] as string;
  }

  /** One SSE connection; segments are recorded only for connections that were answered 200. */
  private async connect(url: string, segment: WatchSegment): Promise<Ended> {
    const query = `key=${encodeURIComponent(this.prefix)}&prefix=true&startRevision=${segment.startRevision}&progressMs=200`;
    // Progress comes every 200 ms: a connection silent for longer than this is stuck (its answer
    // or its stream), and is dropped and resumed like a lost one.
    const connection = new AbortController();
    const stop = (): void => connection.abort();
    this.abort.signal.addEventListener('abort', stop);
    let timer = setTimeout(stop, silentMsMax);
    const alive = (): void => {
      clearTimeout(timer);
      timer = setTimeout(stop, silentMsMax);
    };
    try {
      const res = await fetch(`${url}/v1/watch?${query}`, { signal: connection.signal });
      alive();
      if (res.status !== 200 || res.body === null) {
        const body = (await res.json().catch(() => null)) as { error?: { code?: string; cell?: string } } | null;
        if (res.status === 421 && body?.error?.code === 'wrong_cell') return { type: 'refused', cell: body.error.cell ?? '' };
        this.failures.set(`${res.status}`, (this.failures.get(`${res.status}`) ?? 0) + 1);
        return { type: 'dropped' };
      }
      segment.cell = res.headers.get('baton-cell') ?? '';
      this.segments.push(segment);
      return await this.read(res.body as AsyncIterable<Uint8Array>, segment, alive);
    } catch {
      // A killed router or member, a reset, a silent connection, or our own abort.
      const why = this.abort.signal.aborted ? null : connection.signal.aborted ? 'silent' : 'error';
      if (why !== null) this.failures.set(why, (this.failures.get(why) ?? 0) + 1);
      if (this.segments.includes(segment) && why !== null) segment.end = why === 'silent' ? 'silent' : 'dropped';
      return { type: 'dropped' };
    } finally {
      clearTimeout(timer);
      this.abort.signal.removeEventListener('abort', stop);
    }
  }

  private async read(body: AsyncIterable<Uint8Array>, live: WatchSegment, alive: () => void): Promise<Ended> {
    for await (const batch of sseData<Batch>(body, alive)) {
      if (batch.error !== undefined) return this.ended(batch.error, live);
      for (const event of batch.events ?? []) this.take(live, event);
      if (batch.revision !== undefined) live.progressRevision = Math.max(live.progressRevision, batch.revision);
    }
    if (!this.abort.signal.aborted) live.end = 'dropped';
    return { type: 'dropped' };
  }

  private ended(error: NonNullable<Batch['error']>, live: WatchSegment): Ended {
    live.end = `${error.code}${error.resumeRevision !== undefined ? ` resume ${error.resumeRevision}` : ''}${error.cell !== undefined ? ` at ${error.cell}` : ''}`;
    if (error.code === 'wrong_cell' && error.resumeRevision !== undefined) {
      return { type: 'wrong_cell', cell: error.cell ?? '', resumeRevision: error.resumeRevision };
    }
    if (error.code === 'compacted') return { type: 'compacted' };
    // unavailable (the member stops, or has no leader): resume after lastRevision like a drop.
    if (error.lastRevision !== undefined) live.progressRevision = Math.max(live.progressRevision, error.lastRevision);
    return { type: 'dropped' };
  }

  private take(live: WatchSegment, event: NonNullable<Batch['events']>[number]): void {
    const index = this.delivered++;
    const value = event.type === 'delete' ? null : event.kv.value;
    const recorded: CellEvent = { key: event.kv.key, value, revision: event.kv.modRevision, type: event.type, cell: live.cell };
    if (this.teeth === 'drop' && index === teethEventIndex) return;
    live.events.push(recorded);
    if (this.teeth === 'dup' && index === teethEventIndex) live.events.push(recorded);
  }
}

/** `cell-1 from 1 (start) 0-8410 ms: 312 events @2..640, progress 655, wrong_cell resume 656 at cell-2`. */
export function describeSegment(s: WatchSegment): string {
  const first = s.events[0]?.revision;
  const last = s.events[s.events.length - 1]?.revision;
  const events = first === undefined ? '0 events' : `${s.events.length} events @${first}..${last}`;
  return `${s.cell || '?'} from ${s.startRevision} (${s.after}) ${s.openedMs.toFixed(0)}-${s.endedMs.toFixed(0)} ms: ` +
    `${events}, progress ${s.progressRevision}, ${s.end}`;
}
