// The control plane's own Mover (src/control/mover.ts) in the cells world: its doors (MoverIo,
// MoverControl) implemented over the simulated cells instead of HTTP, SSE and timers. The map
// changes are the control cell's compare-and-sets, the pushes ownershipSet commands, the imports
// importKeys commands, the reads linearizable reads of a member's store, the Request-ID records the
// store's own listing. The source feed (an SSE watch in a node) is a watch on a source member's
// hub with `feed` (sim-feed.ts); without it the feed fails at once, so the mover takes its
// documented fallback, rounds of reads and a read after the fence. Not simulated: the build gate (every simulated member runs this build). The planted bugs act at these
// doors: skipFence through the tables (sim-control.ts), skipFloor by zeroing each import's floor,
// skipRestamp by proposing imports as sent, lateDedupClock by adding a minute to the clock read.
import { BatonError, UnavailableError } from '../../base/errors.js';
import type { ImportedKey } from '../../base/namespace-import.js';
import { CellRefusedError, type CellCalls, type NamespacePage, type NamespaceRead, type WireRequest } from '../../control/cell-calls.js';
import type { CellMap, MapCell } from '../../control/cell-map.js';
import { Mover, type MoverControl, type MoverFeed, type MoverIo } from '../../control/mover.js';
import type { FenceAnswer } from '../../control/control-service.js';
import type { FeedChanges } from '../../control/feed-state.js';
import { withMoveStarted, movesToDrive } from '../../control/moves.js';
import type { Random } from '../../base/random.js';
import { pick, randomInt } from '../../base/random.js';
import { fromUtf8, restampImportRequests, utf8, type MvccStore } from '../../mvcc/index.js';
import type { CellsLoop } from './cells-loop.js';
import type { SimCell } from './sim-cell.js';
import { SimSourceFeed } from './sim-feed.js';
import type { SimControl } from './sim-control.js';
import type { CellsBugs, CellsStats } from './types.js';

/** The node runs the mover's round every 100 ms on the control leader (src/node). */
const stepEveryMs = 100;
const requestPagesMax = 100;
/** The lateDedupClock bug's lateness. */
const lateClockMs = 60_000;
/** A move open this long after the last one could start is a liveness failure (the faults are over by then). */
const finishBudgetMs = 15_000;

/** Drives the real Mover: starts moves one at a time (as POST /v1/control/moves) and runs its rounds. */
export class RealMoverDriver {
  readonly windowsMs: number[] = [];
  busy = false;
  private readonly mover: Mover;
  /** Moves seen finished in the map (a lost answer can hide the mover's own report of one). */
  private readonly released = new Set<number>();
  private readonly aborted = new Set<number>();

  constructor(
    private readonly control: SimControl,
    private readonly loop: CellsLoop,
    private readonly random: Random,
    private readonly stats: CellsStats,
    bugs: CellsBugs,
    /** With a random: source feeds on the members' watch hubs (sim-feed.ts); null: none (the mover reads). */
    feedRandom: Random | null = null,
  ) {
    const io: MoverIo = {
      calls: new SimCellCalls(control, loop, bugs),
      openFeed: (source, prefix, startRevision) => {
        const cell = control.cells.get(source.id);
        return feedRandom === null || cell === undefined ? failedFeed : new SimSourceFeed(loop, cell, prefix, startRevision, feedRandom);
      },
      sleep: (ms) => loop.sleep(ms),
    };
    const log = { warn: (m: string) => loop.note(`mover: ${m}`), info: (m: string) => loop.note(`mover: ${m}`) };
    const observer = {
      window: (ms: number) => this.windowsMs.push(ms),
      left: () => {},
      finished: () => {},
    };
    // Pages of 2 keys: the simulated namespaces are small (4 keys of its clients, and lock queues),
    // and a copy or read should span pages.
    this.mover = new Mover(new SimMoverControl(control), { nowMs: () => loop.nowMs }, log, observer, async () => null, io, 2);
  }

  /** Starts a move whenever none is open, and runs the mover's rounds, until `untilMs`; then finishes the open one. */
  async run(untilMs: number): Promise<void> {
    for (;;) {
      this.count();
      const open = movesToDrive(this.control.map).length > 0;
      if (!open && this.loop.nowMs >= untilMs) return;
      if (open && this.loop.nowMs >= untilMs + finishBudgetMs) {
        const stuck = movesToDrive(this.control.map).map((m) => `${m.prefix} ${m.from}->${m.to} ${m.phase}`).join(', ');
        this.loop.report('move liveness', `${stuck}: not finished ${finishBudgetMs} ms after the moves stopped starting`);
        return;
      }
      this.busy = open;
      if (!open && randomInt(this.random, 0, 2) === 0) await this.start();
      try {
        await this.mover.step();
      } catch (error) {
        this.loop.note(`mover round: ${(error as Error).message}`);
      }
      await this.loop.sleep(stepEveryMs);
    }
  }

  private count(): void {
    for (const move of this.control.map.moves ?? []) {
      if (move.phase === 'released') this.released.add(move.id);
      if (move.phase === 'aborted') this.aborted.add(move.id);
    }
    this.stats.movesReleased = this.released.size;
    this.stats.movesAborted = this.aborted.size;
  }

  private async start(): Promise<void> {
    const moved = pick(this.random, this.control.map.namespaces.filter((n) => n.prefix !== '/'));
    const to = pick(this.random, [...this.control.cells.keys()].filter((id) => id !== moved.cell));
    try {
      await this.control.change((map) => withMoveStarted(map, moved.prefix, to, this.loop.nowMs));
      this.stats.movesStarted++;
    } catch (error) {
      this.loop.note(`move of ${moved.prefix} to ${to} not started: ${(error as Error).message}`);
    }
  }
}

/** The control service's part the mover uses, over the control cell (sim-control.ts). */
class SimMoverControl implements MoverControl {
  constructor(private readonly control: SimControl) {}

  async read(): Promise<{ map: CellMap; modRevision: number }> {
    const read = await this.control.read();
    if (read === null) throw new UnavailableError('the control cell served no read');
    return read;
  }

  localMap(): CellMap {
    return this.control.map;
  }

  async change(_principal: string, change: (map: CellMap) => CellMap): Promise<CellMap> {
    return (await this.changeFrom(_principal, null, change)).map;
  }

  async changeFrom(_principal: string, known: { map: CellMap; modRevision: number } | null, change: (map: CellMap) => CellMap): Promise<{ map: CellMap; modRevision: number }> {
    return this.control.changeOnce(known, change);
  }

  async pushOne(map: CellMap, cellId: string, _leaderFirst?: MapCell, landed?: string): Promise<boolean> {
    try {
      return (await this.control.pushOnce(map, cellId, landed)) !== null;
    } catch {
      return false;
    }
  }

  async pushFence(map: CellMap, cell: MapCell, requestsOf: { prefix: string; sinceMs: number }): Promise<FenceAnswer | null> {
    try {
      const revision = await this.control.push(map, cell.id);
      if (revision === null) return null;
      // The cell held a newer table (as the HTTP push's 412): the records are read after it.
      if (revision === 'newer') return { requests: null, revision: null };
      // Where a watch of the prefix ends on the source now (a node answers it from the member that applied the push).
      const watchFence = await this.control.cells.get(cell.id)?.readStore((store) => store.watchBounds({ key: requestsOf.prefix, prefix: true }).fence?.revision ?? null);
      return { requests: null, revision, ...(typeof watchFence === 'number' ? { watchFence } : {}) };
    } catch {
      return null;
    }
  }
}

/** The cells' API as the mover calls it, over the simulated cells. */
class SimCellCalls implements CellCalls {
  constructor(private readonly control: SimControl, private readonly loop: CellsLoop, private readonly bugs: CellsBugs) {}

  private cell(cell: MapCell): SimCell {
    const found = this.control.cells.get(cell.id);
    if (found === undefined) throw new Error(`no cell ${cell.id}`);
    return found;
  }

  async readNamespace(cell: MapCell, prefix: string, nested: readonly string[] = []): Promise<NamespaceRead> {
    const read = await this.cell(cell).readNamespace(prefix, nested);
    if (read === null) throw new UnavailableError(`cell ${cell.id} served no read of ${prefix}`, { cell: cell.id });
    return { revision: read.revision, kvs: read.kvs.map((kv): ImportedKey => ({ ...kv })) };
  }

  /** As the node's paged read: its own linearizable read per page, so pages are read at different revisions. */
  async readNamespacePage(cell: MapCell, prefix: string, nested: readonly string[], after: string | null, limit: number): Promise<NamespacePage> {
    const read = await this.cell(cell).readNamespace(prefix, nested);
    if (read === null) throw new UnavailableError(`cell ${cell.id} served no read of ${prefix}`, { cell: cell.id });
    const from = after === null ? null : Buffer.from(after, 'utf8');
    const following = from === null ? read.kvs : read.kvs.filter((kv) => Buffer.compare(Buffer.from(kv.key, 'utf8'), from) > 0);
    return { revision: read.revision, more: following.length > limit, kvs: following.slice(0, limit).map((kv): ImportedKey => ({ ...kv })) };
  }

  async readLease(cell: MapCell, id: number): Promise<{ id: number; ttlMs: number; remainingMs: number; origin: string } | null> {
    const lease = await this.cell(cell).readStore((store) => store.lease(id));
    if (lease === undefined) throw new UnavailableError(`cell ${cell.id} served no read of lease ${id}`);
    return lease === null ? null : { id, ttlMs: lease.ttlMs, remainingMs: Math.max(1, lease.remainingMs), origin: cell.id };
  }

  async sendImport(cell: MapCell, sent: Uint8Array): Promise<{ imported: number; revision: number }> {
    const bytes = this.bugs.skipFloor === true ? utf8(JSON.stringify({ ...(JSON.parse(fromUtf8(sent)) as object), floor: 0, fence: undefined })) : sent;
    // As a node's import route does: the member taking it re-stamps its Request-ID records into its dedup clock.
    const restamp = (store: MvccStore) => (this.bugs.skipRestamp === true ? bytes : restampImportRequests(bytes, store.dedupClockMs()));
    const answer = await this.cell(cell).propose((store) => ({ type: 'importKeys', record: restamp(store) }), undefined);
    if (answer.kind === 'applied' && answer.outcome.result.type === 'importKeys') {
      return { imported: answer.outcome.result.imported, revision: answer.outcome.result.revision };
    }
    if (answer.kind === 'refused') throw refusal(cell.id, answer.error);
    throw new UnavailableError(`cell ${cell.id}: import ${answer.kind}`, { cell: cell.id });
  }

  async leaderFirst(cell: MapCell): Promise<MapCell> {
    return cell; // a simulated call goes to the leader when one is known
  }

  async readNamespaceRequests(cell: MapCell, prefix: string, sinceMs: number): Promise<WireRequest[]> {
    const all = await this.cell(cell).readStore((store) => {
      const requests: WireRequest[] = [];
      let after: Uint8Array | null = null;
      for (let page = 0; page < requestPagesMax; page++) {
        const read = store.namespaceRequests(prefix, { sinceMs, after, scanMax: 10_000 });
        for (const r of read.requests) requests.push({ id: Buffer.from(r.id).toString('base64'), record: Buffer.from(r.record).toString('base64'), stampMs: r.stampMs, ageMs: r.ageMs });
        if (read.next === null) return requests;
        after = read.next;
      }
      throw new UnavailableError(`the dedup records of ${prefix} did not end in ${requestPagesMax} pages`);
    });
    if (all === undefined) throw new UnavailableError(`cell ${cell.id} served no read of ${prefix}'s requests`);
    return all;
  }

  async readOwnershipTable(cell: MapCell): ReturnType<CellCalls['readOwnershipTable']> {
    const table = await this.cell(cell).readStore((store) => store.ownership()?.table ?? null);
    if (table === undefined) throw new UnavailableError(`cell ${cell.id} served no read of its table`);
    return table as Awaited<ReturnType<CellCalls['readOwnershipTable']>>;
  }

  async readDedupClock(cell: MapCell): Promise<number | null> {
    const clockMs = await this.cell(cell).readStore((store) => store.dedupClockMs());
    if (clockMs === undefined) throw new UnavailableError(`cell ${cell.id} served no read of its dedup clock`);
    return this.bugs.lateDedupClock === true ? clockMs + lateClockMs : clockMs;
  }
}

/** A cell's definite refusal as the HTTP edge reports it (a 4xx but 429 is final). */
function refusal(cellId: string, error: BatonError): Error {
  const status = ({ wrong_cell: 421, precondition_failed: 412, invalid_argument: 400, cross_cell: 400, too_large: 413 } as Record<string, number>)[error.code];
  if (status === undefined) return new UnavailableError(`cell ${cellId}: ${error.message}`, { cell: cellId });
  return new CellRefusedError(cellId, status, error.code, error.message);
}

/** The simulator has no SSE feed: it fails at once and the mover catches up by reads. */
const failedFeed: MoverFeed = {
  failed: 'no source feed in the simulator',
  fenceRevision: null,
  live: false,
  wait: async () => {},
  take: (): FeedChanges => ({ changes: new Map(), through: 0 }),
  untilFenced: async () => false,
  close: () => {},
};
