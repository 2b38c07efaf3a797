// The import record of a namespace move (docs/design/cells.md): what the control plane's mover
// sends a cell (POST /v1/cluster/import) and the cell's log carries as command importKeys (code
// 16, src/mvcc/import-keys.ts applies it). Shared here so the control plane builds exactly what
// the state machine parses. JSON: {prefix, clear, floor, epoch, puts: [{key, value (base64), version,
// createRevision, modRevision, lease}], deletes: [key], leases: [{id, ttlMs, remainingMs}],
// requests: [{id, record (both base64), ageMs?}: Request-ID, its dedup record and the record's age
// on the source's dedup clock], own?: the landing
// table's JSON text (a move's last import: the cell takes the namespace in the same command)}.

/**
 * The namespace-move protocol a member's build applies, in its /v1/cluster/status (`moveProtocol`).
 * 1: landing imports (`own` in the import record, `landingFrom` in the ownership table: the
 * fourth slice). A build older than that has no such field and ignores both: its state machine
 * would take a moving namespace at the flip's table, before its last changes, and diverge from
 * its cell's newer members. The control plane moves a namespace only while every member of both
 * cells reports at least moveProtocolNeeded (src/control/member-builds.ts).
 * 2: an import only raises the checkpoint of a lease the cell holds already, and an import of
 * leases alone is taken after the landing too (issue 24, leases across a move): members applying
 * 1 and 2 side by side would store different remaining TTLs, or refuse what the other takes.
 * 3: leases carry their origin cell and the record its destination; a lease the destination
 * holds under the same id but from another origin refuses the import (lease ids repeat across
 * cells: protocol 2 merged two owners' leases there), and imported leases keep their origin.
 * 4: `exclude` (the namespaces nested in the moving one): a clear leaves their keys alone and a
 * put or delete of one is refused. A member on 3 ignores the field and would clear a nested
 * namespace's keys, so a namespace with namespaces nested in it moves only while every member of
 * both cells reports 4 (nestedMoveProtocolNeeded); other moves still need 3.
 */
export const moveProtocol = 4;
export const moveProtocolNeeded = 3;
export const nestedMoveProtocolNeeded = 4;

/** Keys per import command: the mover batches a namespace's keys into commands of this size. */
export const importKeysPerCommandMax = 1_000;
/** Within a request (limits.ts requestBytesMax): the mover sends it as one HTTP body. */
export const importRecordBytesMax = 1_200_000;

export interface ImportedKey {
  readonly key: string;
  readonly value: Uint8Array;
  readonly version: number;
  readonly createRevision: number;
  readonly modRevision: number;
  readonly lease: number;
}

export interface ImportLease {
  readonly id: number;
  readonly ttlMs: number;
  readonly remainingMs: number;
  /**
   * The cell that granted the lease (move protocol 3). Lease ids are counted per cell, so two
   * cells hold unrelated leases under one id: a lease is the same lease on two cells only when it
   * has the same id and the same origin. Absent in older records (taken as the same lease).
   */
  readonly origin?: string;
}

export interface ImportRecord {
  readonly prefix: string;
  /** Remove every key of the namespace here first (the first batch of a copy; a release). */
  readonly clear: boolean;
  /** The cell's revision is raised to at least this (0: unchanged). */
  readonly floor: number;
  /**
   * The cell map's epoch the mover acted on (0: no check). A cell whose ownership table is newer
   * refuses it: the mover pushes the fence's table to the destination too, so a deposed leader's
   * late import (an older epoch) cannot overwrite the last changes once the fence is there.
   */
  readonly epoch?: number;
  readonly puts: readonly ImportedKey[];
  readonly deletes: readonly string[];
  readonly leases: readonly ImportLease[];
  /** The cell the record is for (move protocol 3): a lease it holds without an origin was granted there. */
  readonly destination?: string;
  /**
   * Dedup records of the namespace's requests (Request-ID and record bytes), written if unknown
   * here. `ageMs`: how far the source's dedup clock was past the record's stamp when it was listed.
   * Cells' dedup clocks are their own and drift apart (each advances with its own entries), so the
   * member taking the import re-stamps the record into its own clock before proposing it
   * (src/mvcc/namespace-requests.ts restampImportRequests): the record then expires here when it
   * would have there, and a later move's listing from a stamp (the source's clock) misses none.
   */
  readonly requests?: readonly { readonly id: Uint8Array; readonly record: Uint8Array; readonly ageMs?: number }[];
  /**
   * A move's landing (its last import, after the flip): this cell's ownership table of the flip's
   * map, giving it the namespace. Applied in the same command as the keys, after them, so the
   * cell owns the namespace from the entry that holds its last changes and floor: one commit.
   */
  readonly own?: string;
  /**
   * With `own`: the source's fence revision (every write it accepted for the namespace is at or
   * below it; at most `floor`). This cell holds the namespace's whole history above it, so a
   * watch resumed here from fence + 1 is served; at or below it one is refused (compacted).
   * Absent: the floor is taken (a mover that does not send it).
   */
  readonly fence?: number;
  /**
   * The namespaces nested in `prefix` (move protocol 4): their keys are theirs, not the moving
   * namespace's, by the longest-prefix rule, and may be on this cell (a nested namespace of the
   * destination or the source). The record never names one of their keys; a clear skips them.
   */
  readonly exclude?: readonly string[];
}

export function encodeImportRecord(record: ImportRecord): Uint8Array {
  return new TextEncoder().encode(JSON.stringify({
    ...record,
    puts: record.puts.map((kv) => ({ ...kv, value: Buffer.from(kv.value).toString('base64') })),
    requests: (record.requests ?? []).map((r) => ({
      id: Buffer.from(r.id).toString('base64'), record: Buffer.from(r.record).toString('base64'), ...(r.ageMs === undefined ? {} : { ageMs: r.ageMs }),
    })),
  }));
}
