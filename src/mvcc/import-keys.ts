// Move steps 2-6 on the destination (docs/design/cells.md, "Moving a namespace"): the importKeys
// command writes a namespace's keys as the source holds them (value, version, create and mod
// revisions, lease), raises this cell's revision to a floor first, and recreates the leases the
// keys name with their remaining TTL. The control plane's mover proposes it here; nothing else.
//
// Why no history events: the imported keys' history lives on the source up to the fence; a
// watcher resumes here from the move's resume revision (above every imported revision), so an
// event per imported key would be a duplicate. The floor makes every later revision of this cell
// (hence every fencing token: a key's create revision) greater than any the source issued for
// the namespace. Only keys of `prefix` are touched, and only while this cell does not own it
// (while it does, its own writes are the truth): a late or repeated import after the flip is
// refused and changes nothing. One exception touches no key: an import of leases alone (a
// follower carrying renewals from the source) is taken whoever owns the namespace, and only
// raises the remaining TTL of leases this cell holds (never cuts one, never recreates one).
//
// The record's format: src/base/namespace-import.ts.
import { InvalidArgumentError, PreconditionFailedError } from '../base/errors.js';
import type { TenantRecord } from '../base/tenants.js';
import { accountKeyChange } from './tenant-usage.js';
import { noTally, type LiveKeyTally } from './live-keys.js';
import { importKeysPerCommandMax, importRecordBytesMax, type ImportLease, type ImportRecord } from '../base/namespace-import.js';
import { isOwnKey, namespaceProblem, namespacesMax, ownSpans } from '../base/namespaces.js';
import { assert } from '../base/assert.js';
import { emptyBytes, utf8 } from './bytes.js';
import { checkEpochRoom } from './epoch.js';
import { currentKey, currentRange, historyKey, leaseKey, revisionIndexKey, revisionIndexSeq } from './layout.js';
import { adjustLeaseKeyCount, grantLease, readLease, checkpointLeases, leaseOrigin, setLeaseOrigin } from './lease-state.js';
import { decodeDedupRecord } from './dedup-record.js';
import { importRequests } from './namespace-requests.js';
import { landingProblem, readOwnershipRecord, storeLandedTable } from './ownership-record.js';
import { recordLandingFloor } from './namespace-bounds.js';
import { decodeRecord, decodeStoredEvent, encodeEventScratch, encodeRecordScratch, recordModRevision } from './records.js';
import type { KeyValue, KvWriter, MvccLimits, MvccMeta } from './types.js';

export { encodeImportRecord, importKeysPerCommandMax, importRecordBytesMax } from '../base/namespace-import.js';
export type { ImportLease, ImportRecord } from '../base/namespace-import.js';

export function parseImportRecord(bytes: Uint8Array): ImportRecord {
  if (bytes.length > importRecordBytesMax) throw new InvalidArgumentError(`an import record is at most ${importRecordBytesMax} bytes`);
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(Buffer.from(bytes).toString('utf8')) as Record<string, unknown>;
  } catch {
    throw new InvalidArgumentError('an import record must be JSON');
  }
  const prefix = raw['prefix'];
  if (typeof prefix !== 'string' || namespaceProblem(prefix) !== null) throw new InvalidArgumentError('an import record needs a namespace prefix');
  const count = (value: unknown, what: string): number => {
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw new InvalidArgumentError(`an import record's ${what} must be a count`);
    return value;
  };
  const exclude = raw['exclude'] === undefined ? [] : raw['exclude'];
  if (!Array.isArray(exclude) || exclude.length > namespacesMax
    || !exclude.every((n): n is string => typeof n === 'string' && n !== prefix && n.startsWith(prefix) && namespaceProblem(n) === null)) {
    throw new InvalidArgumentError(`an import record's exclude lists namespaces nested in ${prefix} (at most ${namespacesMax})`);
  }
  const inNamespace = (key: unknown): string => {
    if (typeof key !== 'string' || !key.startsWith(prefix)) throw new InvalidArgumentError(`an imported key must be under ${prefix}`);
    if (!isOwnKey(prefix, exclude, key)) throw new InvalidArgumentError(`imported key ${key} is in a namespace nested in ${prefix} (${exclude.find((n) => key.startsWith(n))}), not in ${prefix}`);
    return key;
  };
  const list = (value: unknown, what: string): Record<string, unknown>[] => {
    if (!Array.isArray(value)) throw new InvalidArgumentError(`an import record needs ${what}`);
    if (value.length > importKeysPerCommandMax) throw new InvalidArgumentError(`at most ${importKeysPerCommandMax} ${what} per import`);
    return value as Record<string, unknown>[];
  };
  const puts = list(raw['puts'], 'puts').map((p): KeyValue => {
    const modRevision = count(p['modRevision'], 'modRevision');
    const createRevision = count(p['createRevision'], 'createRevision');
    if (createRevision < 1 || createRevision > modRevision) throw new InvalidArgumentError('an imported key needs 1 <= createRevision <= modRevision');
    if (typeof p['value'] !== 'string') throw new InvalidArgumentError('an imported value is base64');
    return {
      key: inNamespace(p['key']),
      value: new Uint8Array(Buffer.from(p['value'], 'base64')),
      version: Math.max(1, count(p['version'], 'version')),
      createRevision,
      modRevision,
      lease: count(p['lease'], 'lease'),
    };
  });
  const deletes = (list(raw['deletes'], 'deletes') as unknown[]).map(inNamespace);
  const cellName = (value: unknown, what: string): string | undefined => {
    if (value === undefined) return undefined;
    if (typeof value !== 'string' || value.length === 0 || value.length > cellNameBytesMax) throw new InvalidArgumentError(`an import record's ${what} is a cell id`);
    return value;
  };
  const leases = list(raw['leases'], 'leases').map((l) => {
    const origin = cellName(l['origin'], 'lease origin');
    const lease = { id: count(l['id'], 'lease id'), ttlMs: count(l['ttlMs'], 'ttlMs'), remainingMs: count(l['remainingMs'], 'remainingMs') };
    return origin === undefined ? lease : { ...lease, origin };
  });
  const destination = cellName(raw['destination'], 'destination');
  const epoch = raw['epoch'] === undefined ? 0 : count(raw['epoch'], 'epoch');
  const requests = raw['requests'] === undefined ? [] : list(raw['requests'], 'requests').map((r) => {
    if (typeof r['id'] !== 'string' || typeof r['record'] !== 'string') throw new InvalidArgumentError('an imported request is {id, record} in base64');
    const request = { id: new Uint8Array(Buffer.from(r['id'], 'base64')), record: new Uint8Array(Buffer.from(r['record'], 'base64')) };
    // Checked here, before the import writes anything (a record that does not decode refuses it all).
    if (request.id.length === 0) throw new InvalidArgumentError('an imported request needs its Request-ID');
    try {
      decodeDedupRecord(request.record);
    } catch {
      throw new InvalidArgumentError('an imported request record does not decode');
    }
    return request;
  });
  const own = raw['own'];
  if (own !== undefined && typeof own !== 'string') throw new InvalidArgumentError('an import record\'s own is an ownership table as JSON text');
  const floor = count(raw['floor'], 'floor');
  const fence = raw['fence'] === undefined ? undefined : count(raw['fence'], 'fence');
  if (fence !== undefined && (own === undefined || fence > floor)) throw new InvalidArgumentError('an import record\'s fence comes with own, at most its floor');
  const parsed = { prefix, clear: raw['clear'] === true, floor, epoch, puts, deletes, leases, requests,
    ...(destination === undefined ? {} : { destination }), ...(fence === undefined ? {} : { fence }), ...(exclude.length === 0 ? {} : { exclude }) };
  return own === undefined ? parsed : { ...parsed, own };
}

/** Past this size an import is not looked into for being leases alone (one is at most ~100 KiB: 1,000 leases). */
export const leasesOnlyImportBytesMax = 256 * 1024;

/** Applies an import: returns the meta with the raised revision. Every check before any write. */
export function applyImportKeys(
  writer: KvWriter,
  meta: MvccMeta,
  bytes: Uint8Array,
  limits: MvccLimits,
  /** The tenant table (#28): imported and replaced keys move their tenant's use (never refused: a move is not growth). */
  tenants: readonly TenantRecord[] = [],
  /** Keys created and removed here count to the store's live keys (live-keys.ts). */
  liveKeys: LiveKeyTally = noTally(),
): { meta: MvccMeta; imported: number; leases: ImportLease[] } {
  const record = parseImportRecord(bytes);
  const ownership = readOwnershipRecord(writer);
  if (ownership === null) throw new PreconditionFailedError('this cell was never given an ownership table: it owns every key, nothing is imported into it');
  if (isLeasesOnly(record)) return { meta, imported: 0, leases: raiseHeldLeases(writer, record.leases, limits, record.destination) };
  const owner = ownership.resolve(record.prefix);
  // A namespace landing here (its move flipped, the last changes not in yet) is still imported into.
  if (owner.prefix === record.prefix && owner.cell === ownership.table.cell && owner.landingFrom === undefined) {
    throw new PreconditionFailedError(`this cell owns ${record.prefix}: an import would overwrite its own writes`, { namespace: record.prefix });
  }
  if ((record.epoch ?? 0) > 0 && (record.epoch ?? 0) < ownership.table.epoch) {
    throw new PreconditionFailedError(`a stale import: made at map epoch ${record.epoch}, this cell holds epoch ${ownership.table.epoch}`, { epoch: ownership.table.epoch });
  }
  const own = record.own === undefined ? undefined : utf8(record.own);
  if (own !== undefined) {
    const problem = landingProblem(writer, own, record.prefix);
    if (problem !== null) throw problem;
  }
  if (record.floor > 0) checkEpochRoom(meta.epoch, record.floor);
  for (const lease of record.leases) {
    const held = readLease(writer, lease.id);
    // A lease of the same id granted here by this cell's own clients would take the keys: refuse.
    if (held !== null && held.ttlMs !== lease.ttlMs) {
      throw new PreconditionFailedError(`lease ${lease.id} exists on this cell with another TTL: the namespace's lease cannot be recreated here`, { id: lease.id });
    }
    if (held !== null && !sameLease(writer, lease, record.destination)) {
      throw new PreconditionFailedError(`lease ${lease.id} on this cell was granted by ${heldOrigin(writer, lease.id, record.destination)}, the namespace's lease ${lease.id} by ${lease.origin}: ` +
        'lease ids repeat across cells, and one id cannot hold both', { id: lease.id });
    }
  }
  for (const kv of record.puts) {
    if (kv.lease !== 0 && readLease(writer, kv.lease) === null && !record.leases.some((l) => l.id === kv.lease)) {
      throw new PreconditionFailedError(`imported key ${kv.key} names lease ${kv.lease}, which the import does not carry`, { id: kv.lease });
    }
  }
  for (const lease of record.leases) {
    const held = readLease(writer, lease.id);
    if (held === null) {
      grantLease(writer, { ttlMs: lease.ttlMs, id: lease.id }, limits, meta.storeFormat);
      if (lease.origin !== undefined && lease.origin !== record.destination) setLeaseOrigin(writer, lease.id, lease.origin);
    }
    const remainingMs = Math.min(lease.remainingMs, lease.ttlMs);
    // A lease imported before (or renewed here meanwhile) is only raised: the time it was promised
    // here must survive an election here, and the source's later figure is never more than that.
    checkpointLeases(writer, [{ id: lease.id, remainingMs: held === null ? remainingMs : Math.max(held.remainingMs, remainingMs) }], limits);
    assert((readLease(writer, lease.id)?.ttlMs ?? 0) === lease.ttlMs, 'an imported lease keeps its granted TTL');
  }
  if (record.clear) {
    // The namespace's own ranges: keys of a namespace nested in it stay (they are not moving).
    const keys: Uint8Array[] = [];
    for (const span of ownSpans(record.prefix, record.exclude ?? [])) {
      for (const entry of writer.range(currentRange({ start: utf8(span.start), end: span.end as Uint8Array }))) keys.push(entry.key.slice(1));
    }
    for (const keyBytes of keys) removeCurrent(writer, keyBytes, tenants, liveKeys);
  }
  for (const key of record.deletes) removeCurrent(writer, utf8(key), tenants, liveKeys);
  for (const kv of record.puts) {
    const keyBytes = utf8(kv.key);
    removeCurrent(writer, keyBytes, tenants, liveKeys);
    writer.put(currentKey(keyBytes), encodeRecordScratch(kv, meta.storeFormat).slice());
    liveKeys.delta++;
    accountKeyChange(writer, tenants, kv.key, null, { bytes: kv.value.length, lease: kv.lease });
    if (kv.lease !== 0) {
      writer.put(leaseKey(kv.lease, keyBytes), emptyBytes);
      adjustLeaseKeyCount(writer, kv.lease, 1);
    }
  }
  importRequests(writer, record.requests ?? []);
  // Last: from this entry on the cell owns the namespace, with every key and the floor above.
  if (own !== undefined) {
    storeLandedTable(writer, own);
    // Watches here start above the source's fence (or the floor): nothing of the source's is here.
    const after = readOwnershipRecord(writer);
    assert(after !== null, 'a landing leaves a table');
    recordLandingFloor(writer, { prefix: record.prefix, floor: record.fence ?? record.floor, after });
  }
  const revision = Math.max(meta.revision, record.floor);
  assert(revision >= meta.revision, 'an import never lowers the revision');
  return { meta: { ...meta, revision }, imported: record.puts.length, leases: [...record.leases] };
}

/**
 * Renewals of moved keys' leases, carried from the source (src/control/lease-follower.ts): leases
 * and nothing else. Taken also once this cell owns the namespace (it touches no key), and only
 * raises a lease this cell holds with that TTL: one that ended here stays ended.
 */
export function isLeasesOnly(record: ImportRecord): boolean {
  return record.leases.length > 0 && record.puts.length === 0 && record.deletes.length === 0 && !record.clear
    && record.floor === 0 && record.own === undefined && (record.requests ?? []).length === 0;
}

/** The leases raised (those held here with the same TTL), for the lease service's tracker. */
function raiseHeldLeases(writer: KvWriter, leases: readonly ImportLease[], limits: MvccLimits, destination: string | undefined): ImportLease[] {
  const raised: ImportLease[] = [];
  for (const lease of leases) {
    const held = readLease(writer, lease.id);
    if (held === null || held.ttlMs !== lease.ttlMs || !sameLease(writer, lease, destination)) continue;
    const remainingMs = Math.max(held.remainingMs, Math.min(lease.remainingMs, lease.ttlMs));
    checkpointLeases(writer, [{ id: lease.id, remainingMs }], limits);
    raised.push(lease);
  }
  assert(raised.length <= leases.length, 'a leases-only import raises only leases it names');
  return raised;
}

/** Drops a key's current record and lease attachment, leaving no event (it is not a delete here). */
function removeCurrent(writer: KvWriter, keyBytes: Uint8Array, tenants: readonly TenantRecord[], liveKeys: LiveKeyTally): void {
  const stored = writer.get(currentKey(keyBytes));
  if (stored === undefined) return;
  const prev = decodeRecord('', stored, true);
  keepLastPutValue(writer, keyBytes, stored);
  if (tenants.length > 0) {
    const key = new TextDecoder().decode(keyBytes);
    accountKeyChange(writer, tenants, key, { bytes: decodeRecord(key, stored).value.length, lease: prev.lease }, null);
  }
  writer.delete(currentKey(keyBytes));
  liveKeys.delta--;
  if (prev.lease !== 0) {
    writer.delete(leaseKey(prev.lease, keyBytes));
    adjustLeaseKeyCount(writer, prev.lease, -1);
  }
}

/**
 * A format-2 put event carries no value: history reads it from the key's current record (its last
 * put) or from the next event's prevKv. An import removes current records without an event (a
 * clear when a namespace leaves, a key replaced by the source's copy), so before one goes, the
 * key's last put event, if it is here, is rewritten in format 1's form, which carries the value:
 * a watch catching up from before the import still reads it (it stopped the node with an assert).
 * The content hash reads events in format 2's form (content-form.ts), so it does not change.
 */
function keepLastPutValue(writer: KvWriter, keyBytes: Uint8Array, stored: Uint8Array): void {
  const revision = recordModRevision(stored);
  const indexValue = writer.get(revisionIndexKey(keyBytes, revision));
  if (indexValue === undefined) return; // no event of it here (an imported record, or compacted)
  const eventKey = historyKey(revision, revisionIndexSeq(indexValue));
  const bytes = writer.get(eventKey);
  if (bytes === undefined) return;
  const event = decodeStoredEvent(revision, bytes);
  if (event.type !== 'put' || event.kv !== null) return;
  const kv = decodeRecord(event.key, stored);
  writer.put(eventKey, encodeEventScratch({ type: 'put', revision, kv, prevKv: event.prevKv }, keyBytes, 1).slice());
}

/** Cell ids are short names (`cell-1`); bounded like the rest of a record's fields. */
const cellNameBytesMax = 256;

/** The cell that granted lease `id` held here: its recorded origin, else this cell (`destination`). */
function heldOrigin(reader: KvWriter, id: number, destination: string | undefined): string {
  return leaseOrigin(reader, id) ?? destination ?? 'this cell';
}

/**
 * Whether the lease this cell holds under `lease.id` is the record's lease: the same origin. A
 * record of an older mover (no origin or destination) cannot tell: taken as the same, as then.
 */
function sameLease(reader: KvWriter, lease: ImportLease, destination: string | undefined): boolean {
  if (lease.origin === undefined || destination === undefined) return true;
  return (leaseOrigin(reader, lease.id) ?? destination) === lease.origin;
}
