// The control plane's state and its changes (docs/design/cells.md). The cell map is one reserved
// key of the control cell, changed only by a txn that compares its modRevision with the one it was
// read at: two control requests (on any members) cannot both apply to the same map. After a
// change the map is pushed to every data cell as its ownership table; cells not reached then are
// pushed again by the reconciler on the control cell's leader until each has the map's epoch.
import { InvalidArgumentError, PreconditionFailedError, UnavailableError } from '../base/errors.js';
import { excludeQuery } from './cell-calls.js';
import { emptyCellMap, ownershipTableOf, parseCellMap, type CellMap, type MapCell } from './cell-map.js';

/** Reserved: the cell map's key in the control cell. */
export const cellMapKey = '/baton/control/map';
/** Compare-and-set attempts before a change gives up (each loses only to another change). */
const casAttemptsMax = 8;
const pushTimeoutMs = 2_000;

/** What the control service needs from its cell (CellService). */
export interface ControlCell {
  /** This member's applied state (the reconciler's read: no ReadIndex, no principal). */
  localRange(request: { type: 'get'; key: string }): { kvs: readonly { value: Uint8Array; modRevision: number }[] };
  range(request: { key: string }, options: { consistency: 'linearizable' | 'serializable' }, principal: string): Promise<{
    kvs: readonly { value: Uint8Array; modRevision: number }[];
  }>;
  txn(
    request: {
      compare: readonly { key: string; target: 'modRevision'; op: '=='; value: number }[];
      success: readonly { put: { key: string; value: Uint8Array } }[];
      failure: readonly never[];
    },
    requestId: string | undefined,
    principal: string,
  ): Promise<{ succeeded: boolean; revision: number }>;
}

export interface PushReport {
  /** Cells that hold the map's epoch (or a newer one). */
  readonly pushed: readonly string[];
  /** Cells not reached: the reconciler keeps pushing to them. */
  readonly pending: readonly string[];
}

/** The source's answer to a move's fence (PUT /v1/cluster/ownership?requestsOf=...). */
export interface FenceAnswer {
  /** The namespace's Request-ID records since the asked stamp; null: too many, or not said. */
  readonly requests: unknown[] | null;
  /** The revision the table applied at: at or above the fence (the fence itself if this push fenced). */
  readonly revision: number | null;
  /** Where a watch of the namespace's prefix ends on the source (its fence); absent: not said. */
  readonly watchFence?: number;
  readonly timing?: string;
}

export class ControlService {
  /** The epoch each cell is known to hold (memory only: a new leader pushes once more). */
  private readonly acked = new Map<string, number>();

  constructor(
    private readonly cell: ControlCell,
    private readonly log: { warn(message: string): void } = { warn: () => {} },
  ) {}

  async read(principal: string, consistency: 'linearizable' | 'serializable' = 'linearizable'): Promise<{ map: CellMap; modRevision: number }> {
    let kvs;
    try {
      ({ kvs } = await this.cell.range({ key: cellMapKey }, { consistency }, principal));
    } catch (error) {
      // Before the first change the key does not exist: the empty map (at modRevision 0).
      if ((error as { code?: string }).code === 'key_not_found') return { map: emptyCellMap, modRevision: 0 };
      throw error;
    }
    const kv = kvs[0];
    if (kv === undefined) return { map: emptyCellMap, modRevision: 0 };
    return { map: parseCellMap(JSON.parse(Buffer.from(kv.value).toString('utf8'))), modRevision: kv.modRevision };
  }

  /**
   * One reconciler round (the control cell's leader, on a timer): pushes the map as this member
   * applied it to every cell not known to hold its epoch. Bounded: one push per cell per round.
   */
  async reconcile(): Promise<PushReport> {
    const kv = this.cell.localRange({ type: 'get', key: cellMapKey }).kvs[0];
    if (kv === undefined) return { pushed: [], pending: [] };
    return this.push(parseCellMap(JSON.parse(Buffer.from(kv.value).toString('utf8'))));
  }

  /** The map as this member applied it (no ReadIndex): the mover's cheap "anything to do?". */
  localMap(): CellMap {
    let kv;
    try {
      kv = this.cell.localRange({ type: 'get', key: cellMapKey }).kvs[0];
    } catch (error) {
      if ((error as { code?: string }).code === 'key_not_found') return emptyCellMap;
      throw error;
    }
    return kv === undefined ? emptyCellMap : parseCellMap(JSON.parse(Buffer.from(kv.value).toString('utf8')));
  }

  /** Applies `change` to the current map with a compare-and-set; a lost race reads and tries again. */
  async change(principal: string, change: (map: CellMap) => CellMap): Promise<CellMap> {
    return (await this.changeFrom(principal, null, change)).map;
  }

  /**
   * `change` starting from a map the caller read or wrote (`known`, with its modRevision): the
   * mover's steps skip one linearizable read each (on its critical path: the write window). A
   * stale `known` only loses the compare-and-set, and then the map is read as usual.
   */
  async changeFrom(
    principal: string,
    known: { map: CellMap; modRevision: number } | null,
    change: (map: CellMap) => CellMap,
  ): Promise<{ map: CellMap; modRevision: number }> {
    let current = known;
    for (let attempt = 0; attempt < casAttemptsMax; attempt++) {
      const { map, modRevision } = current ?? (await this.read(principal));
      current = null;
      const next = change(map);
      if (next === map) return { map, modRevision };
      const value = new TextEncoder().encode(JSON.stringify(next));
      const { succeeded, revision } = await this.cell.txn(
        { compare: [{ key: cellMapKey, target: 'modRevision', op: '==', value: modRevision }], success: [{ put: { key: cellMapKey, value } }], failure: [] },
        undefined,
        principal,
      );
      if (succeeded) return { map: next, modRevision: revision };
    }
    throw new PreconditionFailedError(`the cell map changed under ${casAttemptsMax} attempts in a row: try again`);
  }

  /** Pushes the map's ownership table to every cell that does not hold its epoch yet. */
  async push(map: CellMap): Promise<PushReport> {
    const results = await Promise.all(map.cells.map(async (cell) => {
      if ((this.acked.get(cell.id) ?? 0) >= map.epoch) return { id: cell.id, ok: true };
      const ok = await this.pushTo(cell, ownershipTableOf(map, cell.id));
      if (ok) this.acked.set(cell.id, Math.max(map.epoch, this.acked.get(cell.id) ?? 0));
      return { id: cell.id, ok };
    }));
    return { pushed: results.filter((r) => r.ok).map((r) => r.id), pending: results.filter((r) => !r.ok).map((r) => r.id) };
  }

  /**
   * Pushes `map` to one cell only (the mover's critical path: the fence to the source, the flip
   * to the destination); true when the cell holds its epoch. The reconciler brings the others.
   * `landed`: a move's namespace that landed on its destination (cell-map.ts ownershipTableOf).
   */
  async pushOne(map: CellMap, cellId: string, leaderFirst?: MapCell, landed?: string): Promise<boolean> {
    if ((this.acked.get(cellId) ?? 0) >= map.epoch) return true;
    const known = map.cells.find((c) => c.id === cellId);
    if (known === undefined) return false;
    // The caller's order of the same members (its leader first: no forwarding hop).
    const cell = leaderFirst !== undefined && leaderFirst.id === cellId ? { ...known, endpoints: leaderFirst.endpoints } : known;
    const ok = await this.pushTo(cell, ownershipTableOf(map, cell.id, landed));
    if (ok) this.acked.set(cell.id, Math.max(map.epoch, this.acked.get(cell.id) ?? 0));
    return ok;
  }

  /**
   * A move's fence: pushes `map` to the source (always: the answer is wanted) asking for the
   * namespace's Request-ID records as of the table's apply there. Null: not pushed, or the records
   * did not come with the answer (the caller reads them instead).
   */
  async pushFence(map: CellMap, cell: MapCell, requestsOf: { prefix: string; sinceMs: number }): Promise<FenceAnswer | null> {
    const table = ownershipTableOf(map, cell.id);
    const query = `?requestsOf=${encodeURIComponent(requestsOf.prefix)}&requestsSinceMs=${requestsOf.sinceMs}`;
    for (const endpoint of cell.endpoints) {
      try {
        const response = await fetch(`${endpoint}/v1/cluster/ownership${query}`, {
          method: 'PUT', body: table, headers: { 'content-type': 'application/json' }, signal: AbortSignal.timeout(pushTimeoutMs),
        });
        const text = await response.text();
        const body = JSON.parse(text) as { requests?: unknown[] | null; revision?: unknown; appliedInMs?: unknown; requestsInMs?: unknown; watchFence?: unknown };
        if (response.status === 412) return { requests: null, revision: null };
        if (!response.ok) continue;
        this.acked.set(cell.id, Math.max(map.epoch, this.acked.get(cell.id) ?? 0));
        // Where the fence's time went on the source, for the mover's log line (older cells say nothing).
        const timing = typeof body.appliedInMs === 'number'
          ? `source: proposed -> applied ${body.appliedInMs}, records read ${String(body.requestsInMs)} (${Array.isArray(body.requests) ? body.requests.length : 'too many'}, ${Math.round(text.length / 1024)} KiB)`
          : undefined;
        // The revision the table applied at: at or above the fence (the fence itself if this push fenced).
        return {
          requests: Array.isArray(body.requests) ? body.requests : null, revision: typeof body.revision === 'number' ? body.revision : null,
          ...(typeof body.watchFence === 'number' ? { watchFence: body.watchFence } : {}),
          ...(timing === undefined ? {} : { timing }),
        };
      } catch (error) {
        this.log.warn(`ownership push to ${cell.id} at ${endpoint}: ${(error as Error).message}`);
      }
    }
    return null;
  }

  /**
   * Keys under `prefix` on `cell` (a new namespace may not strand keys its parent's cell holds),
   * those of the namespaces `nested` in it left out (theirs, wherever they are).
   */
  async countKeys(cell: MapCell, prefix: string, nested: readonly string[] = []): Promise<number> {
    const path = prefix.split('/').map(encodeURIComponent).join('/');
    for (const endpoint of cell.endpoints) {
      try {
        const response = await fetch(`${endpoint}/v1/kv${path}?prefix=true&countOnly=true${excludeQuery(nested)}`, { signal: AbortSignal.timeout(pushTimeoutMs) });
        const body = (await response.json()) as { count?: unknown; error?: { message?: string } };
        if (response.ok && typeof body.count === 'number') return body.count;
        // A definite no (e.g. cross_cell: namespaces of other cells are nested under the prefix).
        if (response.status >= 400 && response.status < 500) {
          throw new InvalidArgumentError(`cell ${cell.id} cannot count its keys under ${prefix}: ${body.error?.message ?? `HTTP ${response.status}`}`, { cell: cell.id });
        }
      } catch (error) {
        if (error instanceof InvalidArgumentError) throw error;
        // next member
      }
    }
    throw new UnavailableError(`cell ${cell.id} did not answer whether it holds keys under ${prefix}`, { cell: cell.id });
  }

  private async pushTo(cell: MapCell, table: Uint8Array): Promise<boolean> {
    for (const endpoint of cell.endpoints) {
      try {
        const response = await fetch(`${endpoint}/v1/cluster/ownership`, {
          method: 'PUT', body: table, headers: { 'content-type': 'application/json' }, signal: AbortSignal.timeout(pushTimeoutMs),
        });
        await response.arrayBuffer();
        // 412: the cell holds a newer table already (a later push overtook this one).
        if (response.ok || response.status === 412) return true;
        this.log.warn(`ownership push to ${cell.id} at ${endpoint}: HTTP ${response.status}`);
      } catch (error) {
        this.log.warn(`ownership push to ${cell.id} at ${endpoint}: ${(error as Error).message}`);
      }
    }
    return false;
  }
}
