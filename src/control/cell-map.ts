// The cell map the control plane keeps (docs/design/cells.md): cells with their members' client
// URLs, and namespaces assigned to cells under routing epochs. Pure: every change is a function of
// the map read, written back with a compare-and-set, so two control requests never interleave.
// The map's `epoch` counts its changes; a namespace's epoch is the map epoch of its last
// assignment change, so it only grows and a table cut from a newer map always wins.
import { InvalidArgumentError, KeyNotFoundError, PreconditionFailedError } from '../base/errors.js';
import type { MoveRecord } from './moves.js';
import { isOpen, parseMoves } from './moves.js';
import { namespaceOf, namespaceProblem, namespacesMax, nestedNamespaces, rootNamespace } from '../base/namespaces.js';

export interface MapCell {
  readonly id: string;
  readonly endpoints: readonly string[];
}

export interface MapNamespace {
  readonly prefix: string;
  readonly cell: string;
  readonly epoch: number;
  /** 'active': assigned and serving; 'moving': a move to another cell is open (moves.ts). */
  readonly state: 'active' | 'moving';
  /**
   * Set by a move's flip (moves.ts): the cell it came from, and this cell's dedup clock read before
   * the fence. Every Request-ID record of the namespace this cell stamped earlier, the cell it came
   * from holds too (or let expire), so a move back there lists only those stamped from it on
   * (docs/design/cells.md, "Request-IDs across a move"). Any other change of the assignment drops it.
   */
  readonly arrivedFrom?: { readonly cell: string; readonly requestsFromMs: number };
}

export interface CellMap {
  readonly epoch: number;
  readonly cells: readonly MapCell[];
  readonly namespaces: readonly MapNamespace[];
  /** Durable move records (moves.ts): open ones and the last finished ones. */
  readonly moves?: readonly MoveRecord[];
}

export const emptyCellMap: CellMap = { epoch: 0, cells: [], namespaces: [] };
const cellIdPattern = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const cellsMax = 256;

/** Adds a cell, or replaces a known cell's endpoints. The first cell gets the root namespace. */
export function withCell(map: CellMap, cell: MapCell): CellMap {
  if (!cellIdPattern.test(cell.id)) throw new InvalidArgumentError(`a cell id is 1..64 letters, digits, '.', '_' or '-': ${JSON.stringify(cell.id)}`);
  if (cell.endpoints.length === 0 || cell.endpoints.length > 16) throw new InvalidArgumentError('a cell needs 1..16 endpoints');
  for (const endpoint of cell.endpoints) {
    if (!/^https?:\/\/[^/\s]+$/.test(endpoint)) throw new InvalidArgumentError(`an endpoint is a URL like http://host:port: ${JSON.stringify(endpoint)}`);
  }
  const known = map.cells.find((c) => c.id === cell.id);
  // The same cell again (a dev restart registering it anew) changes nothing.
  if (known !== undefined && known.endpoints.join(',') === cell.endpoints.join(',')) return map;
  const others = map.cells.filter((c) => c.id !== cell.id);
  if (others.length >= cellsMax) throw new InvalidArgumentError(`at most ${cellsMax} cells`);
  const epoch = map.epoch + 1;
  const namespaces = map.namespaces.length === 0 ? [{ prefix: rootNamespace, cell: cell.id, epoch, state: 'active' as const }] : map.namespaces;
  return { epoch, cells: [...others, { id: cell.id, endpoints: [...cell.endpoints] }].sort(byId), namespaces };
}

export function withNamespace(map: CellMap, prefix: string, cellId: string): CellMap {
  const problem = namespaceProblem(prefix);
  if (problem !== null) throw new InvalidArgumentError(`namespace ${JSON.stringify(prefix)} ${problem}`);
  if (!map.cells.some((c) => c.id === cellId)) throw new KeyNotFoundError(`no cell ${cellId} in the cell map: add it first`, { cell: cellId });
  if (map.namespaces.some((n) => n.prefix === prefix)) {
    throw new PreconditionFailedError(`namespace ${prefix} exists`, { current: namespaceInfo(map, prefix) });
  }
  if (map.namespaces.length >= namespacesMax) throw new InvalidArgumentError(`at most ${namespacesMax} namespaces`);
  const epoch = map.epoch + 1;
  const namespaces = [...map.namespaces, { prefix, cell: cellId, epoch, state: 'active' as const }].sort(byPrefix);
  // A namespace nested in one that is moving would split the move's key range.
  const moving = openMoveOver(map, prefix);
  if (moving !== undefined) throw new PreconditionFailedError(`namespace ${moving.prefix} is moving: create ${prefix} after the move`, { move: moving });
  return { ...map, epoch, namespaces };
}

/**
 * Removes a namespace: its keys fall to the parent namespace, so only when the parent is on the
 * same cell (else the keys would be stranded on a cell that no longer owns them).
 */
export function withoutNamespace(map: CellMap, prefix: string): CellMap {
  if (prefix === rootNamespace) throw new InvalidArgumentError('the root namespace / cannot be deleted');
  const entry = map.namespaces.find((n) => n.prefix === prefix);
  if (entry === undefined) throw new KeyNotFoundError(`no namespace ${prefix}`, { namespace: prefix });
  if (entry.state === 'moving') throw new PreconditionFailedError(`namespace ${prefix} is moving: delete it after the move`, { current: namespaceInfo(map, prefix) });
  const rest = map.namespaces.filter((n) => n.prefix !== prefix);
  const parent = parentOf(map, prefix);
  if (parent.cell !== entry.cell) {
    throw new PreconditionFailedError(`namespace ${prefix} is on ${entry.cell} but its parent ${parent.prefix} is on ${parent.cell}: its keys would be stranded`, {
      current: namespaceInfo(map, prefix),
    });
  }
  return { ...map, epoch: map.epoch + 1, namespaces: rest };
}

/** The namespace whose keys a new or removed `prefix` takes from or gives back to. */
/** The namespaces nested in `prefix` (their keys are theirs: a move of `prefix` leaves them be). */
export function nestedIn(map: CellMap, prefix: string): string[] {
  return nestedNamespaces(map.namespaces.map((n) => n.prefix), prefix);
}

export function parentOf(map: CellMap, prefix: string): MapNamespace {
  const prefixes = map.namespaces.map((n) => n.prefix).filter((p) => p !== prefix);
  const parent = namespaceOf(prefixes, prefix);
  const found = map.namespaces.find((n) => n.prefix === parent);
  if (found === undefined) throw new KeyNotFoundError('the cell map has no root namespace: add a cell first');
  return found;
}

/** One namespace with its cell's endpoints (ns show, and what wrong_cell details name). */
export function namespaceInfo(map: CellMap, prefix: string): MapNamespace & { endpoints: readonly string[] } {
  const entry = map.namespaces.find((n) => n.prefix === prefix);
  if (entry === undefined) throw new KeyNotFoundError(`no namespace ${prefix}`, { namespace: prefix });
  return { ...entry, endpoints: map.cells.find((c) => c.id === entry.cell)?.endpoints ?? [] };
}

/**
 * An open move of `prefix` or of a namespace `prefix` is nested in (or nested in `prefix`), or one
 * whose old copy is not cleared yet: that clear leaves out the namespaces nested in the moved one
 * as the mover last read the map, so one created meanwhile could lose the keys its own move brought.
 */
export function openMoveOver(map: CellMap, prefix: string): MoveRecord | undefined {
  return (map.moves ?? []).find((m) => (isOpen(m) || m.cleaned === false) && (prefix.startsWith(m.prefix) || m.prefix.startsWith(prefix)));
}

/**
 * The ownership table for one cell (src/mvcc/ownership-record.ts), as deterministic JSON bytes.
 * A namespace whose move is fenced carries `fencedTo` in its source's table only (the fence).
 * Once the move flipped (the map assigns it to the destination) and until it is released, the
 * source keeps it fenced (it still serves reads of it; a new mover may read it again) and the
 * destination holds it `landingFrom` the source: it takes it only with the move's last import,
 * which carries this cell's table cut with `landed` (the landing, one command). Cut with `landed`
 * for the source, the namespace is the destination's (pushed once it landed: no stale reads).
 */
export function ownershipTableOf(map: CellMap, cellId: string, landed?: string): Uint8Array {
  const moves = (map.moves ?? []);
  const fenced = new Map(moves.filter((m) => m.phase === 'fenced' && m.from === cellId).map((m) => [m.prefix, m.to]));
  const flippedAway = new Map(moves.filter((m) => m.phase === 'flipped' && m.from === cellId && m.prefix !== landed).map((m) => [m.prefix, m.to]));
  const landing = new Map(moves.filter((m) => m.phase === 'flipped' && m.to === cellId && m.prefix !== landed).map((m) => [m.prefix, m.from]));
  const table = {
    epoch: map.epoch,
    cell: cellId,
    namespaces: map.namespaces.map((n) => {
      const to = n.cell === cellId ? fenced.get(n.prefix) : undefined;
      if (to !== undefined) return { prefix: n.prefix, cell: n.cell, epoch: n.epoch, fencedTo: to };
      const away = n.cell !== cellId ? flippedAway.get(n.prefix) : undefined;
      // Still this cell's, fenced; its refusals name the destination at the flip's epoch.
      if (away !== undefined) return { prefix: n.prefix, cell: cellId, epoch: n.epoch - 1, fencedTo: away };
      const from = n.cell === cellId ? landing.get(n.prefix) : undefined;
      if (from !== undefined) return { prefix: n.prefix, cell: n.cell, epoch: n.epoch, landingFrom: from };
      return { prefix: n.prefix, cell: n.cell, epoch: n.epoch };
    }),
    cells: map.cells.map((c) => ({ id: c.id, endpoints: c.endpoints })),
  };
  return new TextEncoder().encode(JSON.stringify(table));
}

/** Validates a stored or received map (a router reads it off the wire). */
export function parseCellMap(json: unknown): CellMap {
  const raw = (typeof json === 'object' && json !== null ? json : {}) as Record<string, unknown>;
  const epoch = raw['epoch'];
  if (typeof epoch !== 'number' || !Number.isSafeInteger(epoch) || epoch < 0) throw new InvalidArgumentError('a cell map needs an epoch');
  if (!Array.isArray(raw['cells']) || !Array.isArray(raw['namespaces'])) throw new InvalidArgumentError('a cell map needs cells and namespaces');
  const cells = (raw['cells'] as Record<string, unknown>[]).map((c) => ({
    id: String(c['id']),
    endpoints: Array.isArray(c['endpoints']) ? (c['endpoints'] as unknown[]).map(String) : [],
  }));
  const namespaces = (raw['namespaces'] as Record<string, unknown>[]).map((n): MapNamespace => {
    const entry: MapNamespace = {
      prefix: String(n['prefix']), cell: String(n['cell']), epoch: Number(n['epoch']), state: n['state'] === 'moving' ? 'moving' as const : 'active' as const,
    };
    const arrived = n['arrivedFrom'] as Record<string, unknown> | undefined;
    const fromMs = arrived?.['requestsFromMs'];
    if (typeof arrived?.['cell'] !== 'string' || typeof fromMs !== 'number' || !Number.isSafeInteger(fromMs) || fromMs < 0) return entry;
    return { ...entry, arrivedFrom: { cell: arrived['cell'], requestsFromMs: fromMs } };
  });
  const moves = parseMoves(raw['moves']);
  return moves.length === 0 ? { epoch, cells, namespaces } : { epoch, cells, namespaces, moves };
}

const byId = (a: MapCell, b: MapCell): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
const byPrefix = (a: MapNamespace, b: MapNamespace): number => (a.prefix < b.prefix ? -1 : a.prefix > b.prefix ? 1 : 0);
