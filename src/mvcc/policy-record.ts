// The cell's authorization policy as replicated state (docs/design/authorization.md): one
// record beside the member table, written only by a committed policySet command, carried by
// snapshots like every engine entry. The store keeps it opaque (src/auth defines and validates
// its JSON) with a version that counts its changes: u64 version, then the record's bytes.
import { PreconditionFailedError, TooLargeError } from '../base/errors.js';
import { concatBytes, readU64, u64Bytes } from './bytes.js';
import type { KvReader, KvWriter, PolicySetOp } from './types.js';

/** Sorts after the member table (0x02) and before every table. */
export const policyKey = Uint8Array.of(0x03);
/** Roles and bindings for a cell's principals; the limit bounds what one entry may make us store. */
export const policyRecordBytesMax = 256 * 1024;

export interface StoredPolicy {
  /** 0 before the first change. */
  readonly version: number;
  readonly record: Uint8Array | null;
}

export function readPolicyRecord(reader: KvReader): StoredPolicy {
  const stored = reader.get(policyKey);
  if (stored === undefined) return { version: 0, record: null };
  return { version: readU64(stored, 0), record: stored.subarray(8) };
}

/** Applies a policySet: the new record if the version is still the one it was read at. */
export function applyPolicySet(writer: KvWriter, op: PolicySetOp): number {
  if (op.record.length > policyRecordBytesMax) throw new TooLargeError('a policy record', op.record.length, policyRecordBytesMax);
  const current = readPolicyRecord(writer);
  if (op.ifVersion !== current.version) {
    throw new PreconditionFailedError(`the policy is at version ${current.version}, not ${op.ifVersion}: read it again`, {
      current: current.version,
    });
  }
  const version = current.version + 1;
  writer.put(policyKey, concatBytes([u64Bytes(version), op.record]));
  return version;
}
