// Checkers on what the cells apply, per namespace (issue 24):
//  (1) at every instant at most one cell accepts writes for it. A cell's state at an instant is
//      its state machine at the highest log index any of its members has applied (committed, so
//      it never goes back); a cell accepts writes for a namespace when that state's ownership
//      table gives it the namespace, not fenced and not landing. Checked whenever a cell starts
//      accepting one, and for every write a cell applies.
//  (2) revisions only grow across cells: every write a cell applies for the namespace has a
//      revision above every revision any cell applied for it before, and a cell that starts
//      accepting it is already at or above them (the move's revision floor).
//  (5) a Request-ID writes once, in whichever cell: a retry that reaches another cell after a
//      move finds the record moved with the namespace (re-stamped into that cell's dedup clock).
//      (Checker 3 and 4 are the clients' and the watchers'.)
import { assert } from '../../base/assert.js';
import { namespaceOf } from '../../base/namespaces.js';
import { decodeCommand, defaultMvccLimits, type Command, type MvccEvent, type MvccStore } from '../../mvcc/index.js';
import type { Entry } from '../../raft/index.js';
import type { SimNode } from '../sim-node.js';
import type { WorldHooks } from '../types.js';
import type { CellsLoop } from './cells-loop.js';

interface CellView {
  /** The highest log index any member applied, and the state there. */
  index: number;
  revision: number;
  ownership: unknown;
  readonly accepting: Set<string>;
}

export class OwnerChecker {
  private readonly views = new Map<string, CellView>();
  /** Per namespace: the highest revision of a write any cell applied for it, and where. */
  private readonly highest = new Map<string, { revision: number; cell: string }>();
  /** Per namespace: its events by revision, as the cells that took its writes applied them (checker 4's reference). */
  readonly history = new Map<string, Map<number, readonly MvccEvent[]>>();
  /** Request-IDs that wrote, and where (checker 5). */
  private readonly requestWrites = new Map<string, string>();
  /** Off until every cell applied its first table (before, a cell owns every key). */
  armed = false;

  constructor(
    private readonly loop: CellsLoop,
    private readonly prefixes: readonly string[],
    cellIds: readonly string[],
  ) {
    for (const id of cellIds) this.views.set(id, { index: 0, revision: 0, ownership: null, accepting: new Set() });
  }

  /** The hooks of one cell's world. */
  hooksFor(cellId: string): WorldHooks {
    return {
      onApplied: (node, entry) => this.onApplied(cellId, node, entry),
      onReadServed: () => {},
      onReadDropped: () => {},
    };
  }

  /** The cells accepting writes for `prefix` now. */
  acceptingCells(prefix: string): string[] {
    return [...this.views.entries()].filter(([, view]) => view.accepting.has(prefix)).map(([id]) => id);
  }

  /** Arms the checks once every cell holds a table: from then each namespace has one writer. */
  arm(): void {
    for (const prefix of this.prefixes) {
      const cells = this.acceptingCells(prefix);
      if (cells.length !== 1) this.loop.report('one writer per namespace', `${prefix} accepted by [${cells.join(', ')}] after the setup`);
    }
    this.armed = true;
  }

  private onApplied(cellId: string, node: SimNode, entry: Entry): void {
    const view = this.views.get(cellId) as CellView;
    if (entry.index <= view.index) return;
    const store = node.serverDriver?.mvccStore ?? null;
    if (store === null) return;
    const next = entry.index === view.index + 1;
    view.index = entry.index;
    const wrote = next && store.revision > view.revision;
    view.revision = store.revision;
    const ownership = store.ownership();
    if (ownership !== view.ownership) {
      view.ownership = ownership;
      const before = new Set(view.accepting);
      view.accepting.clear();
      for (const prefix of this.prefixes) {
        const entryOf = ownership?.resolve(prefix);
        const accepts = ownership === null || (entryOf?.prefix === prefix && entryOf.cell === ownership.table.cell
          && entryOf.fencedTo === undefined && entryOf.landingFrom === undefined);
        if (accepts) view.accepting.add(prefix);
      }
      for (const prefix of view.accepting) if (!before.has(prefix)) this.startedAccepting(cellId, prefix, store.revision, entry.index);
    }
    if (wrote && entry.type === 0) this.onWrite(cellId, entry, store);
  }

  private startedAccepting(cellId: string, prefix: string, revision: number, index: number): void {
    if (!this.armed) return;
    const others = this.acceptingCells(prefix).filter((id) => id !== cellId);
    if (others.length > 0) {
      this.loop.report('one writer per namespace', `${cellId} accepts writes for ${prefix} from its entry ${index} while ${others.join(', ')} still does`);
    }
    const highest = this.highest.get(prefix);
    if (highest !== undefined && revision < highest.revision) {
      this.loop.report('revision floor', `${cellId} accepts writes for ${prefix} at revision ${revision}, below revision ${highest.revision} already used for it on ${highest.cell}`);
    }
  }

  private onWrite(cellId: string, entry: Entry, store: MvccStore): void {
    const revision = store.revision;
    // The driver hands the state machine its entries unframed: this is the command itself.
    if (entry.data.byteLength === 0) return;
    const { op, requestId } = decodeCommand(entry.data, defaultMvccLimits);
    if (op.type === 'importKeys' || op.type === 'ownershipSet') return;
    if (requestId !== undefined) {
      const first = this.requestWrites.get(requestId);
      if (first !== undefined) this.loop.report('a Request-ID writes once', `${requestId} wrote on ${cellId} at revision ${revision} (entry ${entry.index}), and before on ${first}`);
      else this.requestWrites.set(requestId, `${cellId} at revision ${revision}`);
    }
    for (const prefix of this.namespacesOf(op)) {
      if (this.armed) {
        const accepting = this.acceptingCells(prefix);
        if (accepting.length !== 1 || accepting[0] !== cellId) {
          this.loop.report('one writer per namespace', `${cellId} applied a write to ${prefix} at revision ${revision} (entry ${entry.index}) while [${accepting.join(', ')}] accept it`);
        }
      }
      const highest = this.highest.get(prefix);
      if (this.armed && highest !== undefined && revision <= highest.revision) {
        this.loop.report('revisions grow per namespace', `${cellId} applied a write to ${prefix} at revision ${revision}, not above ${highest.revision} applied on ${highest.cell}`);
      }
      this.highest.set(prefix, { revision, cell: cellId });
      const events = store.events({ startRevision: revision, limit: 1_000 }).filter((e) => e.revision === revision && e.kv.key.startsWith(prefix));
      let byRevision = this.history.get(prefix);
      if (byRevision === undefined) this.history.set(prefix, (byRevision = new Map()));
      byRevision.set(revision, events);
    }
  }

  /** The highest revision any cell applied a write of `prefix` at (0: none). */
  highestRevision(prefix: string): number {
    return this.highest.get(prefix)?.revision ?? 0;
  }

  /** The tracked namespaces a write touches. */
  private namespacesOf(op: Command): Set<string> {
    const keys: string[] = [];
    if (op.type === 'put' || op.type === 'delete') keys.push(op.key);
    if (op.type === 'txn') {
      for (const compare of op.compare) keys.push(compare.key);
      for (const inner of [...op.success, ...op.failure]) keys.push(inner.key);
    }
    const found = new Set<string>();
    for (const key of keys) {
      const prefix = namespaceOf(this.prefixes, key);
      if (this.prefixes.includes(prefix)) found.add(prefix);
    }
    assert(found.size <= this.prefixes.length, 'a write names tracked namespaces only');
    return found;
  }
}
