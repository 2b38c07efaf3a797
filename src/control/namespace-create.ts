// Creating a namespace (docs/design/cells.md, "Creating P on cell C"). On its parent's cell the
// creation is one change of the map. On another cell it is a move of an empty range: until the new
// table applies on the parent's cell D, the keys under P are D's, and a write under P reaching D
// between a check and D applying the table would stay on D, owned by nobody (the creation race).
// So one compare-and-set creates P on D and opens its move to C; the mover copies, fences, flips
// and lands it like any move, and a write that raced the creation moves with P instead of being
// stranded. The answer comes once the move is released (or aborted, undone).
import { InvalidArgumentError, UnavailableError } from '../base/errors.js';
import { namespaceInfo, nestedIn, parentOf, withNamespace, withoutNamespace, type CellMap, type MapCell } from './cell-map.js';
import type { ControlService } from './control-service.js';
import { checkMoveBuilds, protocolNeeded } from './member-builds.js';
import { isOpen, latestMove, withMoveStarted, type MoveRecord } from './moves.js';

export interface CreateOptions {
  /** How long the answer waits for the creation's move; past it, it answers with the move open. */
  readonly waitMs: number;
  readonly pollMs: number;
  readonly nowMs: () => number;
  readonly sleep: (ms: number) => Promise<void>;
  /** The move build gate (member-builds.ts): every member of both cells must take landing imports. */
  readonly checkBuilds: (cells: readonly MapCell[], needed: number) => Promise<void>;
}

export const defaultCreateOptions: CreateOptions = {
  waitMs: 10_000, // under the CLI's 15 s per call (src/cli/cells-commands.ts)
  pollMs: 50,
  nowMs: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  checkBuilds: (cells, needed) => checkMoveBuilds(cells, 'refuse', needed),
};

export interface Created {
  readonly map: CellMap;
  /** The creation's move: released, or still open when the wait ran out. */
  readonly move?: MoveRecord;
}

export async function createNamespace(
  control: ControlService,
  principal: string,
  prefix: string,
  cellId: string,
  options: CreateOptions = defaultCreateOptions,
): Promise<Created> {
  const before = (await control.read(principal)).map;
  withNamespace(before, prefix, cellId); // the request's own errors before any cell is asked
  const parent = parentOf(before, prefix);
  // The parent's own cell: nothing changes hands.
  if (parent.cell === cellId) return { map: await control.change(principal, (current) => withNamespace(current, prefix, cellId)) };
  // A namespace with keys is moved, not created: a quick answer for the common mistake. A write
  // racing past this check is carried by the move below. Keys of namespaces nested in P are
  // theirs: neither counted nor moved (the move leaves them where they are).
  const nested = nestedIn(before, prefix);
  await refuseKeys(control, before, parent.cell, parent.prefix, prefix, nested);
  await options.checkBuilds([parent.cell, cellId].map((id) => before.cells.find((c) => c.id === id) as MapCell), protocolNeeded(nested));
  const started = await control.change(principal, (current) => {
    const home = parentOf(current, prefix).cell;
    const created = withNamespace(current, prefix, home);
    return home === cellId ? created : withMoveStarted(created, prefix, cellId, options.nowMs());
  });
  const move = latestMove(started, prefix);
  if (move === undefined || move.to !== cellId) return { map: started }; // the parent moved to cellId meanwhile
  await control.push(started); // the parent's cell learns P (still its own, moving) at once
  const deadline = options.nowMs() + options.waitMs;
  for (;;) {
    const { map } = await control.read(principal);
    const now = (map.moves ?? []).find((m) => m.id === move.id);
    // Released and its old copy cleared: until then no namespace may be created in it (cell-map.ts).
    if (now === undefined || (now.phase === 'released' && now.cleaned !== false)) return now === undefined ? { map } : { map, move: now };
    if (now.phase === 'aborted') {
      // Undo: P goes back into its parent on the parent's cell (which held it all along).
      const undone = await control.change(principal, (current) => (
        current.namespaces.some((n) => n.prefix === prefix && n.cell === move.from && n.state === 'active') ? withoutNamespace(current, prefix) : current
      ));
      await control.push(undone);
      throw new UnavailableError(`creating namespace ${prefix} on ${cellId} moves it from ${move.from}, and that move was aborted (${now.error ?? 'no reason given'}): nothing was created; try again`, {
        namespace: prefix, cell: cellId, move: now,
      });
    }
    if (!isOpen(now) || options.nowMs() >= deadline) return { map, move: now };
    await options.sleep(options.pollMs);
  }
}

async function refuseKeys(control: ControlService, map: CellMap, cellId: string, parentPrefix: string, prefix: string, nested: readonly string[]): Promise<void> {
  const cell = map.cells.find((c) => c.id === cellId);
  const count = cell === undefined ? 0 : await control.countKeys(cell, prefix, nested);
  if (count > 0) {
    throw new InvalidArgumentError(`cell ${cellId} holds ${count} keys under ${prefix} (namespace ${parentPrefix}): a namespace with keys is moved, not created`, {
      cell: cellId, count,
    });
  }
}

/** The answer's body: the namespace as the map has it, with the creation's move if there was one. */
export function createdInfo(created: Created, prefix: string): object {
  const info = namespaceInfo(created.map, prefix);
  return created.move === undefined ? info : { ...info, move: created.move };
}
