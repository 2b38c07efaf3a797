// The production watch hub (src/watch) inside a simulated member: it reads the member's MVCC
// store through the applier (a snapshot install replaces the store) and hears every applied
// batch and every restore, as the node's stream server does (src/api/stream/watch-service.ts).
import { WatchHub, type WatchBugs, type WatchLimits, type WatchSource } from '../watch/index.js';
import type { Timers } from '../base/timers.js';
import type { MvccApplier } from './mvcc-machine.js';

/**
 * A member that knows no leader this long ends its watches and takes no new ones, so clients
 * resume where the cell goes on (the node's is 5 s, src/api/stream/watch-service.ts; the sim's
 * elections take tens to hundreds of ms). A member starts knowing no leader.
 */
const leaderlessEndMs = 1_000;

/** What the watch workload lends every member's hub. */
export interface SimWatchEnv {
  readonly limits: WatchLimits;
  readonly bugs: WatchBugs;
  /** Called after each applied batch or restore, before the hub fans it out: the reference history. */
  recordHistory(source: WatchSource): void;
}

export interface SimWatches {
  readonly hub: WatchHub<number>;
  /** False while the member has known no leader for leaderlessEndMs: no new watches here. */
  readonly serving: boolean;
  onApplied(): void;
  /** The member's leader changed (0: none known). */
  onLeaderChange(leader: number): void;
}

export function createSimWatches(applier: MvccApplier, env: SimWatchEnv, timers: Timers): SimWatches {
  const source: WatchSource = {
    get revision() {
      return applier.store.revision;
    },
    get compactRevision() {
      return applier.store.compactRevision;
    },
    events: (options) => applier.store.events(options),
  };
  // The store is read through the applier: a snapshot install replaces it.
  const hub = new WatchHub<number>(source, env.limits, env.bugs, null, { bounds: (spec) => applier.store.watchBounds(spec) });
  let leaderless = false;
  // As the node's watch service (src/api/stream/watch-service.ts): after a batch holding an
  // ownership change, watches of a namespace fenced or moved away end with wrong_cell at its
  // fence (each namespace's own, as the store recorded it at apply). Runs without cells never change ownership, so this never fires there.
  let ownershipChanges = applier.store.lastOwnershipChange().count;
  let timer: { cancel(): void } | null = null;
  const watches: SimWatches = {
    hub,
    get serving() {
      return !leaderless;
    },
    onApplied: () => {
      env.recordHistory(source);
      // Before the fan-out, as the node's watch service (hub.endMoved says why).
      const change = applier.store.lastOwnershipChange();
      if (change.count !== ownershipChanges) {
        ownershipChanges = change.count;
        hub.endMoved();
      }
      hub.onApplied();
    },
    onLeaderChange: (leader) => {
      if (leader !== 0) {
        timer?.cancel();
        timer = null;
        leaderless = false;
        return;
      }
      if (timer !== null || leaderless) return;
      timer = timers.setTimeout(() => {
        timer = null;
        leaderless = true;
        hub.endAll('leaderless');
      }, leaderlessEndMs);
    },
  };
  watches.onLeaderChange(0);
  return watches;
}
