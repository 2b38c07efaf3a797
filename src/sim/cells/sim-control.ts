// The control plane of the cells world: the cell map, changed only with the control plane's own
// pure functions (src/control/cell-map.ts, moves.ts), and pushed to the data cells as
// ownershipSet commands cut by ownershipTableOf, as control-service.ts pushes them. It is one
// deterministic object here, not a Raft group of its own: the map's replication is the control
// cell's ordinary kv (tested elsewhere); what the cells world checks is the data cells' side.
// A reconciler pushes the current map to every cell not known to hold its epoch, every 100 ms.
import { BatonError } from '../../base/errors.js';
import { ownershipTableOf, type CellMap } from '../../control/cell-map.js';
import type { CellsLoop } from './cells-loop.js';
import type { SimCell } from './sim-cell.js';
import type { CellsBugs } from './types.js';

const reconcileEveryMs = 100;
const pushRetryMs = 20;

export class SimControl {
  /** The map's epoch each cell is known to hold (from push answers). */
  private readonly heldEpoch = new Map<string, number>();
  private readonly pushing = new Set<string>();

  constructor(
    public map: CellMap,
    readonly cells: ReadonlyMap<string, SimCell>,
    private readonly loop: CellsLoop,
    private readonly bugs: CellsBugs,
  ) {}

  /** One change of the map (the control plane's compare-and-set always wins here: one writer). */
  change(next: (map: CellMap) => CellMap): CellMap {
    this.map = next(this.map);
    this.loop.note(`map epoch ${this.map.epoch}: ${JSON.stringify(this.map.namespaces.map((n) => `${n.prefix}@${n.cell}`))} ${JSON.stringify((this.map.moves ?? []).filter((m) => m.cleaned !== true).map((m) => `${m.prefix}:${m.phase}`))}`);
    return this.map;
  }

  startReconciler(): void {
    const again = (): void => {
      for (const id of this.cells.keys()) {
        if ((this.heldEpoch.get(id) ?? 0) < this.map.epoch && !this.pushing.has(id)) {
          this.pushing.add(id);
          void this.pushOnce(this.map, id).catch(() => null).then(() => this.pushing.delete(id));
        }
      }
      this.loop.at(this.loop.nowMs + reconcileEveryMs, again);
    };
    again();
  }

  /** `cellId`'s ownership table of `map` (what a push proposes), with the planted bug if any. */
  tableOf(map: CellMap, cellId: string, landed?: string): Uint8Array {
    if (this.bugs.skipFence !== true) return ownershipTableOf(map, cellId, landed);
    // The bug: a move's source keeps the namespace, unfenced, until the move is released.
    const open = (map.moves ?? []).filter((m) => m.from === cellId && (m.phase === 'fenced' || m.phase === 'flipped'));
    if (open.length === 0) return ownershipTableOf(map, cellId, landed);
    const kept = new Set(open.map((m) => m.prefix));
    return ownershipTableOf({
      ...map,
      namespaces: map.namespaces.map((n) => (kept.has(n.prefix) ? { ...n, cell: cellId } : n)),
      moves: (map.moves ?? []).map((m) => (kept.has(m.prefix) && m.from === cellId ? { ...m, phase: 'catching-up' as const } : m)),
    }, cellId);
  }

  /**
   * Proposes `cellId`'s table of `map` once. Returns the revision it applied at (the cell's
   * revision at that entry), 0 when the cell holds a newer table already, null when unknown.
   */
  async pushOnce(map: CellMap, cellId: string, landed?: string): Promise<number | null> {
    const cell = this.cells.get(cellId);
    if (cell === undefined) throw new Error(`no cell ${cellId}`);
    const answer = await cell.propose({ type: 'ownershipSet', record: this.tableOf(map, cellId, landed) }, undefined);
    if (answer.kind === 'applied') {
      const result = answer.outcome.result;
      if (result.type !== 'ownershipSet') throw new Error('an ownershipSet answers ownershipSet');
      this.noteHeld(cellId, result.epoch);
      return result.revision;
    }
    if (answer.kind === 'refused') {
      const current = answer.error instanceof BatonError ? answer.error.details['current'] : undefined;
      if (answer.error.code === 'precondition_failed' && typeof current === 'number') {
        this.noteHeld(cellId, current);
        return 0;
      }
      throw answer.error;
    }
    return null;
  }

  /** Pushes until the cell applied it (or holds newer); throws after `waitMs`. */
  async pushUntil(map: CellMap, cellId: string, waitMs: number, landed?: string): Promise<number> {
    const deadline = this.loop.nowMs + waitMs;
    for (;;) {
      const revision = await this.pushOnce(map, cellId, landed);
      if (revision !== null) return revision;
      if (this.loop.nowMs > deadline) throw new Error(`cell ${cellId} did not take the table of epoch ${map.epoch}`);
      await this.loop.sleep(pushRetryMs);
    }
  }

  private noteHeld(cellId: string, epoch: number): void {
    this.heldEpoch.set(cellId, Math.max(this.heldEpoch.get(cellId) ?? 0, epoch));
  }
}
