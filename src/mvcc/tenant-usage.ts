// Tenants' stored use (issue #28): per tenant the keys and value bytes it holds, kept beside the
// tables (key 0x07 + name -> u64 keys, u64 bytes, u64 leases) so snapshots carry them. Changed by
// every put and delete (revision-writer.ts), checked before a command's first write so a refused
// command changes nothing, and recomputed from the current table whenever the tenant table
// changes (a prefix added or moved brings its keys along). Deterministic: every member agrees.
import { addUsage, quotaRefusal, tenantOfKey, txnOpsRefusal, zeroUsage, type TenantRecord, type TenantUsage, type UsageDelta } from '../base/tenants.js';
import { concatBytes, prefixEnd, readU64, u64Bytes } from './bytes.js';
import { currentRange } from './layout.js';
import { decodeRecord } from './records.js';
import { readTenantsRecord } from './tenants-record.js';
import type { KvReader, KvWriter, PutOp } from './types.js';

const usagePrefix = Uint8Array.of(0x07);
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

/** The tenant table as of this state: read once per command by whoever needs it. */
export function tenantsOf(reader: KvReader): readonly TenantRecord[] {
  return readTenantsRecord(reader).tenants;
}

/** Applies one key's change (prev/next value sizes, null = absent) to its tenant's use, if any. */
export function accountKeyChange(
  writer: KvWriter,
  tenants: readonly TenantRecord[],
  key: string,
  prevBytes: number | null,
  nextBytes: number | null,
): void {
  if (tenants.length === 0) return;
  const tenant = tenantOfKey(tenants, key);
  if (tenant === null) return;
  const delta: UsageDelta = {
    keys: (nextBytes === null ? 0 : 1) - (prevBytes === null ? 0 : 1),
    bytes: (nextBytes ?? 0) - (prevBytes ?? 0),
    leases: 0,
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
  for (const put of puts) {
    const tenant = tenantOfKey(tenants, put.key);
    if (tenant === null) continue;
    const stored = reader.get(currentKeyOf(put.key));
    const prev = stored === undefined ? null : decodeRecord(put.key, stored);
    const delta = deltas.get(tenant) ?? { keys: 0, bytes: 0, leases: 0 };
    delta.keys += prev === null ? 1 : 0;
    delta.bytes += put.value.length - (prev?.value.length ?? 0);
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

/** Recounts every tenant's keys and bytes from the current table; drops removed tenants' counts. */
export function recomputeUsage(writer: KvWriter, previous: readonly TenantRecord[], tenants: readonly TenantRecord[]): void {
  for (const old of previous) writer.delete(usageKey(old.name));
  for (const tenant of tenants) {
    let keys = 0;
    let bytes = 0;
    for (const prefix of tenant.prefixes) {
      const start = encoder.encode(prefix);
      for (const entry of writer.range(currentRange({ start, end: prefixEnd(start) }))) {
        const keyBytes = entry.key.subarray(1);
        // A longer prefix of another tenant inside this one: that tenant's key, not this one's.
        const key = new TextDecoder().decode(keyBytes);
        if (tenantOfKey(tenants, key) !== tenant) continue;
        keys++;
        bytes += decodeRecord(key, entry.value).value.length;
      }
    }
    writeUsage(writer, tenant.name, { keys, bytes, leases: 0 });
  }
}
