// Tenants' stored use (issue #28): per tenant the keys, value bytes and leases it holds, kept beside
// the tables (key 0x07 + name -> u64 keys, u64 bytes, u64 leases) so snapshots carry them. Changed
// by every put and delete (revision-writer.ts), checked before a command's first write so a refused
// command changes nothing, and recomputed from the current table whenever the tenant table
// changes (a prefix added or moved brings its keys along). Deterministic: every member agrees.
//
// Leases: a lease counts to every tenant in which it holds at least one key (key 0x08 + lease:8 +
// name -> u64 keys of that lease in that tenant). Unlike "the tenant of the first key attached",
// this follows from the current keys alone, so a recount after a table change gives the same
// answer as the running counts, whatever order the keys were written in. A lease holding no key
// counts to no tenant (a grant names no key).
import { addUsage, quotaRefusal, tenantOfKey, txnOpsRefusal, zeroUsage, type TenantRecord, type TenantUsage, type UsageDelta } from '../base/tenants.js';
import { concatBytes, prefixEnd, readU64, u64Bytes } from './bytes.js';
import { currentRange } from './layout.js';
import { decodeRecord } from './records.js';
import { readTenantsRecord } from './tenants-record.js';
import type { KvReader, KvWriter, PutOp } from './types.js';

const usagePrefix = Uint8Array.of(0x07);
const leaseTenantPrefix = Uint8Array.of(0x08);
const encoder = new TextEncoder();

function usageKey(name: string): Uint8Array {
  return concatBytes([usagePrefix, encoder.encode(name)]);
}

export function readTenantUsage(reader: KvReader, name: string): TenantUsage {
  const stored = reader.get(usageKey(name));
  if (stored === undefined) return zeroUsage;
  return { keys: readU64(stored, 0), bytes: readU64(stored, 8), leases: readU64(stored, 16) };
}

function writeUsage(writer: KvWriter, name: string, usage: TenantUsage): void {
  writer.put(usageKey(name), concatBytes([u64Bytes(usage.keys), u64Bytes(usage.bytes), u64Bytes(usage.leases)]));
}

function leaseTenantKey(lease: number, name: string): Uint8Array {
  return concatBytes([leaseTenantPrefix, u64Bytes(lease), encoder.encode(name)]);
}

/** Keys lease `lease` holds in tenant `name`. */
function leaseKeysIn(reader: KvReader, lease: number, name: string): number {
  const stored = reader.get(leaseTenantKey(lease, name));
  return stored === undefined ? 0 : readU64(stored, 0);
}

/** Moves the keys `lease` holds in `name` by `by`; returns the change to the tenant's lease count (-1, 0, +1). */
function moveLeaseKeys(writer: KvWriter, lease: number, name: string, by: number): number {
  const before = leaseKeysIn(writer, lease, name);
  const after = before + by;
  if (after < 0) throw new Error(`lease ${lease} holds ${before} keys of tenant ${name}, not ${-by} to remove`);
  if (after === 0) writer.delete(leaseTenantKey(lease, name));
  else writer.put(leaseTenantKey(lease, name), u64Bytes(after));
  return (after > 0 ? 1 : 0) - (before > 0 ? 1 : 0);
}

/** The tenant table as of this state: read once per command by whoever needs it. */
export function tenantsOf(reader: KvReader): readonly TenantRecord[] {
  return readTenantsRecord(reader).tenants;
}

/** One side of a key's change: its value size and lease (0 = none), or null when the key is absent. */
export interface KeyState {
  readonly bytes: number;
  readonly lease: number;
}

/** Applies one key's change (before/after, null = absent) to its tenant's use, if any. */
export function accountKeyChange(
  writer: KvWriter,
  tenants: readonly TenantRecord[],
  key: string,
  prev: KeyState | null,
  next: KeyState | null,
): void {
  if (tenants.length === 0) return;
  const tenant = tenantOfKey(tenants, key);
  if (tenant === null) return;
  const prevLease = prev?.lease ?? 0;
  const nextLease = next?.lease ?? 0;
  let leases = 0;
  if (prevLease !== nextLease) {
    if (prevLease !== 0) leases += moveLeaseKeys(writer, prevLease, tenant.name, -1);
    if (nextLease !== 0) leases += moveLeaseKeys(writer, nextLease, tenant.name, 1);
  }
  const delta: UsageDelta = {
    keys: (next === null ? 0 : 1) - (prev === null ? 0 : 1),
    bytes: (next?.bytes ?? 0) - (prev?.bytes ?? 0),
    leases,
  };
  writeUsage(writer, tenant.name, addUsage(readTenantUsage(writer, tenant.name), delta));
}

/**
 * Refuses (throws quota_exceeded) puts that would grow a tenant past a limit, before any write.
 * Deletes in the same txn are not credited here: growth is judged on the puts alone, which can
 * only refuse more, never let a tenant past its limit.
 */
export function checkPutQuotas(
  reader: KvReader,
  tenants: readonly TenantRecord[],
  puts: readonly PutOp[],
  txnOps: number | null,
): void {
  if (tenants.length === 0) return;
  const deltas = new Map<TenantRecord, { keys: number; bytes: number; leases: number }>();
  // Leases this command would bring into a tenant that holds no key of them yet, each once.
  const newLeases = new Set<string>();
  for (const put of puts) {
    const tenant = tenantOfKey(tenants, put.key);
    if (tenant === null) continue;
    const stored = reader.get(currentKeyOf(put.key));
    const prev = stored === undefined ? null : decodeRecord(put.key, stored);
    const delta = deltas.get(tenant) ?? { keys: 0, bytes: 0, leases: 0 };
    delta.keys += prev === null ? 1 : 0;
    delta.bytes += put.value.length - (prev?.value.length ?? 0);
    const lease = put.lease ?? 0;
    const id = `${lease}\u0000${tenant.name}`;
    if (lease !== 0 && prev?.lease !== lease && !newLeases.has(id) && leaseKeysIn(reader, lease, tenant.name) === 0) {
      newLeases.add(id);
      delta.leases += 1;
    }
    deltas.set(tenant, delta);
  }
  for (const [tenant, delta] of deltas) {
    if (txnOps !== null) {
      const tooBig = txnOpsRefusal(tenant, txnOps);
      if (tooBig !== null) throw tooBig;
    }
    const refusal = quotaRefusal(tenant, readTenantUsage(reader, tenant.name), delta);
    if (refusal !== null) throw refusal;
  }
}

function currentKeyOf(key: string): Uint8Array {
  return currentRange({ start: encoder.encode(key), end: encoder.encode(key) }).start;
}

/** Recounts every tenant's keys, bytes and leases from the current table; drops removed tenants' counts. */
export function recomputeUsage(writer: KvWriter, previous: readonly TenantRecord[], tenants: readonly TenantRecord[]): void {
  for (const old of previous) writer.delete(usageKey(old.name));
  const stale = [...writer.range({ start: leaseTenantPrefix, end: prefixEnd(leaseTenantPrefix) })].map((entry) => entry.key.slice());
  for (const key of stale) writer.delete(key);
  for (const tenant of tenants) {
    let keys = 0;
    let bytes = 0;
    const leaseKeys = new Map<number, number>();
    for (const prefix of tenant.prefixes) {
      const start = encoder.encode(prefix);
      for (const entry of writer.range(currentRange({ start, end: prefixEnd(start) }))) {
        const keyBytes = entry.key.subarray(1);
        // A longer prefix of another tenant inside this one: that tenant's key, not this one's.
        const key = new TextDecoder().decode(keyBytes);
        if (tenantOfKey(tenants, key) !== tenant) continue;
        keys++;
        const record = decodeRecord(key, entry.value);
        bytes += record.value.length;
        if (record.lease !== 0) leaseKeys.set(record.lease, (leaseKeys.get(record.lease) ?? 0) + 1);
      }
    }
    for (const [lease, count] of leaseKeys) writer.put(leaseTenantKey(lease, tenant.name), u64Bytes(count));
    writeUsage(writer, tenant.name, { keys, bytes, leases: leaseKeys.size });
  }
}
