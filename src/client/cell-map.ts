// The cells client's cache of the cell map (docs/design/cells.md): namespace -> owning cell and
// cell -> member endpoints, loaded from the control plane (GET /v1/control/namespaces, also served
// by a router) and corrected by each wrong_cell answer's details. Pure: no I/O, no clock.
import { CrossCellError, UnavailableError } from '../base/errors.js';
import { namespaceOf, namespacesOfSpan, rootNamespace, spanOf, type KeySpan } from '../base/namespaces.js';

export interface MapNamespace {
  readonly prefix: string;
  readonly cell: string;
  readonly epoch: number;
}

/** The body of GET /v1/control/namespaces (the fields the client reads). */
export interface CellMapBody {
  readonly epoch: number;
  readonly cells: readonly { readonly id: string; readonly endpoints: readonly string[] }[];
  readonly namespaces: readonly MapNamespace[];
}

export class CellMap {
  /** The loaded map's epoch (-1 = never loaded). */
  epoch = -1;
  private readonly owners = new Map<string, MapNamespace>();
  private readonly cellEndpoints = new Map<string, readonly string[]>();

  get loaded(): boolean {
    return this.epoch >= 0;
  }

  /** Replaces the cache with a map at least as new; a namespace learned at a newer epoch stays. */
  load(body: CellMapBody): void {
    if (body.epoch < this.epoch) return;
    const learned = [...this.owners.values()].filter((entry) => entry.epoch > body.epoch);
    this.epoch = body.epoch;
    this.owners.clear();
    this.cellEndpoints.clear();
    for (const cell of body.cells) this.cellEndpoints.set(cell.id, [...cell.endpoints]);
    for (const entry of body.namespaces) this.owners.set(entry.prefix, { prefix: entry.prefix, cell: entry.cell, epoch: entry.epoch });
    for (const entry of learned) this.owners.set(entry.prefix, entry);
  }

  /**
   * Takes a wrong_cell answer's details ({namespace, cell, epoch, endpoints}) into the cache when
   * not older than what it has. Returns the owner cell ('' = none, null = unreadable details).
   */
  learn(details: Readonly<Record<string, unknown>>): string | null {
    const { namespace, cell, epoch, endpoints } = details;
    if (typeof namespace !== 'string' || typeof cell !== 'string' || typeof epoch !== 'number') return null;
    if (cell === '') return '';
    const known = this.owners.get(namespace);
    if (known === undefined || known.epoch <= epoch) this.owners.set(namespace, { prefix: namespace, cell, epoch });
    // A cell never seen: its endpoints from the answer until a map load names it.
    const urls = Array.isArray(endpoints) ? endpoints.filter((url): url is string => typeof url === 'string') : [];
    if (!this.cellEndpoints.has(cell) && urls.length > 0) this.cellEndpoints.set(cell, urls);
    return cell;
  }

  knows(cell: string): boolean {
    return this.cellEndpoints.has(cell);
  }

  endpointsOf(cell: string): readonly string[] {
    return this.cellEndpoints.get(cell) ?? [];
  }

  namespaceOfKey(key: string): MapNamespace {
    const prefix = namespaceOf(this.owners.keys(), key);
    const owner = this.owners.get(prefix) ?? this.owners.get(rootNamespace);
    if (owner === undefined) throw new UnavailableError('the client has no cell map yet: is the control plane reachable?');
    return owner;
  }

  /** The one cell owning every namespace the spans touch; cross_cell (as a router answers) if several. */
  cellOfSpans(spans: readonly KeySpan[]): string {
    if (this.owners.size === 0) throw new UnavailableError('the client has no cell map yet: is the control plane reachable?');
    const prefixes = [...this.owners.keys()];
    const touched = new Map<string, MapNamespace>();
    for (const span of spans) {
      for (const prefix of namespacesOfSpan(prefixes, span)) {
        const owner = this.owners.get(prefix) ?? this.owners.get(rootNamespace);
        if (owner !== undefined) touched.set(owner.prefix, owner);
      }
    }
    const cells = new Set([...touched.values()].map((entry) => entry.cell));
    if (cells.size > 1) throw new CrossCellError([...touched.values()].map((entry) => ({ namespace: entry.prefix, cell: entry.cell })));
    return [...touched.values()][0]?.cell ?? this.namespaceOfKey(rootNamespace).cell;
  }
}

/** Every key a txn names (compares and both branches), as the router reads a txn body. */
export function txnSpans(request: { compare?: unknown; success?: unknown; failure?: unknown }): KeySpan[] {
  const spans: KeySpan[] = [];
  const keyOf = (value: unknown): string => (typeof value === 'string' ? value : rootNamespace);
  for (const compare of Array.isArray(request.compare) ? request.compare : []) {
    spans.push({ start: keyOf((compare as { key?: unknown }).key), end: null });
  }
  for (const branch of [request.success, request.failure]) {
    for (const op of Array.isArray(branch) ? branch : []) {
      const inner = Object.values((op ?? {}) as Record<string, { key?: unknown; prefix?: unknown }>)[0] ?? {};
      spans.push(spanOf({ key: keyOf(inner.key), prefix: inner.prefix === true }));
    }
  }
  return spans;
}
