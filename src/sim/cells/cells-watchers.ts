// Checker (4) of the cells world: watch sequences per namespace are exact across moves. One
// watcher per namespace watches its prefix on the production watch hub of a member of the cell
// the routing layer names. A watch is judged when created, as a node judges it (wrong_cell: the
// cache is corrected and the watch created at the named cell at once; a landing namespace: again
// shortly). The source ends it at the fence with wrong_cell and the revision it delivered
// through; the watcher resumes at the named cell from the next revision, as a client does (also
// after a crash, a leaderless end or a stall, on the same cell). Every batch is held to the
// namespace's reference history (owner-checker.ts: events as the cells that took its writes
// applied them, revisions growing across cells): each event once, in order, no revision skipped.
// After the run every watcher must reach the namespace's last write.
import type { Random } from '../../base/random.js';
import { pick, randomInt } from '../../base/random.js';
import type { MvccEvent } from '../../mvcc/index.js';
import type { WatchConnection, WatchOutput } from '../../watch/index.js';
import type { SimWatches } from '../watch-member.js';
import type { CellsLoop } from './cells-loop.js';
import type { OwnerChecker } from './owner-checker.js';
import type { SimControl } from './sim-control.js';
import type { SimRouter } from './sim-router.js';

const invariant = 'watch sequences per namespace exact';
/** The documented gap (cells.md "How revisions map"), told apart from the checker's own finds. */
const crossedInvariant = 'watch resumed at a new owner from before its move';
const pullEveryMsMax = 20;
const pullOutputsMax = 64;
const stallMs = 1_500;
const retryMs = 15;
/** wrong_cell hops in one creation before it waits and tries again. */
const hopsMax = 4;

interface Binding {
  readonly cell: string;
  readonly member: number;
  readonly incarnation: number;
  readonly watches: SimWatches;
  readonly connection: WatchConnection<number>;
}

interface CellsWatcher {
  readonly prefix: string;
  /** The cell it watches: changed only by a wrong_cell (an end, or a refused creation) of a newer epoch. */
  cell: string;
  epoch: number;
  /**
   * Set when a creation was refused wrong_cell and the watcher went to the named cell from its
   * own revision, not from a move's end: if that revision is at or below the move's fence, the
   * new owner has none of the source's last events (cells.md: a watch on the destination from a
   * revision <= rf sees only post-move events). Cleared by the next batch that checks clean.
   */
  crossedWithoutEnd: boolean;
  /** Every event of the namespace at or below this was delivered. */
  lastRevision: number;
  binding: Binding | null;
  opening: boolean;
  lastPullMs: number;
  resumes: number;
  movedEnds: number;
  /** Refused compacted at a new owner's floor (it holds none of the source's events): read again. */
  rereads: number;
}

export class CellsWatchers {
  private readonly watchers: CellsWatcher[] = [];

  constructor(
    private readonly loop: CellsLoop,
    private readonly control: SimControl,
    private readonly router: SimRouter,
    private readonly owners: OwnerChecker,
    private readonly random: Random,
  ) {}

  /** Counts for the run's figures: watches ended by moves and resumed elsewhere. */
  get movedEnds(): number {
    return this.watchers.reduce((sum, w) => sum + w.movedEnds, 0);
  }

  /** Watches a new owner refused at its floor (compacted), which the client read again. */
  get rereads(): number {
    return this.watchers.reduce((sum, w) => sum + w.rereads, 0);
  }

  start(prefixes: readonly string[]): void {
    for (const prefix of prefixes) {
      const watcher: CellsWatcher = {
        prefix, cell: this.router.cellOf(prefix), epoch: this.router.epochOf(prefix), crossedWithoutEnd: false, lastRevision: 0, binding: null, opening: false, lastPullMs: 0, resumes: 0, movedEnds: 0, rereads: 0,
      };
      this.watchers.push(watcher);
      this.open(watcher, 0);
    }
    const patrol = (): void => {
      for (const watcher of this.watchers) {
        if (watcher.binding === null) continue;
        // A quiet namespace sends nothing: only a member gone or stopped (no pong, for a client) moves it.
        if (!this.alive(watcher.binding)) this.resume(watcher, 'member gone');
        else if (this.stuck(watcher.binding) && this.loop.nowMs - watcher.lastPullMs > stallMs) this.resume(watcher, 'member stopped or behind');
        else this.schedulePull(watcher); // a pull skipped while its member was stopped is not asked for again
      }
      this.loop.at(this.loop.nowMs + stallMs, patrol);
    };
    this.loop.at(this.loop.nowMs + stallMs, patrol);
  }

  /** True once every watcher delivered through its namespace's last write; reports laggards at the deadline. */
  settled(deadlineMs: number): boolean {
    const behind = this.watchers.filter((w) => [...(this.owners.history.get(w.prefix)?.keys() ?? [])].some((revision) => revision > w.lastRevision));
    if (behind.length === 0) return true;
    if (this.loop.nowMs < deadlineMs) return false;
    const invariantOf = behind.some((w) => !w.crossedWithoutEnd) ? 'watchers catch up' : crossedInvariant;
    this.loop.report(invariantOf, behind.map((w) => `${w.prefix} at ${w.lastRevision} of ${this.owners.highestRevision(w.prefix)} (${w.binding?.cell ?? 'no cell'}, ${w.resumes} resumes)`).join(', '));
    return true;
  }

  /** Creates the watch from `start` (0: from now) at the cell the cache names, following refusals. */
  private open(watcher: CellsWatcher, start: number): void {
    watcher.opening = true;
    for (let hop = 0; hop < hopsMax; hop++) {
      const cellId = watcher.cell;
      const cell = this.control.cells.get(cellId);
      const candidates = cell?.world.runningNodes().filter((node) => node.serverDriver?.watches?.serving === true) ?? [];
      if (cell === undefined || candidates.length === 0) break;
      const node = pick(this.random, candidates);
      const store = node.serverDriver?.mvccStore;
      const watches = node.serverDriver?.watches;
      if (store === null || store === undefined || watches === null || watches === undefined) break;
      const refusal = store.refuseRead({ type: 'get', key: watcher.prefix, prefix: true });
      if (refusal !== null) {
        const details = refusal.details;
        // A member behind its cell names an older owner: not followed (another member, shortly).
        if (refusal.code === 'wrong_cell' && typeof details['cell'] === 'string' && details['cell'] !== '' && Number(details['epoch']) > watcher.epoch) {
          this.router.correct(watcher.prefix, details['cell'], Number(details['epoch']));
          watcher.cell = details['cell'];
          watcher.epoch = Number(details['epoch']);
          if (start !== 0) watcher.crossedWithoutEnd = true;
          continue;
        }
        break; // landing, or a member behind: again shortly
      }
      const connection = watches.hub.openConnection(() => this.schedulePull(watcher), () => true);
      const created = watches.hub.create(connection, 1, { key: watcher.prefix, prefix: true, startRevision: start, prevKv: false, filter: 'all', encoding: 'sim' });
      if (start === 0) watcher.lastRevision = created.startRevision - 1;
      watcher.binding = { cell: cellId, member: node.id, incarnation: node.incarnation, watches, connection };
      watcher.opening = false;
      watcher.lastPullMs = this.loop.nowMs;
      this.loop.note(`watch ${watcher.prefix}: on ${cellId} n${node.id} from ${created.startRevision}`);
      this.schedulePull(watcher);
      return;
    }
    this.loop.at(this.loop.nowMs + retryMs, () => this.open(watcher, start));
  }

  /** Stopped (SIGSTOP), or behind its cell's leader (cut off, or removed from the cell but running). */
  private stuck(binding: Binding): boolean {
    const world = this.control.cells.get(binding.cell)?.world;
    const node = world?.nodes.get(binding.member);
    const leader = world?.leader() ?? null;
    return node?.state === 'paused' || (node !== undefined && leader !== null && node.appliedIndex < leader.commitIndex);
  }

  private alive(binding: Binding): boolean {
    const node = this.control.cells.get(binding.cell)?.world.nodes.get(binding.member);
    return node !== undefined && (node.state === 'running' || node.state === 'paused') && node.incarnation === binding.incarnation
      && node.serverDriver?.watches === binding.watches;
  }

  private schedulePull(watcher: CellsWatcher): void {
    const binding = watcher.binding;
    if (binding === null) return;
    this.loop.at(this.loop.nowMs + randomInt(this.random, 0, pullEveryMsMax), () => this.pull(watcher, binding));
  }

  private pull(watcher: CellsWatcher, binding: Binding): void {
    if (watcher.binding !== binding) return;
    if (!this.alive(binding)) return this.resume(watcher, 'member gone');
    const node = this.control.cells.get(binding.cell)?.world.nodes.get(binding.member);
    if (node?.state !== 'running') return; // a paused member sends nothing; the patrol moves on
    for (let i = 0; i < pullOutputsMax; i++) {
      const output = binding.connection.next();
      if (output === null) return;
      watcher.lastPullMs = this.loop.nowMs; // something arrived
      if (!this.take(watcher, output)) return;
    }
    this.schedulePull(watcher);
  }

  /** One output; false when the watch ended (and is being resumed). */
  private take(watcher: CellsWatcher, output: WatchOutput<number>): boolean {
    if (output.type === 'batch') {
      this.check(watcher, output.batch.revision, output.batch.events);
      return true;
    }
    const floor = output.reason === 'compacted' ? output.error?.details['floor'] : undefined;
    if (typeof floor === 'number') {
      // A new owner refused a start at or below its floor (the source holds those events): the
      // client was told, and reads the namespace again and watches from after the floor, as after
      // any compaction. Not a silent gap; the sequence goes on from there.
      watcher.rereads++;
      watcher.lastRevision = Math.max(watcher.lastRevision, floor);
      watcher.crossedWithoutEnd = false;
      this.resume(watcher, `compacted at the owner's floor ${floor}: read again`);
      return false;
    }
    // Whatever ended it, nothing of the namespace may lie between what it delivered and its claim.
    this.check(watcher, output.lastRevision, []);
    const details = output.error?.details ?? {};
    // Followed only when newer than the owner the watcher knows (a member behind names an older one).
    if (output.reason === 'wrong_cell' && typeof details['cell'] === 'string' && details['cell'] !== '' && Number(details['epoch']) > watcher.epoch) {
      watcher.movedEnds++;
      this.router.correct(watcher.prefix, details['cell'], Number(details['epoch']));
      watcher.cell = details['cell'];
      watcher.epoch = Number(details['epoch']);
      watcher.crossedWithoutEnd = false;
    }
    this.resume(watcher, `${output.reason} after ${output.lastRevision}`);
    return false;
  }

  /** Holds what arrived through `through` to the reference: every event of (lastRevision, through], once, in order. */
  private check(watcher: CellsWatcher, through: number, events: readonly MvccEvent[]): void {
    if (through < watcher.lastRevision) {
      this.loop.report(invariant, `${watcher.prefix}: delivered through ${through} after ${watcher.lastRevision}`);
      return;
    }
    const history = this.owners.history.get(watcher.prefix) ?? new Map<number, readonly MvccEvent[]>();
    const want = [...history.entries()].filter(([revision]) => revision > watcher.lastRevision && revision <= through)
      .sort((a, b) => a[0] - b[0]).flatMap(([, list]) => list.map(describe));
    const got = events.map(describe);
    if (got.join('|') !== want.join('|')) {
      let at = 0;
      while (at < got.length && at < want.length && got[at] === want[at]) at++;
      this.loop.report(watcher.crossedWithoutEnd ? crossedInvariant : invariant, `${watcher.prefix} on ${watcher.binding?.cell ?? '?'} (revisions ${watcher.lastRevision + 1}..${through}): event ${at} is ${got[at] ?? 'missing'}, the namespace's history has ${want[at] ?? 'nothing'} (${got.length} delivered, ${want.length} written)`);
    }
    else if (events.length > 0) watcher.crossedWithoutEnd = false;
    watcher.lastRevision = through;
  }

  private resume(watcher: CellsWatcher, why: string): void {
    const binding = watcher.binding;
    watcher.binding = null;
    if (binding !== null && this.alive(binding)) binding.connection.close();
    if (watcher.opening) return;
    watcher.resumes++;
    this.loop.note(`watch ${watcher.prefix}: resumes from ${watcher.lastRevision + 1} (${why})`);
    this.loop.at(this.loop.nowMs + randomInt(this.random, 1, 30), () => this.open(watcher, watcher.lastRevision + 1));
  }
}

function describe(event: MvccEvent): string {
  return `${event.revision}:${event.type}:${event.kv.key}@${event.kv.modRevision}`;
}
