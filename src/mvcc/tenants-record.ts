// The cell's tenant table as replicated state (issue #28): one record beside the policy, written
// only by a committed tenantsSet command (with a version compare, like policySet), carried by
// snapshots like every engine entry. Stored as u64 version, then the table's JSON. Validated at
// apply from the bytes alone, so every member accepts or refuses the same entry.
import { InvalidArgumentError, PreconditionFailedError, TooLargeError } from '../base/errors.js';
import { limitsAddedLater, tenantConflict, type TenantLimits, type TenantRecord } from '../base/tenants.js';
import { concatBytes, readU64, u64Bytes } from './bytes.js';
import type { KvReader, KvWriter, TenantsSetOp } from './types.js';
import { recomputeUsage } from './tenant-usage.js';

/** After the ownership table (0x04); 0x05 left free for the namespace work beside it. */
export const tenantsKey = Uint8Array.of(0x06);
/** A thousand tenants with a few prefixes each fit well under this. */
export const tenantsRecordBytesMax = 512 * 1024;

export interface StoredTenants {
  /** 0 before the first change. */
  readonly version: number;
  readonly tenants: readonly TenantRecord[];
}

/**
 * The last stored record read and its parsed table: every write reads the table, and parsing and
 * validating it each time would cost more than the write. Keyed by the stored bytes themselves,
 * so a store holding another table (another test, a restore) never sees a stale one.
 */
let lastRead: { bytes: Uint8Array; parsed: StoredTenants } | null = null;

export function readTenantsRecord(reader: KvReader): StoredTenants {
  const stored = reader.get(tenantsKey);
  if (stored === undefined) return { version: 0, tenants: [] };
  if (lastRead !== null && equalBytes(lastRead.bytes, stored)) return lastRead.parsed;
  const parsed = { version: readU64(stored, 0), tenants: decodeTenants(stored.subarray(8)) };
  lastRead = { bytes: stored.slice(), parsed };
  return parsed;
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The JSON a tenantsSet carries: {"tenants": [...]}, every record checked against the others. */
export function encodeTenants(tenants: readonly TenantRecord[]): Uint8Array {
  return new TextEncoder().encode(JSON.stringify({ tenants }));
}

/** Parses and validates a table; throws InvalidArgumentError saying what is wrong. */
export function decodeTenants(bytes: Uint8Array): TenantRecord[] {
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    throw new InvalidArgumentError('a tenant table is not UTF-8 JSON');
  }
  const list = (json as { tenants?: unknown } | null)?.tenants;
  if (!Array.isArray(list)) throw new InvalidArgumentError('a tenant table is {"tenants": [...]}');
  const tenants: TenantRecord[] = [];
  for (const entry of list) {
    const record = recordOf(entry);
    const problem = tenantConflict(tenants, record);
    if (problem !== null) throw new InvalidArgumentError(problem);
    if (tenants.some((t) => t.name === record.name)) throw new InvalidArgumentError(`tenant ${record.name} appears twice`);
    tenants.push(record);
  }
  return tenants;
}

// A record written before a limit existed simply lacks it: read as null (unlimited), still valid.
const limitFields: ReadonlyArray<keyof TenantLimits> = [
  'maxKeys', 'maxBytes', 'maxLeases', 'maxTxnOps', 'readsPerSecond', 'writesPerSecond', 'maxConcurrentRequests', 'maxWatches',
  ...limitsAddedLater,
];

function recordOf(entry: unknown): TenantRecord {
  const e = entry as { name?: unknown; prefixes?: unknown; limits?: Record<string, unknown> } | null;
  if (e === null || typeof e !== 'object' || typeof e.name !== 'string') throw new InvalidArgumentError('a tenant needs a name');
  if (!Array.isArray(e.prefixes) || !e.prefixes.every((p) => typeof p === 'string')) {
    throw new InvalidArgumentError(`tenant ${e.name}: prefixes must be a list of strings`);
  }
  const limits: Record<string, number | null> = {};
  for (const field of limitFields) {
    const value = e.limits?.[field] ?? null;
    if (limitsAddedLater.includes(field)) {
      // An older member skips these: refusing the table for them here would split the cell.
      limits[field] = typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : null;
      continue;
    }
    if (value !== null && typeof value !== 'number') throw new InvalidArgumentError(`tenant ${e.name}: ${field} must be a number or null`);
    limits[field] = value;
  }
  return { name: e.name, prefixes: e.prefixes as string[], limits: limits as unknown as TenantLimits };
}

/** Applies a tenantsSet: the new table if the version is still the one it was read at. */
export function applyTenantsSet(writer: KvWriter, op: TenantsSetOp): number {
  if (op.record.length > tenantsRecordBytesMax) throw new TooLargeError('a tenant table', op.record.length, tenantsRecordBytesMax);
  const tenants = decodeTenants(op.record);
  const current = writer.get(tenantsKey);
  const version = current === undefined ? 0 : readU64(current, 0);
  if (op.ifVersion !== version) {
    throw new PreconditionFailedError(`the tenant table is at version ${version}, not ${op.ifVersion}: read it again`, { current: version });
  }
  const previous = current === undefined ? [] : decodeTenants(current.subarray(8));
  writer.put(tenantsKey, concatBytes([u64Bytes(version + 1), op.record]));
  recomputeUsage(writer, previous, tenants);
  return version + 1;
}
