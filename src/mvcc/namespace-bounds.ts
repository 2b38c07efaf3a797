// Where this cell's history of each namespace ends and begins across moves (docs/design/cells.md
// "How revisions map (watches)"), as replicated state beside the ownership table, so every member
// (and one restarted, or installed from a snapshot) answers watches alike:
// - fence: the revision at which the table that stopped this cell taking writes for the namespace
//   (fenced for a move, or assigned to another cell) applied here. Every event of the namespace
//   here is at or below it; a watch of it ends there with wrong_cell, resuming at fence + 1.
// - floor: the landing import's floor when the namespace last arrived here (the source's fence
//   when the import names it). This cell holds none of the source's events at or below it, so a
//   watch starting there is refused (compacted), never served with a silent gap.
// Written only at apply (ownershipSet, a landing import); entries of namespaces no longer in the
// table are dropped, so the record holds at most two numbers per namespace of the table.
//
// Stored: JSON {"fences": {prefix: revision}, "floors": {prefix: revision}}.
import { assert } from '../base/assert.js';
import { namespacesMax, namespacesOfSpan, spanOf } from '../base/namespaces.js';
import type { Ownership } from './ownership-record.js';
import type { KvReader, KvWriter } from './types.js';

/** Sorts after the ownership record (0x04), before the tenants record (0x06). */
export const namespaceBoundsKey = Uint8Array.of(0x05);

export interface NamespaceBounds {
  readonly fences: Readonly<Record<string, number>>;
  readonly floors: Readonly<Record<string, number>>;
}

const none: NamespaceBounds = { fences: {}, floors: {} };

export function readNamespaceBounds(reader: KvReader): NamespaceBounds {
  const stored = reader.get(namespaceBoundsKey);
  if (stored === undefined) return none;
  const parsed = JSON.parse(new TextDecoder().decode(stored)) as NamespaceBounds;
  assert(typeof parsed.fences === 'object' && typeof parsed.floors === 'object', 'namespace bounds decode');
  return parsed;
}

function writeNamespaceBounds(writer: KvWriter, bounds: NamespaceBounds, held: Ownership | null): void {
  // Only namespaces of the table held now: the record stays bounded by the table.
  const keep = (map: Readonly<Record<string, number>>): Record<string, number> =>
    Object.fromEntries(Object.entries(map).filter(([prefix]) => held === null || held.prefixes.includes(prefix)));
  const kept = { fences: keep(bounds.fences), floors: keep(bounds.floors) };
  assert(Object.keys(kept.fences).length <= namespacesMax && Object.keys(kept.floors).length <= namespacesMax, 'bounded by the table');
  writer.put(namespaceBoundsKey, new TextEncoder().encode(JSON.stringify(kept)));
}

/** Whether this cell takes writes for `prefix` under `table` (null: no table, owns every key). */
function writable(table: Ownership | null, prefix: string): boolean {
  if (table === null) return true;
  const entry = table.resolve(prefix);
  return entry.cell === table.table.cell && entry.fencedTo === undefined && entry.landingFrom === undefined;
}

/**
 * After a table change applied at `revision` (an ownershipSet or a landing): a namespace this cell
 * took writes for and no longer does is fenced here at `revision`; one it takes writes for again
 * (an aborted move, a namespace that came back) loses its fence. A fence already held stays: the
 * flip's and the release's tables come later, and nothing of the namespace was written between.
 */
export function updateNamespaceFences(writer: KvWriter, change: { before: Ownership | null; after: Ownership | null; revision: number }): void {
  const { before, after, revision } = change;
  if (after === null) return;
  const bounds = readNamespaceBounds(writer);
  const fences: Record<string, number> = { ...bounds.fences };
  let changed = false;
  for (const prefix of after.prefixes) {
    const now = writable(after, prefix);
    if (now && fences[prefix] !== undefined) {
      delete fences[prefix];
      changed = true;
    } else if (!now && fences[prefix] === undefined && writable(before, prefix)) {
      fences[prefix] = revision;
      changed = true;
    }
  }
  const dropped = Object.keys(bounds.fences).some((p) => !after.prefixes.includes(p)) || Object.keys(bounds.floors).some((p) => !after.prefixes.includes(p));
  if (changed || dropped) writeNamespaceBounds(writer, { fences, floors: bounds.floors }, after);
}

/** A landing import made this cell the owner of `prefix` with its history starting above `floor`. */
export function recordLandingFloor(writer: KvWriter, change: { prefix: string; floor: number; after: Ownership }): void {
  assert(change.floor >= 0 && Number.isSafeInteger(change.floor), 'a floor is a revision');
  const bounds = readNamespaceBounds(writer);
  const fences: Record<string, number> = { ...bounds.fences };
  delete fences[change.prefix];
  writeNamespaceBounds(writer, { fences, floors: { ...bounds.floors, [change.prefix]: change.floor } }, change.after);
}

/**
 * For a watch (or a past read) of `spec`: the fence of its keys here (the highest fence among the namespaces it
 * spans that this cell no longer takes writes for; null: none of them) and the history floor (the
 * highest floor among them; 0: none).
 */
export function watchBoundsOf(bounds: NamespaceBounds, table: Ownership | null, spec: Parameters<typeof spanOf>[0]): { fence: number | null; floor: number } {
  if (table === null) return { fence: null, floor: 0 };
  let fence: number | null = null;
  let floor = 0;
  for (const prefix of namespacesOfSpan(table.prefixes, spanOf(spec))) {
    const fenced = bounds.fences[prefix];
    if (fenced !== undefined && !writable(table, prefix)) fence = Math.max(fence ?? 0, fenced);
    floor = Math.max(floor, bounds.floors[prefix] ?? 0);
  }
  return { fence, floor };
}
