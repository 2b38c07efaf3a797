// Watchers against the production watch hub of every member (with the lock workload). Each
// watches every key from a revision, reads its stream at its own pace, and when its member
// crashes, restarts or ends the watch, resumes on another member from the revision after the
// last one it was told about, as api.md's watch contract says a client does. The checker keeps
// the committed history as members apply it (from their stores, not through any hub) and holds
// every watcher's stream to it: each revision's events exactly once, in order, whole, with no
// revision skipped; after the faults every watcher reaches the cell's final revision.
import type { Random } from '../base/random.js';
import { chance, pick, randomInt } from '../base/random.js';
import type { MvccEvent } from '../mvcc/index.js';
import { defaultWatchLimits, type WatchBugs, type WatchConnection, type WatchLimits, type WatchOutput, type WatchSource } from '../watch/index.js';
import type { SimWatchEnv, SimWatches } from './watch-member.js';
import type { MemberId } from '../raft/index.js';
import type { World } from './world.js';

const watchersMin = 1;
const watchersMax = 3;
/** Outputs one pull takes before yielding (a client reading at its pace). */
const pullOutputsMax = 64;
/** A watcher whose member stopped answering moves on after this long without a pull. */
const stallMs = 1_500;
const watchedPrefix = '/';

interface SimWatcher {
  readonly n: number;
  /** Every revision at or below this was delivered (or, after a compaction reset, given up). */
  lastRevision: number;
  member: MemberId | null;
  /** The hub and incarnation the current watch lives on. */
  binding: { readonly watches: SimWatches; readonly incarnation: number; readonly connection: WatchConnection<number> } | null;
  pullScheduled: boolean;
  lastPullMs: number;
  resumes: number;
  resets: number;
}

export interface WatchStats {
  watchers: number;
  events: number;
  batches: number;
  resumes: number;
  resets: number;
}

export class WatchWorkload implements SimWatchEnv {
  readonly limits: WatchLimits;
  readonly stats: WatchStats = { watchers: 0, events: 0, batches: 0, resumes: 0, resets: 0 };
  private readonly watchers: SimWatcher[] = [];
  /** The committed history: each revision's events (a revision without events is absent). */
  private readonly history = new Map<number, readonly MvccEvent[]>();
  /** Every revision at or below this is in `history` (or was compacted before anyone read it). */
  private recordedThrough = 0;
  private readonly deliveryDelayMsMax: number;

  constructor(
    private readonly world: World,
    private readonly random: Random,
    readonly bugs: WatchBugs,
  ) {
    // Small history reads and buffers, drawn per seed, so catch-up is cut at revision boundaries
    // and slow consumers end often: the paths where a watch could lose or repeat a revision.
    this.limits = {
      ...defaultWatchLimits,
      readEventsMax: pick(random, [1, 2, 4, 16, 256]),
      catchUpReadsPerStepMax: pick(random, [1, 4]),
      bufferedEventsMax: pick(random, [8, 64, 10_000]),
    };
    this.deliveryDelayMsMax = pick(random, [1, 20, 200]);
    world.stats.watches = this.stats;
  }

  start(): void {
    const count = randomInt(this.random, watchersMin, watchersMax);
    for (let n = 1; n <= count; n++) {
      const watcher: SimWatcher = { n, lastRevision: 0, member: null, binding: null, pullScheduled: false, lastPullMs: 0, resumes: 0, resets: 0 };
      this.watchers.push(watcher);
      this.stats.watchers++;
      // Some start from the beginning (catching up through history), some from now.
      const fromStart = chance(this.random, 0.5);
      this.world.at(this.world.nowMs + randomInt(this.random, 1, 2_000), '', () => this.open(watcher, fromStart ? 1 : 0));
    }
    this.world.at(this.world.nowMs + stallMs, '', () => this.patrol());
  }

  // --- the reference history (SimWatchEnv) -------------------------------------------------------

  recordHistory(source: WatchSource): void {
    if (source.revision <= this.recordedThrough) return;
    let from = this.recordedThrough + 1;
    if (from <= source.compactRevision) from = source.compactRevision + 1; // nobody saw those here
    const events = source.events({ startRevision: from, limit: Number.MAX_SAFE_INTEGER });
    for (const event of events) {
      if (event.revision > source.revision) break;
      const list = this.history.get(event.revision);
      if (list === undefined) this.history.set(event.revision, [event]);
      else (list as MvccEvent[]).push(event);
    }
    this.recordedThrough = source.revision;
  }

  // --- one watcher ------------------------------------------------------------------------------

  /** Opens a watch from `start` (0 = from now) on a running member's hub. */
  private open(watcher: SimWatcher, start: number): void {
    const candidates = this.world.runningNodes().filter((node) => node.serverDriver?.watches?.serving === true);
    if (candidates.length === 0) {
      this.world.at(this.world.nowMs + 50, '', () => this.open(watcher, start));
      return;
    }
    const node = pick(this.random, candidates);
    const watches = node.serverDriver?.watches as SimWatches;
    const connection = watches.hub.openConnection(() => this.schedulePull(watcher), () => true);
    watcher.member = node.id;
    watcher.binding = { watches, incarnation: node.incarnation, connection };
    watcher.lastPullMs = this.world.nowMs;
    const startRevision = start === 0 ? 0 : start;
    const created = watches.hub.create(connection, watcher.n, {
      key: watchedPrefix, prefix: true, startRevision, prevKv: false, filter: 'all', encoding: 'sim',
    });
    // "From now" is announced: everything up to the hub's revision is not this watcher's.
    if (start === 0) watcher.lastRevision = Math.max(watcher.lastRevision, created.startRevision - 1);
    this.world.trace('-', `watch w${watcher.n}: opened on member ${node.id} from revision ${created.startRevision}`);
    this.schedulePull(watcher);
  }

  private schedulePull(watcher: SimWatcher): void {
    if (watcher.pullScheduled) return;
    watcher.pullScheduled = true;
    this.world.at(this.world.nowMs + randomInt(this.random, 0, this.deliveryDelayMsMax), '', () => {
      watcher.pullScheduled = false;
      this.pull(watcher);
    });
  }

  private pull(watcher: SimWatcher): void {
    const binding = watcher.binding;
    if (binding === null) return;
    if (!this.alive(watcher)) return this.resume(watcher, 'member gone');
    const node = this.world.nodes.get(watcher.member as MemberId);
    if (node?.state !== 'running') return; // a paused member sends nothing; the patrol moves on
    watcher.lastPullMs = this.world.nowMs;
    for (let i = 0; i < pullOutputsMax; i++) {
      const output = binding.connection.next();
      if (output === null) return;
      if (!this.take(watcher, output)) return;
    }
    this.schedulePull(watcher);
  }

  /** Handles one output; false when the watch ended (and was resumed). */
  private take(watcher: SimWatcher, output: WatchOutput<number>): boolean {
    if (output.type === 'end') {
      this.world.trace('-', `watch w${watcher.n}: ended ${output.reason} after revision ${output.lastRevision}`);
      if (output.reason === 'compacted') {
        // The rest of its history is gone: start again from now (a client sees the error).
        watcher.resets++;
        this.stats.resets++;
        this.close(watcher);
        this.world.at(this.world.nowMs + 1, '', () => this.open(watcher, 0));
        return false;
      }
      if (output.lastRevision !== watcher.lastRevision) {
        this.world.report('watch delivers every revision once, in order',
          `w${watcher.n} ended (${output.reason}) saying it delivered through ${output.lastRevision}, but it received through ${watcher.lastRevision}`);
      }
      this.resume(watcher, output.reason);
      return false;
    }
    const batch = output.batch;
    this.stats.batches++;
    this.check(watcher, batch.revision, batch.events);
    return true;
  }

  /** Holds one batch to the history: every event of (lastRevision, revision], exactly, in order. */
  private check(watcher: SimWatcher, through: number, events: readonly MvccEvent[]): void {
    const invariant = 'watch delivers every revision once, in order';
    if (through < watcher.lastRevision) {
      this.world.report(invariant, `w${watcher.n} got a batch through ${through} after one through ${watcher.lastRevision}`);
      return;
    }
    if (through > this.recordedThrough) {
      this.world.report(invariant, `w${watcher.n} got a batch through ${through}, past the applied history (${this.recordedThrough})`);
      return;
    }
    const expected: MvccEvent[] = [];
    for (let revision = watcher.lastRevision + 1; revision <= through; revision++) {
      for (const event of this.history.get(revision) ?? []) {
        if (event.kv.key.startsWith(watchedPrefix)) expected.push(event);
      }
    }
    const got = events.map(describe);
    const want = expected.map(describe);
    if (got.join('|') !== want.join('|')) {
      const at = firstDifference(got, want);
      this.world.report(invariant,
        `w${watcher.n} (revisions ${watcher.lastRevision + 1}..${through} on member ${watcher.member}): event ${at} is ${got[at] ?? 'missing'}, the history has ${want[at] ?? 'nothing'} (${got.length} delivered, ${want.length} committed)`);
    }
    this.stats.events += events.length;
    watcher.lastRevision = through;
  }

  private alive(watcher: SimWatcher): boolean {
    const binding = watcher.binding;
    if (binding === null || watcher.member === null) return false;
    const node = this.world.nodes.get(watcher.member);
    return node !== undefined && node.state !== 'crashed' && node.state !== 'removed' &&
      node.incarnation === binding.incarnation && node.serverDriver?.watches === binding.watches;
  }

  /** Resumes on a member (maybe the same) from the revision after the last it was told about. */
  private resume(watcher: SimWatcher, why: string): void {
    this.close(watcher);
    watcher.resumes++;
    this.stats.resumes++;
    this.world.trace('-', `watch w${watcher.n}: resumes from ${watcher.lastRevision + 1} (${why})`);
    this.world.at(this.world.nowMs + randomInt(this.random, 1, 100), '', () => this.open(watcher, watcher.lastRevision + 1));
  }

  private close(watcher: SimWatcher): void {
    const binding = watcher.binding;
    watcher.binding = null;
    if (binding === null) return;
    // Only a live hub is told: a crashed incarnation's hub is gone with its process.
    if (this.world.nodes.get(watcher.member as MemberId)?.serverDriver?.watches === binding.watches) binding.connection.close();
  }

  /** Every so often: a watcher whose member went away or stopped answering moves on. */
  private patrol(): void {
    for (const watcher of this.watchers) {
      if (watcher.binding === null) continue;
      if (!this.alive(watcher)) this.resume(watcher, 'member gone');
      else if (this.world.nowMs - watcher.lastPullMs > stallMs) this.resume(watcher, 'no progress');
      else this.schedulePull(watcher);
    }
    this.world.at(this.world.nowMs + stallMs, '', () => this.patrol());
  }

  // --- the end of the run ------------------------------------------------------------------------

  /** True once every watcher reached `revision`; at the deadline, reports the ones that did not. */
  settled(revision: number, deadlineMs: number): boolean {
    const behind = this.watchers.filter((watcher) => watcher.lastRevision < revision);
    if (behind.length === 0) return true;
    if (this.world.nowMs < deadlineMs) return false;
    this.world.report('watchers catch up',
      `after the faults, ${behind.map((w) => `w${w.n} at ${w.lastRevision} (member ${w.member}, ${w.resumes} resumes)`).join(', ')} never reached revision ${revision}`);
    return true;
  }

  static settleBudgetMs(): number {
    return 20_000;
  }
}

function describe(event: MvccEvent): string {
  return `${event.revision}:${event.type}:${event.kv.key}@${event.kv.modRevision}`;
}

function firstDifference(a: readonly string[], b: readonly string[]): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}
