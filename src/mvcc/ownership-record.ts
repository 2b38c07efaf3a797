// Which namespaces this cell owns, as replicated state (docs/design/cells.md): one record beside
// the policy, written only by a committed ownershipSet command, carried by snapshots like every
// engine entry. Because the table changes through the cell's own log, every entry is applied
// against the table of its own position in the log: a write racing an ownership change either
// applied before it or is refused after it, on every member alike. A cell that was never given a
// table owns every key (one cell, as before cells existed).
//
// Stored: u64 epoch, then the table's JSON (UTF-8) as the command carried it.
import { CrossCellError, InvalidArgumentError, PreconditionFailedError, TooLargeError, UnavailableError, WrongCellError, type BatonError } from '../base/errors.js';
import { namespaceOf, namespaceProblem, namespacesMax, namespacesOfSpan, rootNamespace, spanOf, type KeySpan } from '../base/namespaces.js';
import { bytesEqual, concatBytes, readU64, u64Bytes } from './bytes.js';
import type { Command, KvReader, KvWriter, OwnershipSetOp, RangeRequest } from './types.js';

/** Sorts after the policy record (0x03) and before every table. */
export const ownershipKey = Uint8Array.of(0x04);
export const ownershipRecordBytesMax = 256 * 1024;
/** Client URLs per cell in the table (a cell has at most a handful of members). */
const endpointsPerCellMax = 16;
const cellsMax = 256;

export interface NamespaceEntry {
  readonly prefix: string;
  readonly cell: string;
  /** The routing epoch of the namespace's current assignment. */
  readonly epoch: number;
  /**
   * Move step 4 (fence, docs/design/cells.md): set on the source's table while the namespace moves
   * to this cell. The source refuses writes to it with wrong_cell naming the destination and the
   * coming epoch (epoch + 1) and keeps serving reads; the fence revision is the entry applying it.
   */
  readonly fencedTo?: string;
  /**
   * Set on the destination's table once a move flipped (the namespace is this cell's in the cell
   * map) until the move's last changes land here: the cell refuses reads and writes of it (the
   * source, fenced, still serves reads) and accepts the landing import, which applies the last
   * changes and clears this in one command (src/mvcc/import-keys.ts). Names the source cell.
   */
  readonly landingFrom?: string;
}

export interface CellEntry {
  readonly id: string;
  readonly endpoints: readonly string[];
}

/** The cell map as the control plane cut it for one cell: `cell` is the receiving cell's id. */
export interface OwnershipTable {
  readonly epoch: number;
  readonly cell: string;
  readonly namespaces: readonly NamespaceEntry[];
  readonly cells: readonly CellEntry[];
}

/** The decoded table and what resolution needs, built once per change. */
export class Ownership {
  readonly prefixes: readonly string[];
  private readonly byPrefix: Map<string, NamespaceEntry>;
  private readonly endpoints: Map<string, readonly string[]>;

  constructor(readonly table: OwnershipTable) {
    this.prefixes = table.namespaces.map((n) => n.prefix);
    this.byPrefix = new Map(table.namespaces.map((n) => [n.prefix, n]));
    this.endpoints = new Map(table.cells.map((c) => [c.id, c.endpoints]));
  }

  /** The namespace `key` belongs to, and its assignment. */
  resolve(key: string): NamespaceEntry {
    const prefix = namespaceOf(this.prefixes, key);
    return this.byPrefix.get(prefix) ?? { prefix, cell: '', epoch: 0 };
  }

  /**
   * Refuses spans in namespaces of other cells (wrong_cell) or of several cells (cross_cell); a
   * write (`forWrite`) to a namespace fenced here for a move is wrong_cell naming its destination.
   */
  refuse(spans: readonly KeySpan[], forWrite = false): BatonError | null {
    const owners = new Map<string, NamespaceEntry>();
    for (const span of spans) {
      for (const prefix of namespacesOfSpan(this.prefixes, span)) {
        const entry = this.byPrefix.get(prefix) ?? { prefix, cell: '', epoch: 0 };
        if (!owners.has(entry.prefix)) owners.set(entry.prefix, entry);
      }
    }
    const cells = new Set([...owners.values()].map((entry) => entry.cell));
    if (cells.size > 1) {
      return new CrossCellError([...owners.values()].map((entry) => ({ namespace: entry.prefix, cell: entry.cell })));
    }
    for (const entry of owners.values()) {
      if (entry.cell !== this.table.cell) {
        return new WrongCellError({ namespace: entry.prefix, cell: entry.cell, epoch: entry.epoch, endpoints: this.endpoints.get(entry.cell) ?? [] });
      }
      if (entry.landingFrom !== undefined) {
        return new UnavailableError(`namespace ${entry.prefix} is arriving on this cell from cell ${entry.landingFrom}: a move's last changes are being applied, retry shortly`, {
          namespace: entry.prefix, cell: entry.cell, landingFrom: entry.landingFrom,
        });
      }
      if (forWrite && entry.fencedTo !== undefined) {
        const to = entry.fencedTo;
        return new WrongCellError({ namespace: entry.prefix, cell: to, epoch: entry.epoch + 1, endpoints: this.endpoints.get(to) ?? [] });
      }
    }
    return null;
  }
}

/** The key spans a command touches (empty: it names no key, like a lease grant or a compaction). */
export function spansOfCommand(op: Command): KeySpan[] {
  switch (op.type) {
    case 'put':
      return [{ start: op.key, end: null }];
    case 'delete':
      return [spanOf(op)];
    case 'txn':
      return [
        ...op.compare.map((compare) => ({ start: compare.key, end: null })),
        ...[...op.success, ...op.failure].map((inner) => (inner.type === 'put' ? { start: inner.key, end: null } : spanOf(inner))),
      ];
    case 'seqCreate':
      return [spanOf({ key: op.prefix, prefix: true })];
    case 'seqCheck':
    case 'seqRelease':
      return [spanOf({ key: op.prefix, prefix: true }), { start: op.key, end: null }];
    default:
      return [];
  }
}

export function spansOfRead(request: RangeRequest): KeySpan[] {
  return [spanOf(request)];
}

export function readOwnershipRecord(reader: KvReader): Ownership | null {
  const stored = reader.get(ownershipKey);
  if (stored === undefined) return null;
  return new Ownership(parseOwnershipTable(stored.subarray(8)));
}

/** Applies an ownershipSet: a newer epoch replaces the table; the same table again changes nothing. */
export function applyOwnershipSet(writer: KvWriter, op: OwnershipSetOp): Ownership {
  const table = parseOwnershipTable(op.record);
  const stored = writer.get(ownershipKey);
  if (stored !== undefined) {
    const current = readU64(stored, 0);
    if (table.epoch === current && bytesEqual(stored.subarray(8), op.record)) return new Ownership(table);
    if (table.epoch <= current) {
      throw new PreconditionFailedError(`the cell's ownership table is at epoch ${current}, not below ${table.epoch}: push a newer map`, {
        current,
      });
    }
    // A namespace that landed here stays landed: a newer map cut before the move's record caught
    // up still marks it landing for the same assignment (its epoch), which would stop its writes.
    const landed = keepLanded(table, new Ownership(parseOwnershipTable(stored.subarray(8))));
    if (landed !== table) {
      writer.put(ownershipKey, concatBytes([u64Bytes(landed.epoch), encodeOwnershipTable(landed)]));
      return new Ownership(landed);
    }
  }
  writer.put(ownershipKey, concatBytes([u64Bytes(table.epoch), op.record]));
  return new Ownership(table);
}

/** `table` with `landingFrom` dropped from each namespace `held` already owns, landed, under the same epoch. */
function keepLanded(table: OwnershipTable, held: Ownership): OwnershipTable {
  let changed = false;
  const namespaces = table.namespaces.map((entry) => {
    if (entry.landingFrom === undefined) return entry;
    const before = held.table.namespaces.find((n) => n.prefix === entry.prefix);
    if (before === undefined || before.cell !== held.table.cell || before.landingFrom !== undefined || before.fencedTo !== undefined || before.epoch !== entry.epoch) return entry;
    changed = true;
    return { prefix: entry.prefix, cell: entry.cell, epoch: entry.epoch };
  });
  return changed ? { ...table, namespaces } : table;
}

/**
 * A move's landing (the destination's last import carries the table that ends it): `record` is
 * this cell's table of the flip's map, with `prefix` owned here and not landing. Taken when it is
 * newer than the held table, or of the same epoch while the held one still marks `prefix` landing
 * (the flip's own table, pushed first). Checked before the import writes anything; null: nothing
 * to refuse, the caller stores it with storeLandedTable.
 */
export function landingProblem(writer: KvReader, record: Uint8Array, prefix: string): BatonError | null {
  const table = parseOwnershipTable(record);
  const entry = table.namespaces.find((n) => n.prefix === prefix);
  if (entry === undefined || entry.cell !== table.cell || entry.landingFrom !== undefined || entry.fencedTo !== undefined) {
    return new InvalidArgumentError(`a landing table must give namespace ${prefix} to its cell ${table.cell}, not landing and not fenced`);
  }
  const held = readOwnershipRecord(writer);
  if (held === null) return new PreconditionFailedError('this cell was never given an ownership table: nothing lands here');
  if (held.table.cell !== table.cell) return new InvalidArgumentError(`the landing table is for cell ${table.cell}, this is cell ${held.table.cell}`);
  if (table.epoch > held.table.epoch) return null;
  const before = held.table.namespaces.find((n) => n.prefix === prefix);
  if (table.epoch === held.table.epoch && before?.landingFrom !== undefined && before.epoch === entry.epoch) return null;
  return new PreconditionFailedError(`a stale landing: this cell holds ownership epoch ${held.table.epoch} and does not wait for ${prefix} to land at ${table.epoch}`, {
    epoch: held.table.epoch,
  });
}

export function storeLandedTable(writer: KvWriter, record: Uint8Array): void {
  const table = parseOwnershipTable(record);
  writer.put(ownershipKey, concatBytes([u64Bytes(table.epoch), record]));
}

function encodeOwnershipTable(table: OwnershipTable): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(table));
}

/** Parses and validates a table (deterministic: every member judges the same bytes alike). */
export function parseOwnershipTable(record: Uint8Array): OwnershipTable {
  if (record.length > ownershipRecordBytesMax) throw new TooLargeError('an ownership table', record.length, ownershipRecordBytesMax);
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(record));
  } catch {
    throw bad('is not JSON');
  }
  if (typeof json !== 'object' || json === null) throw bad('is not an object');
  const raw = json as Record<string, unknown>;
  const epoch = count(raw['epoch'], 'epoch');
  const cell = text(raw['cell'], 'cell');
  if (!Array.isArray(raw['namespaces']) || raw['namespaces'].length > namespacesMax) throw bad(`needs namespaces (at most ${namespacesMax})`);
  if (!Array.isArray(raw['cells']) || raw['cells'].length > cellsMax) throw bad(`needs cells (at most ${cellsMax})`);
  const namespaces: NamespaceEntry[] = [];
  const seen = new Set<string>();
  for (const item of raw['namespaces'] as unknown[]) {
    const entry = (item ?? {}) as Record<string, unknown>;
    const prefix = text(entry['prefix'], 'a namespace prefix');
    const problem = namespaceProblem(prefix);
    if (problem !== null) throw bad(`names namespace ${JSON.stringify(prefix)}, which ${problem}`);
    if (seen.has(prefix)) throw bad(`names namespace ${prefix} twice`);
    seen.add(prefix);
    const owner = text(entry['cell'], 'a namespace cell');
    const epochOf = count(entry['epoch'], 'a namespace epoch');
    if (entry['fencedTo'] !== undefined && entry['landingFrom'] !== undefined) throw bad(`both fences namespace ${prefix} and lands it`);
    if (entry['landingFrom'] !== undefined) {
      const landingFrom = text(entry['landingFrom'], 'a landing source');
      if (landingFrom === owner) throw bad(`lands namespace ${prefix} from its own cell ${owner}`);
      namespaces.push({ prefix, cell: owner, epoch: epochOf, landingFrom });
    } else if (entry['fencedTo'] === undefined) {
      namespaces.push({ prefix, cell: owner, epoch: epochOf });
    } else {
      const fencedTo = text(entry['fencedTo'], 'a fence destination');
      if (fencedTo === owner) throw bad(`fences namespace ${prefix} towards its own cell ${owner}`);
      namespaces.push({ prefix, cell: owner, epoch: epochOf, fencedTo });
    }
  }
  if (!seen.has(rootNamespace)) throw bad('must assign the root namespace /');
  const cells: CellEntry[] = [];
  for (const item of raw['cells'] as unknown[]) {
    const entry = (item ?? {}) as Record<string, unknown>;
    const endpoints = entry['endpoints'];
    if (!Array.isArray(endpoints) || endpoints.length > endpointsPerCellMax || !endpoints.every((e) => typeof e === 'string')) {
      throw bad(`needs each cell's endpoints (at most ${endpointsPerCellMax} strings)`);
    }
    cells.push({ id: text(entry['id'], 'a cell id'), endpoints: endpoints as string[] });
  }
  return { epoch, cell, namespaces, cells };
}

function bad(what: string): InvalidArgumentError {
  return new InvalidArgumentError(`the ownership table ${what}`);
}

function count(value: unknown, name: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw bad(`needs ${name} as a whole number ≥ 0`);
  return value;
}

function text(value: unknown, name: string): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 256) throw bad(`needs ${name} as a string of 1..256 characters`);
  return value;
}
