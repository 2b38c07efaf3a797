// Drives namespace moves (docs/design/cells.md, "Moving a namespace") on the control cell's
// leader. Each step reads the durable move record (moves.ts, in the cell map), acts, and records
// the next phase with a compare-and-set, so a new leader resumes from the record's phase; every
// action is idempotent (an import of the same keys writes the same records, tables only move
// forward). What a leader keeps in memory (the keys copied so far) only saves work: without it,
// a phase re-reads and re-imports the whole namespace.
//
//   copying      read the namespace on the source at revision r0 (one read view), import it on the
//                destination (first batch clears the range there), floor r0
//   catching-up  a watch of the namespace on the source streams its changes to the destination
//                (or rounds of reads), until few changes are left; it fences only while every
//                member of both cells runs a build with landing imports (member-builds.ts), and
//                else waits here (the record's `blocked` says why)
//   fenced       the source holds a table fencing the namespace (a committed ownershipSet): from
//                then on it refuses writes to it. Once it applied there, the flip (one
//                compare-and-set) runs while the last changes are gathered (the watch ends at
//                the fence: rf); the landing import then brings them to the destination with
//                floor rf and its table giving it the namespace, in one command (the window's end)
//   flipped      the namespace is the destination's in the map; the destination holds it landing
//                (refused) until the landing import; a new leader reads the fenced source again
//   released     the destination took it; the source's copy is removed (an import with `clear`)
//   aborted      before the flip only: the source is unfenced, the destination's copy removed
import { encodeImportRecord, importKeysPerCommandMax, type ImportedKey as KeyValue, type ImportLease } from '../base/namespace-import.js';
import { nestedIn, ownershipTableOf, type CellMap, type MapCell } from './cell-map.js';
import { isOwnKey } from '../base/namespaces.js';
import { CellRefusedError, httpCellCalls, type CellCalls, type NamespacePage, type NamespaceRead, type WireRequest } from './cell-calls.js';
import type { ControlService, FenceAnswer } from './control-service.js';
import { SourceFeed, type FeedChanges } from './source-feed.js';
import { LeaseFollowers } from './lease-followers.js';
import { movesToDrive, withMoveAborted, withMoveAdvanced, withMoveBlocked, withMoveCleaned, type MovePhase, type MoveRecord } from './moves.js';
import { buildsProblem, cellBuilds, protocolNeeded } from './member-builds.js';
import type { BatonError } from '../base/errors.js';

/** The control cell acts as root on its own work. */
const moverPrincipal = 'root';
/** Catch-up rounds before fencing anyway, and the change count under which it fences at once. */
const catchUpRoundsMax = 8;
const catchUpSmallEnough = 64;
/** Streaming catch-up: how long it may take before fencing anyway, and how often it imports. */
const streamCatchUpMs = 10_000;
const streamImportEveryMs = 25;
/** After the fence: how long the source's watch may take to end at it before a full read instead. */
const feedFenceWaitMs = 2_000;
/**
 * Dedup records are listed by stamp, and a record's stamp is the source's replicated dedup clock
 * when it applied (src/mvcc/dedup.ts), which only moves forward: every record applied after a
 * listing is stamped at or above the newest stamp that listing returned. So each later listing
 * starts at that stamp (inclusive: records of the same stamp are filtered by id), and the fence's
 * answer carries only the records of the last moments, not seconds of them
 * (namespace-requests.test.ts shows a late-proposed record listed this way).
 */
const requestsPerImport = 1_000;
/** Catch-up rounds of Request-ID records before fencing anyway, and the count under which it fences. */
const requestRoundsMax = 5;
const requestsSmallEnough = 256;
/**
 * Keys per page of a namespace read: a page is one import (importKeysPerCommandMax) and, at a few
 * hundred bytes a key, well under a request's size; a namespace of a million keys is a thousand
 * pages, none of which holds the source's event loop long (one answer used to hold all of them).
 */
const namespacePageKeys = importKeysPerCommandMax;
/** Import records stay well under a request's size (src/base/limits.ts). */
const importBatchBytes = 768 * 1024;
const pushRetryMs = 20;
/** How often a move waiting for its members' builds looks again. */
const buildsRecheckMs = 1_000;
const pushWaitMs = 10_000;

interface Progress {
  /** Key -> modRevision as imported on the destination (for the next round's difference). */
  readonly copied: Map<string, number>;
  /** The source revision everything imported so far is complete through. */
  through: number;
  /** The source's changes streamed since `through` (a watch), while catching up. */
  feed?: MoverFeed;
  /** Request-IDs whose dedup records were copied, and the newest stamp among them. */
  readonly requestIds: Set<string>;
  requestsStampMs: number;
  /** When the fence was asked for (the window's start: an upper bound of when writes stopped). */
  fenceStartMs?: number;
  windowMs?: number;
  windowParts?: WindowParts;
  /** The landing import applied (this leader saw it answered): the flipped phase has nothing to redo. */
  landed?: boolean;
  /** The build gate said no: when to look again (member-builds.ts). */
  buildsRecheckAtMs?: number;
}

/** Where the write window's time went, ms (the move record's windowParts). */
export type WindowParts = {
  /** The fence pushed to the source until it applied there. */
  readonly fence: number;
  /** The changes after the last import gathered (the feed's end, or a full read). */
  readonly lastChanges: number;
  /** The control plane's compare-and-set assigning the namespace to the destination, what of it was left (it starts at the fence's apply). */
  readonly flip: number;
  /** The landing import applied on the destination: the last changes, the floor and its table (it takes writes from then on). */
  readonly destinationTable: number;
};

/** What the mover reports as it goes (the node turns it into metrics: src/node/move-metrics.ts). */
export interface MoveObserver {
  window(ms: number, parts: WindowParts): void;
  /** A move left `phase` after `ms` in it. */
  left(phase: MovePhase, ms: number): void;
  finished(outcome: 'released' | 'aborted'): void;
}

const quietObserver: MoveObserver = { window: () => {}, left: () => {}, finished: () => {} };

export interface MoverClock {
  nowMs(): number;
}

/** What the mover asks of the control plane (ControlService in a node). */
export type MoverControl = Pick<ControlService, 'read' | 'localMap' | 'change' | 'changeFrom' | 'pushOne' | 'pushFence'>;

/** A source's changes of a namespace from a revision on (SourceFeed: an SSE watch in a node). */
export type MoverFeed = Pick<SourceFeed, 'wait' | 'take' | 'live' | 'failed' | 'fenceRevision' | 'untilFenced' | 'close'>;

/**
 * The mover's doors to the world: the cells' API, the source feeds, and its pauses. A node uses
 * HTTP, SSE and timers (httpMoverIo); the simulator's cells world passes its own, on simulated time.
 */
export interface MoverIo {
  readonly calls: CellCalls;
  openFeed(source: MapCell, prefix: string, startRevision: number): MoverFeed;
  sleep(ms: number): Promise<void>;
}

export const httpMoverIo: MoverIo = {
  calls: httpCellCalls,
  openFeed: (source, prefix, startRevision) => new SourceFeed(source, prefix, startRevision),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

export class Mover {
  private readonly progress = new Map<number, Progress>();
  /**
   * The namespaces nested in each moving one, from the map the step acts on. Their keys are theirs
   * and stay where they are: every read, import and clear of the move leaves them out. None can be
   * created or moved while the move is open (cell-map.ts), so the list holds for the whole move.
   */
  private readonly nestedOf = new Map<string, readonly string[]>();
  /** Figures of finished moves (this leader's): fence -> destination table, ms. */
  readonly windows: number[] = [];

  constructor(
    private readonly control: MoverControl,
    private readonly clock: MoverClock = { nowMs: () => Date.now() },
    private readonly log: { warn(message: string): void; info(message: string): void } = { warn: () => {}, info: () => {} },
    private readonly observer: MoveObserver = quietObserver,
    /** The build gate before the fence (member-builds.ts); null: it may fence. */
    private readonly buildsCheck: (cells: readonly MapCell[], needed: number) => Promise<BatonError | null> =
      async (cells, needed) => buildsProblem(await Promise.all(cells.map(cellBuilds)), 'allow', needed),
    private readonly io: MoverIo = httpMoverIo,
    /** Keys per page of a namespace read (the simulator reads small namespaces in many pages). */
    private readonly pageKeys = namespacePageKeys,
  ) {
    this.leaseFollowers = new LeaseFollowers(control, clock, log, io.calls);
  }

  /** Renewals of moved keys' leases, carried from source to destination (lease-followers.ts). */
  readonly leaseFollowers: LeaseFollowers;

  /** One round: drives every move with work left as far as it goes now. */
  async step(): Promise<void> {
    if (movesToDrive(this.control.localMap()).length === 0) return;
    const { map } = await this.control.read(moverPrincipal);
    for (const move of movesToDrive(map)) {
      try {
        await this.drive(move.id);
      } catch (error) {
        this.log.warn(`move ${move.id} of ${move.prefix}: ${(error as Error).message}`);
        if (error instanceof CellRefusedError) await this.abortAfterRefusal(move, error);
      }
    }
  }

  private async drive(id: number): Promise<void> {
    for (let steps = 0; steps < 8; steps++) {
      const known = await this.control.read(moverPrincipal);
      const move = (known.map.moves ?? []).find((m) => m.id === id);
      if (move === undefined) return;
      const done = await this.act(known, move);
      if (done) return;
    }
  }

  /** Does the record's phase; true when nothing more is to be done for it now. */
  private async act(known: { map: CellMap; modRevision: number }, move: MoveRecord): Promise<boolean> {
    const map = known.map;
    this.nestedOf.set(move.prefix, nestedIn(map, move.prefix));
    let source = cellOf(map, move.from);
    let destination = cellOf(map, move.to);
    switch (move.phase) {
      case 'copying': {
        const progress = await this.copy(source, destination, move, map.epoch);
        this.forget(move.id);
        this.progress.set(move.id, progress);
        await this.advance(move, 'copying', { copyRevision: progress.through });
        return false;
      }
      case 'catching-up': {
        // Leaders first, for the window's proposals and the feed (learnt before the window).
        [source, destination] = await Promise.all([this.io.calls.leaderFirst(source), this.io.calls.leaderFirst(destination)]);
        const progress = await this.progressOf(move, source, destination, map.epoch);
        // Keys and Request-ID records are caught up together, in rounds, until both are few: the
        // fence's answer then carries only the records stamped since the last round, and the
        // landing only the keys changed since. One round was not enough: the first listing holds
        // every record of the dedup window (10 minutes of writes: ~100,000 after 2 minutes at
        // 1,000 writes/s), so it took seconds, and what was written meanwhile rode in the window
        // (move bench, 40 moves: records in the fence's answer grew from ~300 to ~9,800 as the
        // dedup window filled, windows p50 321 / max 987 ms; in rounds: ~130, p50 118 / max 218
        // ms). Not while the record changes: an import sent while the
        // map's epoch moves is refused stale at the destination (tried: 14 stale refusals in 24
        // moves, the landings grew move after move).
        for (let round = 1; ; round++) {
          if (!(await this.stream(move, source, destination, progress, map.epoch))) {
            for (let readRound = 0; readRound < catchUpRoundsMax; readRound++) {
              const changed = await this.catchUp(move, source, destination, progress, map.epoch);
              if (changed <= catchUpSmallEnough) break;
            }
          }
          const fresh = await this.newRequests(source, move.prefix, progress);
          await this.sendRequests(destination, move.prefix, fresh, progress, map.epoch);
          if (fresh.length <= requestsSmallEnough || round >= requestRoundsMax) break;
        }
        // No fence while a member of either cell runs a build without landing imports (replaced
        // since the start): the move waits here, the source writable, the catch-up going on.
        if (!(await this.buildsAllowFence(move, progress, source, destination))) return true;
        // The destination's dedup clock before the fence: every record of the namespace it stamps
        // later is listed by a move back (the flip keeps it in the namespace's entry; cell-map.ts).
        const clockMs = await this.io.calls.readDedupClock(destination);
        const clock = clockMs === null ? {} : { destinationClockMs: clockMs };
        const fenced = await this.control.changeFrom(moverPrincipal, known, (current) => withMoveAdvanced(current, move.id, 'catching-up', clock, this.clock.nowMs()));
        this.left(move, 'catching-up');
        await this.fenceAndFlip(fenced, move, source, destination, progress);
        return false;
      }
      case 'fenced': {
        // A new leader resuming a fence: an older member found now aborts it (waiting here would
        // keep the namespace unwritable; the abort unfences the source).
        const problem = await this.buildsCheck([source, destination], protocolNeeded(this.nested(move.prefix)));
        if (problem !== null) {
          this.log.warn(`move ${move.id} of ${move.prefix}: aborted before its flip: ${problem.message}`);
          await this.control.change(moverPrincipal, (current) => withMoveAborted(current, move.prefix, problem.message, this.clock.nowMs()));
          return false;
        }
        const progress = await this.progressOf(move, source, destination, map.epoch);
        await this.fenceAndFlip(known, move, source, destination, progress);
        return false;
      }
      case 'flipped': {
        // The window ended unfinished here (an import failed, or a new leader): the source is
        // fenced by the flip's table, so a read of it now holds every change it accepted.
        if (this.progress.get(move.id)?.landed !== true) {
          await this.pushUntil(map, move.from);
          if (!(await this.landed(destination, map, move.prefix))) await this.landByRead(move, map, source, destination);
        }
        const done = this.progress.get(move.id);
        await this.advance(move, 'flipped', done?.windowMs === undefined ? {} : { windowMs: done.windowMs, ...(done.windowParts === undefined ? {} : { windowParts: done.windowParts }) });
        return false;
      }
      case 'released': {
        if (move.cleaned !== false) return true;
        await this.pushUntil(map, move.from); // the source no longer owns it, so it may be cleared
        await this.io.calls.sendImport(source, encodeImportRecord({ prefix: move.prefix, clear: true, floor: 0, puts: [], deletes: [], leases: [], ...this.excluding(move.prefix) }));
        await this.control.change(moverPrincipal, (current) => withMoveCleaned(current, move.id, this.clock.nowMs()));
        this.observer.finished('released');
        this.forget(move.id);
        return true;
      }
      case 'aborted': {
        this.leaseFollowers.forget(move.prefix, move.to);
        await this.pushUntil(map, move.from); // unfenced
        await this.io.calls.sendImport(destination, encodeImportRecord({ prefix: move.prefix, clear: true, floor: 0, puts: [], deletes: [], leases: [], ...this.excluding(move.prefix) }));
        await this.control.change(moverPrincipal, (current) => withMoveCleaned(current, move.id, this.clock.nowMs()));
        this.observer.finished('aborted');
        this.forget(move.id);
        return true;
      }
    }
  }

  /**
   * The write window, kept short: the fence reaches the source (a committed ownershipSet there;
   * the destination takes the same table meanwhile, off the critical path). From its apply the
   * flip (a compare-and-set from the map just written: no read) runs while the last changes are
   * gathered: the source's watch of the namespace ends at the fence, so the feed holds them (a
   * full read only if the feed failed). Then one command on the destination, the landing import:
   * the last changes, the floor, and its table giving it the namespace.
   */
  private async fenceAndFlip(
    fenced: { map: CellMap; modRevision: number }, move: MoveRecord, source: MapCell, destination: MapCell, progress: Progress,
  ): Promise<void> {
    progress.fenceStartMs ??= this.clock.nowMs();
    const steps: number[] = [this.clock.nowMs()];
    // The destination takes the fence's epoch too: from then on it refuses imports of older epochs
    // (a deposed leader's late ones). Not awaited: the landing (a newer epoch, and the namespace
    // owned from its entry on) refuses them as well, so whichever applies first ends that risk.
    const destinationFenced = this.pushUntil(fenced.map, move.to, destination);
    destinationFenced.catch(() => {});
    // The fence's answer carries the namespace's Request-ID records as of its apply (no read in
    // the window); if not (another push was first, or too many), they are read after it.
    const fence = await this.control.pushFence(fenced.map, source, { prefix: move.prefix, sinceMs: this.requestsSince(progress) });
    if (fence === null) await this.pushUntil(fenced.map, move.from, source);
    steps.push(this.clock.nowMs());
    // Where the window's time goes after the fence (the log line): each wait's end, from the fence applied.
    const marks: string[] = [];
    const mark = (what: string) => () => marks.push(`${what} ${this.clock.nowMs() - (steps[1] as number)}`);
    // The flip needs only the fence applied (the commit point: from it the move only rolls forward,
    // and the destination takes writes only with the landing, after it). The answer's revision is
    // the fence's (or above it, had another push fenced first): the record's fence revision.
    const flip = (fenceRevision: number): Promise<{ map: CellMap; modRevision: number }> => {
      const flipping = this.control.changeFrom(moverPrincipal, fenced, (current) => withMoveAdvanced(current, move.id, 'fenced', { fenceRevision }, this.clock.nowMs()));
      flipping.then(mark('flipped'), () => {});
      return flipping;
    };
    let flipping = typeof fence?.revision === 'number' ? flip(fence.revision) : null;
    flipping?.catch(() => {});
    const answered = fence?.requests ?? null;
    const lateRequests = answered !== null
      ? Promise.resolve((answered as WireRequest[]).filter((r) => !progress.requestIds.has(r.id)))
      : this.newRequests(source, move.prefix, progress);
    lateRequests.catch(() => {});
    lateRequests.then(mark('requests read'), () => {});
    destinationFenced.then(mark('destination fenced'), () => {});
    let fenceRevision: number;
    let last: { puts: KeyValue[]; deletes: string[] };
    const feed = progress.feed;
    let fromFeed = false;
    if (feed !== undefined && (await feed.untilFenced(feedFenceWaitMs)) && this.endedAtFence(move, feed, fence)) {
      // Every change the source accepted for the namespace is at or below the fence the watch ended at.
      fenceRevision = feed.fenceRevision as number;
      mark('feed ended')();
      last = this.changesOf(move.prefix, feed.take(), progress);
      fromFeed = true;
    } else {
      if (feed !== undefined && feed.fenceRevision === null) this.log.warn(`move ${move.id} of ${move.prefix}: the source's feed did not end at the fence (${feed.failed ?? 'timed out'}): reading the namespace instead`);
      feed?.close();
      progress.feed = undefined;
      // Read after the fence applied: every write the source accepted for the namespace is in it
      // (and no page differs from another: nothing is written there any more).
      const read = await this.readWhole(source, move.prefix);
      fenceRevision = read.revision;
      last = this.differenceOf(read, progress);
    }
    steps.push(this.clock.nowMs());
    flipping ??= flip(fenceRevision);
    const flipAndLand = async (): Promise<{ map: CellMap; modRevision: number }> => {
      const flipped = await flipping;
      this.observer.left('fenced', this.clock.nowMs() - (steps[0] as number));
      steps.push(this.clock.nowMs());
      const recorded = flipped.map.moves?.find((m) => m.id === move.id)?.fenceRevision ?? fenceRevision;
      const requests = await this.sendRequests(destination, move.prefix, await lateRequests, progress, flipped.map.epoch, requestsPerImport);
      await this.importAll(source, destination, move.prefix, last.puts, last.deletes, false, Math.max(fenceRevision, recorded), progress, flipped.map.epoch, requests, landingTable(flipped.map, move), recorded);
      return flipped;
    };
    // Changes taken from the feed left it: if the flip or the landing fails, the next attempt
    // reads the fenced source instead (the cells simulator with --feed, seed 29090: a flip whose
    // compare-and-set was lost, retried with the feed's last changes gone, landed without them).
    const flipped = await (fromFeed ? this.importFromFeed(progress, flipAndLand) : flipAndLand());
    progress.landed = true;
    steps.push(this.clock.nowMs());
    // The source stops serving reads of it now (they would miss the destination's writes), not
    // only with the release's table. Best effort: the release's table does it anyway.
    this.control.pushOne(flipped.map, move.from, source, move.prefix).catch(() => {});
    const split = steps.slice(1).map((t, i) => t - (steps[i] as number)) as [number, number, number, number];
    const windowMs = this.clock.nowMs() - progress.fenceStartMs;
    progress.windowMs = windowMs;
    progress.windowParts = { fence: split[0], lastChanges: split[1], flip: split[2], destinationTable: split[3] };
    this.observer.window(windowMs, progress.windowParts);
    this.windows.push(windowMs);
    if (this.windows.length > 1_000) this.windows.shift();
    this.log.info(`move ${move.id} of ${move.prefix} flipped to ${move.to}: writes paused at most ${windowMs} ms `
      + `(fence ${split[0]}${fence?.timing === undefined ? '' : ` [${fence.timing}]`}, last changes ${split[1]} [${marks.join(', ')}], flip ${split[2]}, destination table ${split[3]} ms), fence revision ${flipped.map.moves?.find((m) => m.id === move.id)?.fenceRevision ?? fenceRevision}`);
  }

  /**
   * The build gate before the fence (member-builds.ts), looked at once per buildsRecheckMs while
   * it says no; the reason goes into the move record (`blocked`) and the log once per change.
   */
  private async buildsAllowFence(move: MoveRecord, progress: Progress, source: MapCell, destination: MapCell): Promise<boolean> {
    const now = this.clock.nowMs();
    if (progress.buildsRecheckAtMs !== undefined && now < progress.buildsRecheckAtMs) return false;
    const problem = await this.buildsCheck([source, destination], protocolNeeded(this.nested(move.prefix)));
    if (problem === null) {
      progress.buildsRecheckAtMs = undefined;
      return true;
    }
    progress.buildsRecheckAtMs = now + buildsRecheckMs;
    if (move.blocked !== problem.message) {
      this.log.warn(`move ${move.id} of ${move.prefix}: waiting before the fence: ${problem.message}`);
      await this.control.change(moverPrincipal, (current) => withMoveBlocked(current, move.id, 'catching-up', problem.message));
    }
    return false;
  }

  /** Whether the destination took the namespace (its landing applied): its table owns it, not landing. */
  private async landed(destination: MapCell, map: CellMap, prefix: string): Promise<boolean> {
    const assigned = map.namespaces.find((n) => n.prefix === prefix);
    const table = await this.io.calls.readOwnershipTable(destination);
    const entry = table?.namespaces.find((n) => n.prefix === prefix);
    return assigned !== undefined && entry !== undefined && table !== null && table.cell === destination.id && entry.cell === destination.id
      && entry.landingFrom === undefined && entry.epoch >= assigned.epoch;
  }

  /** The landing after the window was left unfinished: the fenced source read again, the difference landed. */
  private async landByRead(move: MoveRecord, map: CellMap, source: MapCell, destination: MapCell): Promise<void> {
    const known = this.progress.get(move.id);
    known?.feed?.close();
    if (known !== undefined) known.feed = undefined;
    const progress: Progress = known ?? freshProgress(move);
    const read = await this.readWhole(source, move.prefix); // fenced: every page at the same state
    const requests = await this.sendRequests(destination, move.prefix, await this.newRequests(source, move.prefix, progress), progress, map.epoch, requestsPerImport);
    const floor = Math.max(read.revision, move.fenceRevision ?? 0);
    if (known === undefined) {
      // Nothing known of what the destination holds: the whole namespace, clearing it first.
      await this.importAll(source, destination, move.prefix, read.kvs, [], true, floor, progress, map.epoch, requests, landingTable(map, move), move.fenceRevision);
    } else {
      const last = this.differenceOf(read, known);
      await this.importAll(source, destination, move.prefix, last.puts, last.deletes, false, floor, progress, map.epoch, requests, landingTable(map, move), move.fenceRevision);
    }
    this.progress.set(move.id, progress);
    this.log.info(`move ${move.id} of ${move.prefix}: landed on ${move.to} from a read of the fenced source at revision ${read.revision}`);
  }

  /**
   * Whether the feed's end is this move's fence: the revision a watch of the prefix ends at on the
   * source as its answer to the fence says. A member behind its cell replays older tables, and its
   * hub ends the same watch at the fence of whatever they took away (an earlier move of the
   * namespace, a nested namespace of another cell) with none of the later changes in it (the
   * cells simulator with --feed --nested, seed 29904: ended at 4, the fence was at 119). Not
   * known (no answer, an older source): not trusted; the fenced source is read instead.
   */
  private endedAtFence(move: MoveRecord, feed: MoverFeed, fence: FenceAnswer | null): boolean {
    if (fence?.watchFence !== undefined && feed.fenceRevision === fence.watchFence) return true;
    this.log.warn(`move ${move.id} of ${move.prefix}: the source's feed ended at revision ${feed.fenceRevision}, `
      + `the fence is at ${fence?.watchFence ?? 'a revision not answered'}: reading the namespace instead`);
    return false;
  }

  /**
   * A feed's changes as an import: puts, and deletes of keys the destination holds. The watch of
   * the prefix sees the writes of namespaces nested in it on the source too: those are left out.
   */
  private changesOf(prefix: string, taken: FeedChanges, progress: Progress): { puts: KeyValue[]; deletes: string[] } {
    const puts: KeyValue[] = [];
    const deletes: string[] = [];
    const nested = this.nested(prefix);
    for (const [key, kv] of taken.changes) {
      if (nested.length > 0 && !isOwnKey(prefix, nested, key)) continue;
      if (kv !== null) puts.push(kv);
      else if (progress.copied.has(key)) deletes.push(key);
    }
    return { puts, deletes };
  }

  /** What a read of the namespace holds that the destination does not (by modRevision), and what it lost. */
  private differenceOf(read: NamespaceRead, progress: Progress): { puts: KeyValue[]; deletes: string[] } {
    const present = new Set<string>();
    const puts: KeyValue[] = [];
    for (const kv of read.kvs) {
      present.add(kv.key);
      if (progress.copied.get(kv.key) !== kv.modRevision) puts.push(kv);
    }
    return { puts, deletes: [...progress.copied.keys()].filter((key) => !present.has(key)) };
  }

  /**
   * Streams the source's changes to the destination until the feed is live and what is left is
   * small (then the fence), bounded in time. False: the feed failed (the caller reads instead).
   */
  private async stream(move: MoveRecord, source: MapCell, destination: MapCell, progress: Progress, epoch: number): Promise<boolean> {
    progress.feed ??= this.io.openFeed(source, move.prefix, progress.through + 1);
    const feed = progress.feed;
    const until = this.clock.nowMs() + streamCatchUpMs;
    for (;;) {
      await feed.wait(streamImportEveryMs);
      if (feed.failed !== null || feed.fenceRevision !== null) break;
      const live = feed.live;
      const taken = feed.take();
      if (taken.changes.size > 0) await this.importFromFeed(progress, () => this.importChanges(source, destination, move.prefix, taken, taken.through, progress, epoch));
      if ((live && taken.changes.size < catchUpSmallEnough) || this.clock.nowMs() > until) return true;
    }
    if (feed.fenceRevision !== null) return true; // fenced already (a retried step): the window takes the rest
    this.log.warn(`move ${move.id} of ${move.prefix}: the source's feed failed (${feed.failed}): catching up by reads`);
    feed.close();
    progress.feed = undefined;
    return false;
  }

  /** Imports what a feed gathered (puts; deletes of keys the destination holds), floor `floor`. */
  private async importChanges(
    source: MapCell, destination: MapCell, prefix: string, taken: FeedChanges, floor: number, progress: Progress, epoch: number,
  ): Promise<void> {
    const { puts, deletes } = this.changesOf(prefix, taken, progress);
    await this.importAll(source, destination, prefix, puts, deletes, false, floor, progress, epoch);
  }

  /** The namespace's Request-ID records on the source not copied yet (from the newest stamp copied). */
  private async newRequests(source: MapCell, prefix: string, progress: Progress): Promise<WireRequest[]> {
    return (await this.io.calls.readNamespaceRequests(source, prefix, this.requestsSince(progress))).filter((r) => !progress.requestIds.has(r.id));
  }

  private requestsSince(progress: Progress): number {
    return Math.max(0, progress.requestsStampMs);
  }

  /**
   * Sends Request-ID records to the destination in imports of their own, all but the last
   * `keep` (returned: they ride with the next import of keys).
   */
  private async sendRequests(destination: MapCell, prefix: string, requests: readonly WireRequest[], progress: Progress, epoch: number, keep = 0): Promise<WireRequest[]> {
    const kept = keep > 0 ? requests.slice(Math.max(0, requests.length - keep)) : [];
    const sending = requests.slice(0, requests.length - kept.length);
    for (let i = 0; i < sending.length; i += requestsPerImport) {
      const batch = sending.slice(i, i + requestsPerImport);
      await this.io.calls.sendImport(destination, encodeImportRecord({ prefix, clear: false, floor: 0, epoch, puts: [], deletes: [], leases: [], requests: batch.map(wireToRequest), ...this.excluding(prefix) }));
      this.noteRequests(progress, batch);
    }
    return kept;
  }

  private noteRequests(progress: Progress, requests: readonly WireRequest[]): void {
    for (const request of requests) {
      progress.requestIds.add(request.id);
      progress.requestsStampMs = Math.max(progress.requestsStampMs, request.stampMs);
    }
  }

  /**
   * Runs an import of changes taken from the feed. They left the feed when taken: if the import
   * fails, the feed is dropped, so the next attempt reads the whole namespace (complete) rather
   * than go on from a feed that no longer holds them.
   */
  private async importFromFeed<T>(progress: Progress, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      progress.feed?.close('an import of its changes failed');
      progress.feed = undefined;
      throw error;
    }
  }

  private nested(prefix: string): readonly string[] {
    return this.nestedOf.get(prefix) ?? [];
  }

  /** An import record's `exclude` for the move of `prefix` (absent when nothing is nested in it). */
  private excluding(prefix: string): { exclude?: readonly string[] } {
    const nested = this.nested(prefix);
    return nested.length === 0 ? {} : { exclude: nested };
  }

  private forget(id: number): void {
    this.progress.get(id)?.feed?.close();
    this.progress.delete(id);
  }

  /** This leader's progress, or a fresh full copy (a new leader, or a lost memory). */
  private async progressOf(move: MoveRecord, source: MapCell, destination: MapCell, epoch: number): Promise<Progress> {
    const known = this.progress.get(move.id);
    if (known !== undefined) return known;
    const progress = await this.copy(source, destination, move, epoch);
    this.progress.set(move.id, progress);
    return progress;
  }

  /**
   * The copy: the namespace read on the source a page at a time, each page imported as read (the
   * first clearing the range on the destination), each with its page's revision as the floor. The
   * pages are read at different revisions, so the copy is complete through the first page's
   * revision only: the catch-up goes on from there, and brings every later change of every page's
   * keys (an import sets a key as the source has it, so replaying a change a later page already
   * holds is undone by the changes after it).
   */
  private async copy(source: MapCell, destination: MapCell, move: MoveRecord, epoch: number): Promise<Progress> {
    const prefix = move.prefix;
    const progress = freshProgress(move);
    let first = true;
    const read = await this.readPages(source, prefix, async (page) => {
      await this.importAll(source, destination, prefix, page.kvs, [], first, page.revision, progress, epoch);
      first = false;
    });
    progress.through = read.revision;
    // Every Request-ID record of the namespace so far, before the feed opens: the dedup window's
    // worth (600,000 records at 1,000 writes/s) takes longer than a feed may sit untaken (30 s;
    // move bench: "feed failed (idle)" once the window filled), and catching up after it lists
    // only those stamped since.
    await this.sendRequests(destination, prefix, await this.newRequests(source, prefix, progress), progress, epoch);
    return progress;
  }

  /**
   * The namespace's own keys on `cell`, a page at a time (a large namespace is never one answer,
   * and never one long read holding the source's event loop), each to `onPage` as read. Returns
   * the first page's revision (what was read is complete through it) and the last's (at or above
   * every key's modRevision).
   */
  private async readPages(cell: MapCell, prefix: string, onPage: (page: NamespaceRead) => Promise<void>): Promise<{ revision: number; latest: number }> {
    const nested = this.nested(prefix);
    let after: string | null = null;
    let first: number | null = null;
    for (;;) {
      let page: NamespacePage;
      try {
        page = await this.io.calls.readNamespacePage(cell, prefix, nested, after, this.pageKeys);
      } catch (error) {
        if (after !== null || !(error instanceof CellRefusedError) || error.status !== 400 || !error.message.includes('unknown query parameter')) throw error;
        // A source of a build without pages: the namespace in one answer, as before.
        const whole = await this.io.calls.readNamespace(cell, prefix, nested);
        await onPage(whole);
        return { revision: whole.revision, latest: whole.revision };
      }
      first ??= page.revision;
      await onPage(page);
      const last = page.kvs[page.kvs.length - 1];
      if (!page.more || last === undefined) return { revision: first, latest: page.revision };
      after = last.key;
    }
  }

  /** The whole namespace from pages (revision: the first page's; latest: the last page's). */
  private async readWhole(cell: MapCell, prefix: string): Promise<NamespaceRead & { latest: number }> {
    const kvs: KeyValue[] = [];
    const { revision, latest } = await this.readPages(cell, prefix, async (page) => {
      kvs.push(...page.kvs);
    });
    return { revision, latest, kvs };
  }

  /**
   * Reads the namespace on the source and imports what differs from what was copied (floor: the
   * read's revision). Returns the number of changes.
   */
  private async catchUp(move: MoveRecord, source: MapCell, destination: MapCell, progress: Progress, epoch: number): Promise<number> {
    const read = await this.readWhole(source, move.prefix);
    const { puts, deletes } = this.differenceOf(read, progress);
    const through = progress.through;
    await this.importAll(source, destination, move.prefix, puts, deletes, false, read.latest, progress, epoch);
    // Complete through the first page's revision only (a feed opened later starts after it).
    progress.through = Math.max(through, read.revision);
    return puts.length + deletes.length;
  }

  /**
   * Imports keys (with the leases they name, at their remaining TTL) in bounded batches. `own`
   * (the landing) and `requests` ride with the last batch; an import with nothing still raises
   * the floor (and lands). `fence` (with `own`): the move record's fence revision, so the
   * destination serves a watch resumed from fence + 1 even when the floor is above it (a read
   * after the fence, not the feed, gave the last changes).
   */
  private async importAll(
    source: MapCell, destination: MapCell, prefix: string, kvs: readonly KeyValue[], deletes: readonly string[],
    clear: boolean, floor: number, progress: Progress, epoch: number, requests: readonly WireRequest[] = [], own?: string, fence?: number,
  ): Promise<void> {
    const leaseIds = [...new Set(kvs.map((kv) => kv.lease).filter((id) => id !== 0))];
    const leases = new Map<number, ImportLease>();
    // Before the reads: the source's deadlines are at least this plus what each had left.
    const leasesReadAtMs = this.clock.nowMs();
    await Promise.all(leaseIds.map(async (id) => {
      const lease = await this.io.calls.readLease(source, id);
      if (lease !== null) leases.set(id, lease);
    }));
    // A key whose lease ended meanwhile is being deleted on the source: not copied.
    const live = kvs.filter((kv) => kv.lease === 0 || leases.has(kv.lease));
    const batches: { puts: KeyValue[]; deletes: readonly string[] }[] = [];
    let batch: KeyValue[] = [];
    let bytes = 0;
    for (const kv of live) {
      const size = kv.key.length * 3 + Math.ceil(kv.value.length * 4 / 3) + 160;
      if (batch.length > 0 && (batch.length >= importKeysPerCommandMax || bytes + size > importBatchBytes)) {
        batches.push({ puts: batch, deletes: [] });
        batch = [];
        bytes = 0;
      }
      batch.push(kv);
      bytes += size;
    }
    // Deletes ride with the last batch of puts.
    for (let i = 0; i < deletes.length; i += importKeysPerCommandMax) {
      batches.push({ puts: batch, deletes: deletes.slice(i, i + importKeysPerCommandMax) });
      batch = [];
    }
    if (batch.length > 0 || batches.length === 0) batches.push({ puts: batch, deletes: [] });
    for (const [i, { puts, deletes: deleting }] of batches.entries()) {
      const first = i === 0;
      const lastOne = i === batches.length - 1;
      const withRequests = lastOne ? requests : [];
      const batchLeases = [...new Set(puts.map((kv) => kv.lease).filter((id) => id !== 0))].map((id) => leases.get(id) as ImportLease);
      await this.io.calls.sendImport(destination, encodeImportRecord({
        prefix, clear: clear && first, floor, epoch, puts, deletes: deleting, leases: batchLeases, destination: destination.id, requests: withRequests.map(wireToRequest),
        ...this.excluding(prefix),
        ...(lastOne && own !== undefined ? { own, ...(fence === undefined ? {} : { fence: Math.min(fence, floor) }) } : {}),
      }));
      // Their owners renew them on the source: the destination's copies (imported now) get those
      // renewals too, from this batch on (a long copy's first batches would otherwise wait for the last).
      if (batchLeases.length > 0) this.leaseFollowers.follow(prefix, source, destination, batchLeases, leasesReadAtMs);
      this.noteRequests(progress, withRequests);
      if (clear && first) progress.copied.clear();
      for (const key of deleting) progress.copied.delete(key);
      for (const kv of puts) progress.copied.set(kv.key, kv.modRevision);
    }
    progress.through = Math.max(progress.through, floor);
  }

  private async advance(move: MoveRecord, from: MovePhase, fields: Partial<MoveRecord>): Promise<void> {
    await this.control.change(moverPrincipal, (current) => withMoveAdvanced(current, move.id, from, fields, this.clock.nowMs()));
    this.left(move, from);
  }

  /** Reports the time `move` spent in `phase` (from its record's last change to now). */
  private left(move: MoveRecord, phase: MovePhase): void {
    this.observer.left(phase, Math.max(0, this.clock.nowMs() - move.updatedAtMs));
  }

  /** Pushes `map` until `cellId` holds its epoch (bounded; throws to retry in the next round). */
  private async pushUntil(map: CellMap, cellId: string, leaderFirst?: MapCell): Promise<void> {
    const deadline = this.clock.nowMs() + pushWaitMs;
    for (;;) {
      if (await this.control.pushOne(map, cellId, leaderFirst)) return;
      if (this.clock.nowMs() > deadline) throw new Error(`cell ${cellId} did not take the ownership table of epoch ${map.epoch}`);
      await this.io.sleep(pushRetryMs);
    }
  }

  /** A cell refused an import or a read for good (e.g. a lease id taken on the destination). */
  private async abortAfterRefusal(move: MoveRecord, error: CellRefusedError): Promise<void> {
    if (move.phase !== 'copying' && move.phase !== 'catching-up' && move.phase !== 'fenced') return;
    // An import made at an older map epoch: the next round re-reads the record and tries again.
    if (error.message.includes('a stale import')) return;
    try {
      await this.control.change(moverPrincipal, (current) => withMoveAborted(current, move.prefix, error.message, this.clock.nowMs()));
    } catch (abortError) {
      this.log.warn(`move ${move.id}: abort after refusal failed: ${(abortError as Error).message}`);
    }
  }
}

/**
 * A move's progress before anything is copied. Request-ID records are listed from the move
 * record's `requestsFromMs` (a move back to where the namespace came from: that cell holds every
 * record the source stamped before; moves.ts), or from the start.
 */
function freshProgress(move: MoveRecord): Progress {
  return { copied: new Map(), through: 0, requestIds: new Set(), requestsStampMs: move.requestsFromMs ?? -1 };
}

function wireToRequest(request: WireRequest): { id: Uint8Array; record: Uint8Array; ageMs?: number } {
  const bytes = { id: new Uint8Array(Buffer.from(request.id, 'base64')), record: new Uint8Array(Buffer.from(request.record, 'base64')) };
  return typeof request.ageMs === 'number' ? { ...bytes, ageMs: request.ageMs } : bytes;
}

function cellOf(map: CellMap, id: string): MapCell {
  const cell = map.cells.find((c) => c.id === id);
  if (cell === undefined) throw new Error(`cell ${id} is not in the cell map`);
  return cell;
}

/** The destination's table of `map` with the move's namespace landed: the landing import carries it. */
function landingTable(map: CellMap, move: MoveRecord): string {
  return new TextDecoder().decode(ownershipTableOf(map, move.to, move.prefix));
}
