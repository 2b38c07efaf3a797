// The shapes of a cells run (issue 24): options, the planted bugs of the teeth tests, the result.
import type { WatchBugs } from '../../watch/index.js';
import type { Scenario, Violation } from '../types.js';

/**
 * Deliberately broken move steps (teeth): each must make a checker fail within a small sweep.
 * skipFence: the source is never given a table that fences or gives away the namespace until the
 * move's release (it keeps taking writes while the destination lands it). skipFloor: no import
 * of the move raises the destination's revision (floor 0 throughout). skipRestamp, lateDedupClock:
 * Request-ID records moved wrongly (below), so a retried request applies twice.
 */
export interface CellsBugs {
  readonly skipFence?: boolean;
  readonly skipFloor?: boolean;
  /** Imported Request-ID records keep the source's stamps (not re-stamped into the destination's dedup clock). */
  readonly skipRestamp?: boolean;
  /**
   * The destination's dedup clock read a minute late for a move (as if read after its landing): a
   * move back lists the records from there, missing those stamped in between.
   */
  readonly lateDedupClock?: boolean;
}

export interface CellsOptions {
  readonly seed: bigint;
  /** Data cells, each a Raft group of three (default 2). */
  readonly cells?: number;
  /** Namespaces written and moved (default /a/, /b/, /c/). */
  readonly namespaces?: readonly string[];
  /** Force each cell's fault profile instead of drawing it ('calm': no faults). */
  readonly profile?: Scenario['profile'];
  /** Faults and moves run in [0, faultPhaseMs); drawn from the seed when absent. */
  readonly faultPhaseMs?: number;
  readonly bugs?: CellsBugs;
  /**
   * Which code moves namespaces. 'real' (default): the control plane's Mover (src/control/mover.ts)
   * through the simulator's doors (real-mover.ts). 'sim': the simulator's own move driver
   * (sim-mover.ts), the same commands in the same order without the mover's machinery.
   */
  readonly mover?: 'real' | 'sim';
  /**
   * The real mover's source feed on the source members' watch hubs (sim-feed.ts); false: none
   * (the mover's fallback, rounds of reads, as every seed ran before session 28: replay lines
   * written before then mean `--no-feed`).
   */
  readonly feed?: boolean;
  /**
   * Off: only the clients' checkers judge (tokens grow, no acknowledged write lost), to show they
   * catch a broken move on their own (teeth); the cells' apply-side checks stay quiet.
   */
  readonly ownerChecks?: boolean;
  /**
   * Checker (4), watchers per namespace on the members' watch hubs (cells-watchers.ts). Off by
   * default: it finds open bugs (docs: the report of the cells world) that fail most seeds.
   */
  readonly watches?: boolean;
  /** A broken watch hub (teeth for checker 4); with it, history reads are cut small (2 events). */
  readonly watchBugs?: WatchBugs;
  /** One line per event when set (each cell's lines name the cell). */
  readonly trace?: (line: string) => void;
  /** Stop after this many steps (all cells and the clients together). */
  readonly stepsMax?: number;
}

export interface CellsStats {
  movesStarted: number;
  movesReleased: number;
  movesAborted: number;
  writesAcknowledged: number;
  writesUnknown: number;
  writesRefused: number;
  casFailed: number;
  lockGrants: number;
  /** wrong_cell answers the routing layer followed (cache corrected, retried at once). */
  wrongCellFollowed: number;
  /** Refusals of a landing destination (503, retried shortly). */
  landingRetries: number;
  crashes: number;
  elections: number;
  /** Watches a move ended at its fence (wrong_cell) and that resumed at the new owner. */
  watchesEndedByMoves: number;
  /** Watches a new owner refused at its floor (compacted: the source holds those events), read again. */
  watchRereads: number;
  /** Writes of unknown outcome sent again with the same Request-ID, and those answered. */
  writesRetried: number;
  retriesAnswered: number;
}

export interface CellsResult {
  readonly seed: bigint;
  readonly violations: readonly Violation[];
  readonly steps: number;
  readonly timeMs: number;
  readonly faultPhaseMs: number;
  readonly stats: CellsStats;
  /** Each move's write window (fence asked -> landing applied), simulated ms. */
  readonly windowsMs: readonly number[];
}

export function emptyCellsStats(): CellsStats {
  return {
    movesStarted: 0, movesReleased: 0, movesAborted: 0, writesAcknowledged: 0, writesUnknown: 0, writesRefused: 0,
    casFailed: 0, lockGrants: 0, wrongCellFollowed: 0, landingRetries: 0, crashes: 0, elections: 0, watchesEndedByMoves: 0, watchRereads: 0,
    writesRetried: 0, retriesAnswered: 0,
  };
}
