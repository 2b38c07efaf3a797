// The control plane of the cells world: a cell of its own (a Raft group of three, under its own
// nemesis) whose state is the cell map in one key, changed as control-service.ts changes it: a
// linearizable read, the next map computed with the control plane's pure functions
// (src/control/cell-map.ts, moves.ts), written back by a txn comparing the key's modRevision.
// Tables cut by ownershipTableOf are pushed to the data cells as ownershipSet commands; a
// reconciler pushes the last written map to every cell not known to hold its epoch (100 ms).
import { BatonError, PreconditionFailedError, UnavailableError } from '../../base/errors.js';
import { ownershipTableOf, parseCellMap, type CellMap } from '../../control/cell-map.js';
import { fromUtf8, utf8 } from '../../mvcc/index.js';
import type { CellsLoop } from './cells-loop.js';
import type { SimCell } from './sim-cell.js';
import type { CellsBugs } from './types.js';

const reconcileEveryMs = 100;
const pushRetryMs = 20;
/** The control plane's one key (as src/control/control-service.ts keeps it). */
export const mapKey = '/baton/control/map';
/** How long one change may keep failing (no leader, lost answers) before it throws. */
const changeWaitMs = 30_000;

export class SimControl {
  /** The map's epoch each cell is known to hold (from push answers). */
  private readonly heldEpoch = new Map<string, number>();
  private readonly pushing = new Set<string>();
  private changes = 0;

  constructor(
    /** The map as last written (or read) on the control cell: what routers and the reconciler use. */
    public map: CellMap,
    readonly cells: ReadonlyMap<string, SimCell>,
    private readonly loop: CellsLoop,
    private readonly bugs: CellsBugs,
    private readonly controlCell: SimCell,
  ) {}

  /** Writes the first map (the setup). */
  async bootstrap(): Promise<void> {
    await this.change(() => this.map);
  }

  /**
   * One change: read the map, compute `next` of it, write it if the key is unchanged since the
   * read. A lost answer is settled by the next read (the map written is there, or not: `next` of
   * a map already changed throws, as a second advance of a move record does).
   */
  async change(next: (map: CellMap) => CellMap): Promise<CellMap> {
    const deadline = this.loop.nowMs + changeWaitMs;
    let tried: string | null = null;
    for (;;) {
      if (this.loop.nowMs > deadline) throw new Error(`the control cell took no change of the map in ${changeWaitMs} ms`);
      const read = await this.readMap();
      if (read === null) {
        await this.loop.sleep(pushRetryMs);
        continue;
      }
      if (tried !== null && read.text === tried) return this.wrote(read.map);
      const wanted = next(read.map);
      tried = JSON.stringify(wanted);
      const answer = await this.controlCell.propose({
        type: 'txn',
        compare: [{ key: mapKey, target: 'modRevision', op: '==', value: read.modRevision }],
        success: [{ type: 'put', key: mapKey, value: utf8(tried) }],
        failure: [],
      }, `map-${++this.changes}`);
      if (answer.kind === 'applied' && answer.outcome.result.type === 'txn' && answer.outcome.result.succeeded) return this.wrote(wanted);
      if (answer.kind === 'refused') throw answer.error;
      await this.loop.sleep(pushRetryMs);
    }
  }

  /** The map and its modRevision as the control cell holds them (linearizable); null: no read served. */
  async read(): Promise<{ map: CellMap; modRevision: number } | null> {
    const read = await this.readMap();
    return read === null ? null : { map: read.map, modRevision: read.modRevision };
  }

  /**
   * ControlService.changeFrom's semantics, for the control plane's own Mover: up to 8 compare-and-
   * sets from `known` or a fresh read; an unknown outcome throws (as a node's txn times out), and
   * the mover's next round reads the record again.
   */
  async changeOnce(known: { map: CellMap; modRevision: number } | null, change: (map: CellMap) => CellMap): Promise<{ map: CellMap; modRevision: number }> {
    let current = known;
    for (let attempt = 0; attempt < 8; attempt++) {
      const read = current ?? (await this.read());
      current = null;
      if (read === null) throw new UnavailableError('the control cell served no read of the map');
      const next = change(read.map);
      if (next === read.map) return read;
      const answer = await this.controlCell.propose({
        type: 'txn',
        compare: [{ key: mapKey, target: 'modRevision', op: '==', value: read.modRevision }],
        success: [{ type: 'put', key: mapKey, value: utf8(JSON.stringify(next)) }],
        failure: [],
      }, `map-${++this.changes}`);
      if (answer.kind === 'refused') throw answer.error;
      if (answer.kind !== 'applied' || answer.outcome.result.type !== 'txn') throw new UnavailableError(`a change of the map: ${answer.kind}`);
      if (answer.outcome.result.succeeded) return { map: this.wrote(next), modRevision: answer.outcome.result.revision };
    }
    throw new PreconditionFailedError('the cell map changed under 8 attempts in a row: try again');
  }

  private wrote(map: CellMap): CellMap {
    this.map = map;
    this.loop.note(`map epoch ${map.epoch}: ${JSON.stringify(map.namespaces.map((n) => `${n.prefix}@${n.cell}`))} ${JSON.stringify((map.moves ?? []).filter((m) => m.cleaned !== true).map((m) => `${m.prefix}:${m.phase}`))}`);
    return map;
  }

  /** The map and its key's modRevision, read linearizably on the control cell (empty before the setup). */
  private async readMap(): Promise<{ map: CellMap; text: string; modRevision: number } | null> {
    const read = await this.controlCell.readNamespace(mapKey);
    if (read === null) return null;
    const kv = read.kvs.find((k) => k.key === mapKey);
    if (kv === undefined) return { map: this.map, text: '', modRevision: 0 };
    const text = fromUtf8(kv.value);
    const map = parseCellMap(JSON.parse(text));
    // A change whose answer was lost shows here: the cached map catches up (epochs only grow).
    if (map.epoch > this.map.epoch) this.map = map;
    return { map, text, modRevision: kv.modRevision };
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
    const pushed = await this.push(map, cellId, landed);
    return pushed === 'newer' ? 0 : pushed;
  }

  /** As pushOnce, telling a cell at revision 0 from one holding a newer table ('newer'). */
  async push(map: CellMap, cellId: string, landed?: string): Promise<number | 'newer' | null> {
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
        return 'newer';
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
