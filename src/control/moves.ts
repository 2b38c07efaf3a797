// Durable move records (docs/design/cells.md, "Moving a namespace"), kept in the cell map itself:
// every step of a move is one compare-and-set of the map, so the routing flip and the record
// saying "flipped" are one atomic change, and a control-plane leader that crashes resumes from
// the phase the record holds. Pure: the mover (mover.ts) computes each step with these.
//
//   copying -> catching-up -> fenced -> flipped -> released
//      \------------\-------------\--> aborted   (abortable until the flip)
import { InvalidArgumentError, KeyNotFoundError, PreconditionFailedError } from '../base/errors.js';
import { rootNamespace } from '../base/namespaces.js';
import type { CellMap, MapNamespace } from './cell-map.js';

export type MovePhase = 'copying' | 'catching-up' | 'fenced' | 'flipped' | 'released' | 'aborted';
const phases: readonly MovePhase[] = ['copying', 'catching-up', 'fenced', 'flipped', 'released', 'aborted'];

export interface MoveRecord {
  /** The map epoch that started it: unique per map. */
  readonly id: number;
  readonly prefix: string;
  readonly from: string;
  readonly to: string;
  readonly phase: MovePhase;
  readonly startedAtMs: number;
  readonly updatedAtMs: number;
  /** The source revision the copy was read at. */
  readonly copyRevision?: number;
  /**
   * The source's revision read after the fence applied: every write the source accepted for the
   * namespace is at or below it; the destination's revision floor. A watcher of the namespace
   * resumes on the destination from fenceRevision + 1 (docs/design/cells.md, revisions).
   */
  readonly fenceRevision?: number;
  /** Fence applied on the source -> the destination's table applied (the write window), ms. */
  readonly windowMs?: number;
  /** Where the window's time went, ms: fence, lastChanges, flip, destinationTable (src/control/mover.ts). */
  readonly windowParts?: Readonly<Record<string, number>>;
  /** Aborted or released: whether the leftover keys (destination / source) were removed. */
  readonly cleaned?: boolean;
  readonly error?: string;
  /**
   * Why the move waits before its fence (member-builds.ts: a member of either cell on an older
   * build); cleared when it fences. The source stays writable and the catch-up goes on meanwhile.
   */
  readonly blocked?: string;
  /**
   * The destination's dedup clock read before the fence (the mover, mover.ts): the flip gives it
   * to the namespace's entry as `arrivedFrom` (cell-map.ts).
   */
  readonly destinationClockMs?: number;
  /**
   * Set at the start when the namespace last arrived on its source from this move's destination:
   * the source's Request-ID records are listed from this stamp on (the destination holds every
   * earlier one already). Absent: all of them.
   */
  readonly requestsFromMs?: number;
}

/** Finished records kept in the map (for `ns show`); older ones are dropped. */
const finishedMovesKept = 16;

export function parseMoves(raw: unknown): MoveRecord[] {
  if (!Array.isArray(raw)) return [];
  return (raw as Record<string, unknown>[]).map((m) => {
    const phase = phases.includes(m['phase'] as MovePhase) ? (m['phase'] as MovePhase) : 'aborted';
    const record: Record<string, unknown> = {
      id: Number(m['id']), prefix: String(m['prefix']), from: String(m['from']), to: String(m['to']), phase,
      startedAtMs: Number(m['startedAtMs']), updatedAtMs: Number(m['updatedAtMs']),
    };
    for (const field of ['copyRevision', 'fenceRevision', 'windowMs', 'destinationClockMs', 'requestsFromMs']) if (typeof m[field] === 'number') record[field] = m[field];
    if (typeof m['cleaned'] === 'boolean') record['cleaned'] = m['cleaned'];
    const parts = m['windowParts'];
    if (parts !== null && typeof parts === 'object' && !Array.isArray(parts)) {
      record['windowParts'] = Object.fromEntries(Object.entries(parts as Record<string, unknown>).filter(([, v]) => typeof v === 'number'));
    }
    for (const field of ['error', 'blocked']) if (typeof m[field] === 'string') record[field] = m[field];
    return record as unknown as MoveRecord;
  });
}

export function isOpen(move: MoveRecord): boolean {
  return move.phase === 'copying' || move.phase === 'catching-up' || move.phase === 'fenced' || move.phase === 'flipped';
}

/** Moves whose mover still has work: open ones, and finished ones not cleaned up yet. */
export function movesToDrive(map: CellMap): MoveRecord[] {
  return (map.moves ?? []).filter((m) => isOpen(m) || m.cleaned === false);
}

/** The latest move of `prefix` (open or finished), if any. */
export function latestMove(map: CellMap, prefix: string): MoveRecord | undefined {
  return [...(map.moves ?? [])].reverse().find((m) => m.prefix === prefix);
}

/** Starts moving `prefix` to cell `to`: the namespace becomes 'moving' (routing unchanged). */
export function withMoveStarted(map: CellMap, prefix: string, to: string, nowMs: number): CellMap {
  const entry = map.namespaces.find((n) => n.prefix === prefix);
  if (entry === undefined) throw new KeyNotFoundError(`no namespace ${prefix}`, { namespace: prefix });
  if (prefix === rootNamespace) throw new InvalidArgumentError('the root namespace / cannot be moved: create and move namespaces under it');
  if (!map.cells.some((c) => c.id === to)) throw new KeyNotFoundError(`no cell ${to} in the cell map`, { cell: to });
  if (entry.cell === to) throw new InvalidArgumentError(`namespace ${prefix} is on ${to} already`);
  const open = (map.moves ?? []).find((m) => isOpen(m) && (m.prefix.startsWith(prefix) || prefix.startsWith(m.prefix)));
  if (open !== undefined) throw new PreconditionFailedError(`a move of ${open.prefix} is open (${open.phase})`, { move: open });
  // Namespaces nested in it stay where they are: the move copies and clears its own keys only
  // (ownSpans), and none may be created or moved while it moves (the open-move check above,
  // cell-map.ts withNamespace).
  const epoch = map.epoch + 1;
  // Back to where it came from: that cell holds every Request-ID record stamped here before its arrival.
  const requestsFrom = entry.arrivedFrom?.cell === to ? { requestsFromMs: entry.arrivedFrom.requestsFromMs } : {};
  const move: MoveRecord = { id: epoch, prefix, from: entry.cell, to, phase: 'copying', startedAtMs: nowMs, updatedAtMs: nowMs, ...requestsFrom };
  return {
    ...map,
    epoch,
    namespaces: map.namespaces.map((n) => (n.prefix === prefix ? { ...n, state: 'moving' as const } : n)),
    moves: keepBounded([...(map.moves ?? []), move]),
  };
}

const next: Partial<Record<MovePhase, MovePhase>> = { copying: 'catching-up', 'catching-up': 'fenced', fenced: 'flipped', flipped: 'released' };

/**
 * Moves record `id` from phase `from` to the next phase with `fields`. The flip also assigns the
 * namespace to the destination under a new epoch (the routing change: one compare-and-set).
 * A record no longer in `from` (aborted meanwhile, or advanced by another leader) is 412.
 */
export function withMoveAdvanced(map: CellMap, id: number, from: MovePhase, fields: Partial<MoveRecord>, nowMs: number): CellMap {
  const move = (map.moves ?? []).find((m) => m.id === id);
  if (move === undefined) throw new KeyNotFoundError(`no move ${id}`);
  if (move.phase !== from) throw new PreconditionFailedError(`move ${id} of ${move.prefix} is ${move.phase}, not ${from}`, { move });
  const phase = next[from];
  if (phase === undefined) throw new InvalidArgumentError(`a move in phase ${from} has no next phase`);
  const epoch = map.epoch + 1;
  const { blocked: _, ...unblocked } = move;
  const updated: MoveRecord = { ...unblocked, ...(phase === 'released' ? { cleaned: false } : {}), ...fields, phase, updatedAtMs: nowMs };
  const clockMs = updated.destinationClockMs;
  const arrivedFrom = clockMs === undefined ? {} : { arrivedFrom: { cell: move.from, requestsFromMs: clockMs } };
  const namespaces = phase !== 'flipped' ? map.namespaces : map.namespaces.map((n): MapNamespace => (
    n.prefix === move.prefix ? { prefix: n.prefix, cell: move.to, epoch, state: 'active', ...arrivedFrom } : n
  ));
  return { ...map, epoch, namespaces, moves: (map.moves ?? []).map((m) => (m.id === id ? updated : m)) };
}

/**
 * Notes why move `id` (still in phase `from`) waits (null: it no longer does). The map's epoch
 * stays: no table changes, so no cell is pushed anything and the mover's imports stay current.
 */
export function withMoveBlocked(map: CellMap, id: number, from: MovePhase, reason: string | null): CellMap {
  const move = (map.moves ?? []).find((m) => m.id === id);
  if (move === undefined || move.phase !== from || (move.blocked ?? null) === reason) return map;
  const { blocked: _, ...rest } = move;
  const updated: MoveRecord = reason === null ? rest : { ...rest, blocked: reason };
  return { ...map, moves: (map.moves ?? []).map((m) => (m.id === id ? updated : m)) };
}

/** Records that a finished move's leftover keys are gone (no map epoch change: tables unchanged). */
export function withMoveCleaned(map: CellMap, id: number, nowMs: number): CellMap {
  const move = (map.moves ?? []).find((m) => m.id === id);
  if (move === undefined || move.cleaned !== false) return map;
  return { ...map, epoch: map.epoch + 1, moves: (map.moves ?? []).map((m) => (m.id === id ? { ...m, cleaned: true, updatedAtMs: nowMs } : m)) };
}

/** Aborts the open move of `prefix` (before the flip only): the source is unfenced by the new table. */
export function withMoveAborted(map: CellMap, prefix: string, reason: string, nowMs: number): CellMap {
  const move = (map.moves ?? []).find((m) => m.prefix === prefix && isOpen(m));
  if (move === undefined) throw new KeyNotFoundError(`no open move of ${prefix}`, { namespace: prefix });
  if (move.phase === 'flipped') throw new PreconditionFailedError(`the move of ${prefix} is past its flip: it only completes now`, { move });
  return {
    ...map,
    epoch: map.epoch + 1,
    namespaces: map.namespaces.map((n) => (n.prefix === prefix ? { ...n, state: 'active' as const } : n)),
    moves: (map.moves ?? []).map((m) => (m.id === move.id ? { ...m, phase: 'aborted' as const, cleaned: false, error: reason, updatedAtMs: nowMs } : m)),
  };
}

function keepBounded(moves: MoveRecord[]): MoveRecord[] {
  const finished = moves.filter((m) => !isOpen(m) && m.cleaned !== false);
  const drop = new Set(finished.slice(0, Math.max(0, finished.length - finishedMovesKept)));
  return moves.filter((m) => !drop.has(m));
}
