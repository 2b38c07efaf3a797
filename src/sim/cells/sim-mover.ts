// The move driver of the cells world. Not the control plane's Mover (src/control/mover.ts, whose
// I/O is HTTP, an SSE feed and the control cell's kv): it issues the same state-machine commands
// in the same order, with the same pure map steps (moves.ts) and tables (ownershipTableOf):
//
//   copying      read the namespace on the source (linearizable), import it on the destination
//                (clear, floor = the read's revision, the map's epoch)
//   catching-up  rounds of read + difference imported (floor = each read's revision)
//   fenced       the source applies the fenced table (refuses writes from that entry on); a read
//                after it holds every write the source accepted; its revision is the fence's
//   flipped      the map assigns the namespace to the destination (epoch + 1); the landing
//                import: the last changes, floor max(fence, read), and the destination's table
//                owning the namespace, one command
//   released     the source gets a table without it, and its copy is cleared (an import, clear)
//   aborted      before the fence applied only: the source unfenced, the destination's copy cleared
//
// Not here (the real mover's): catch-up through a watch of the source, Request-ID records and
// leases carried across (the workload uses neither across a move), the build gate.
import { encodeImportRecord, type ImportedKey } from '../../base/namespace-import.js';
import { withMoveAborted, withMoveAdvanced, withMoveCleaned, withMoveStarted } from '../../control/moves.js';
import type { Random } from '../../base/random.js';
import { pick, randomInt } from '../../base/random.js';
import type { CellsLoop } from './cells-loop.js';
import type { NamespaceRead, SimCell } from './sim-cell.js';
import type { SimControl } from './sim-control.js';
import type { CellsBugs, CellsStats } from './types.js';

const catchUpRounds = 2;
/** How long a step before the fence may keep failing before the move aborts. */
const beforeFenceMs = 3_000;
/** After the fence it only rolls forward: each step tries this long, then again from the record. */
const stepWaitMs = 4_000;
const retryMs = 20;

export class SimMover {
  readonly windowsMs: number[] = [];
  /** The move in progress (one at a time), for the end of the run to wait on. */
  busy = false;
  private moveCount = 0;

  constructor(
    private readonly control: SimControl,
    private readonly loop: CellsLoop,
    private readonly random: Random,
    private readonly stats: CellsStats,
    private readonly bugs: CellsBugs,
  ) {}

  /** Moves namespaces back and forth, one at a time, until `untilMs`. */
  async run(untilMs: number): Promise<void> {
    while (this.loop.nowMs < untilMs) {
      await this.loop.sleep(randomInt(this.random, 20, 250));
      if (this.loop.nowMs >= untilMs) return;
      const map = this.control.map;
      const moved = pick(this.random, map.namespaces.filter((n) => n.prefix !== '/'));
      const to = pick(this.random, [...this.control.cells.keys()].filter((id) => id !== moved.cell));
      this.busy = true;
      try {
        await this.move(moved.prefix, to);
      } catch (error) {
        // Not started (the control cell took no change): nothing to undo; try another later.
        this.loop.note(`move of ${moved.prefix} to ${to} not started: ${(error as Error).message}`);
      } finally {
        this.busy = false;
      }
    }
  }

  private floor(revision: number): number {
    return this.bugs.skipFloor === true ? 0 : revision;
  }

  async move(prefix: string, to: string): Promise<void> {
    const started = await this.control.change((map) => withMoveStarted(map, prefix, to, this.loop.nowMs));
    const record = (started.moves ?? []).find((m) => m.prefix === prefix && m.phase === 'copying');
    if (record === undefined) throw new Error(`the move of ${prefix} has a record`);
    const id = record.id;
    const tag = `m${++this.moveCount}`;
    this.stats.movesStarted++;
    const source = this.cell(record.from);
    const destination = this.cell(to);
    const copied = new Map<string, number>();
    const fenceAskedMs = { at: 0 };
    try {
      // copying and catching-up: nothing is refused to anyone yet; any failure aborts.
      const deadline = this.loop.nowMs + beforeFenceMs;
      let read = await this.readUntil(source, prefix, deadline);
      await this.importUntil(destination, tag + '-copy', { prefix, clear: true, puts: read.kvs, deletes: [], floor: read.revision, epoch: started.epoch }, deadline);
      for (const kv of read.kvs) copied.set(kv.key, kv.modRevision);
      let map = await this.control.change((m) => withMoveAdvanced(m, id, 'copying', { copyRevision: read.revision }, this.loop.nowMs));
      for (let round = 0; round < catchUpRounds; round++) {
        read = await this.readUntil(source, prefix, deadline);
        const { puts, deletes } = difference(read, copied);
        await this.importUntil(destination, `${tag}-catch${round}`, { prefix, clear: false, puts, deletes, floor: read.revision, epoch: map.epoch }, deadline);
        remember(copied, puts, deletes);
      }
      // fenced: the source applies the fence (a committed step); from here the move rolls forward.
      map = await this.control.change((m) => withMoveAdvanced(m, id, 'catching-up', {}, this.loop.nowMs));
      fenceAskedMs.at = this.loop.nowMs;
      const fenceRevision = await this.control.pushUntil(map, source.id, beforeFenceMs);
      this.loop.note(`move ${tag} of ${prefix}: fence applied on ${source.id} at revision ${fenceRevision}`);
      void this.control.pushOnce(map, destination.id).catch(() => {});
      // Read after the fence applied there: every write the source accepted is in it.
      read = await this.readUntil(source, prefix, this.loop.nowMs + stepWaitMs * 4);
      const floor = Math.max(read.revision, fenceRevision);
      const last = difference(read, copied);
      // flipped: the commit point; the landing brings the last changes, the floor and the table.
      map = await this.control.change((m) => withMoveAdvanced(m, id, 'fenced', { fenceRevision: floor }, this.loop.nowMs));
      const own = new TextDecoder().decode(this.control.tableOf(map, to, prefix));
      await this.importUntil(destination, tag + '-land', { prefix, clear: false, puts: last.puts, deletes: last.deletes, floor, fence: fenceRevision, epoch: map.epoch, own }, this.loop.nowMs + stepWaitMs * 4);
      this.windowsMs.push(this.loop.nowMs - fenceAskedMs.at);
      void this.control.pushOnce(map, source.id, prefix).catch(() => {});
      // released: the source's table loses it, then its copy goes.
      map = await this.control.change((m) => withMoveAdvanced(m, id, 'flipped', { windowMs: this.loop.nowMs - fenceAskedMs.at }, this.loop.nowMs));
      await this.control.pushUntil(map, source.id, stepWaitMs * 4);
      await this.importUntil(source, tag + '-release', { prefix, clear: true, puts: [], deletes: [], floor: 0 }, this.loop.nowMs + stepWaitMs * 4);
      await this.control.change((m) => withMoveCleaned(m, id, this.loop.nowMs));
      this.stats.movesReleased++;
      this.loop.note(`move ${tag} of ${prefix} ${source.id} -> ${to} released, fence revision ${floor}`);
    } catch (error) {
      const phase = this.control.map.moves?.find((m) => m.id === id)?.phase;
      if (phase === 'flipped' || phase === 'released') {
        // Past the fence a move only completes: a driver that cannot finish it is a liveness failure.
        this.loop.report('move liveness', `move ${tag} of ${prefix} to ${to} stuck after its fence: ${(error as Error).message}`);
        return;
      }
      await this.abort(id, tag, prefix, source, destination, (error as Error).message);
    }
  }

  /** Before the flip: the source unfenced by a newer table, the destination's copy cleared. */
  private async abort(id: number, tag: string, prefix: string, source: SimCell, destination: SimCell, why: string): Promise<void> {
    const map = await this.control.change((m) => withMoveAborted(m, prefix, why, this.loop.nowMs));
    this.stats.movesAborted++;
    this.loop.note(`move ${tag} of ${prefix} aborted: ${why}`);
    const until = this.loop.nowMs + stepWaitMs * 4;
    try {
      await this.control.pushUntil(map, source.id, stepWaitMs * 4);
      await this.importUntil(destination, tag + '-abort', { prefix, clear: true, puts: [], deletes: [], floor: 0 }, until);
      await this.control.change((m) => withMoveCleaned(m, id, this.loop.nowMs));
    } catch (error) {
      this.loop.report('move liveness', `move ${tag} of ${prefix} could not be rolled back: ${(error as Error).message}`);
    }
  }

  private cell(id: string): SimCell {
    const cell = this.control.cells.get(id);
    if (cell === undefined) throw new Error(`no cell ${id}`);
    return cell;
  }

  private async readUntil(cell: SimCell, prefix: string, deadlineMs: number): Promise<NamespaceRead> {
    for (;;) {
      const read = await cell.readNamespace(prefix);
      if (read !== null) return read;
      if (this.loop.nowMs > deadlineMs) throw new Error(`cell ${cell.id} served no read of ${prefix}`);
      await this.loop.sleep(retryMs);
    }
  }

  /** Proposes one import (one Request-ID across its retries) until applied; a refusal throws. */
  private async importUntil(
    cell: SimCell, requestId: string,
    record: { prefix: string; clear: boolean; puts: readonly ImportedKey[]; deletes: readonly string[]; floor: number; epoch?: number; own?: string; fence?: number },
    deadlineMs: number,
  ): Promise<void> {
    const floor = this.floor(record.floor);
    // The source's fence with the landing: watches resumed from fence + 1 are served there (never above the floor sent).
    const fence = record.fence === undefined ? {} : { fence: Math.min(record.fence, floor) };
    const bytes = encodeImportRecord({ ...record, ...fence, floor, leases: [], destination: cell.id });
    for (;;) {
      const answer = await cell.propose({ type: 'importKeys', record: bytes }, requestId);
      if (answer.kind === 'applied') return;
      this.loop.note(`import ${requestId} on ${cell.id}: ${answer.kind}`);
      if (answer.kind === 'refused') throw new Error(`cell ${cell.id} refused import ${requestId}: ${answer.error.message}`);
      if (this.loop.nowMs > deadlineMs) throw new Error(`cell ${cell.id} did not apply import ${requestId}`);
      await this.loop.sleep(retryMs);
    }
  }
}

/** What a read holds that the destination does not (by modRevision), and what it lost. */
function difference(read: NamespaceRead, copied: ReadonlyMap<string, number>): { puts: ImportedKey[]; deletes: string[] } {
  const present = new Set<string>();
  const puts: ImportedKey[] = [];
  for (const kv of read.kvs) {
    present.add(kv.key);
    if (copied.get(kv.key) !== kv.modRevision) puts.push(kv);
  }
  return { puts, deletes: [...copied.keys()].filter((key) => !present.has(key)) };
}

function remember(copied: Map<string, number>, puts: readonly ImportedKey[], deletes: readonly string[]): void {
  for (const key of deletes) copied.delete(key);
  for (const kv of puts) copied.set(kv.key, kv.modRevision);
}
