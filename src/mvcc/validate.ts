// Validation of commands and reads against api.md's rules and the configured limits. Pure and
// deterministic: apply runs it again on every replica, so a committed entry that breaks a limit
// fails the same way everywhere and changes nothing.
import { importRecordBytesMax } from './import-keys.js';
import { assert } from '../base/assert.js';
import { InvalidArgumentError, TooLargeError } from '../base/errors.js';
import { compareBytes, prefixEnd, utf8 } from './bytes.js';
import { validateLeaseTtl } from './lease-state.js';
import { policyRecordBytesMax } from './policy-record.js';
import { ownershipRecordBytesMax } from './ownership-record.js';
import { tenantsRecordBytesMax } from './tenants-record.js';
import {
  compareOperators,
  compareTargets,
  type Command,
  type Compare,
  type DeleteOp,
  type KvRange,
  type MvccLimits,
  type PutOp,
  type RangeRequest,
  type TxnOp,
  type TxnRequest,
} from './types.js';

const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Returns the key's UTF-8 bytes. */
export function validateKey(key: unknown, limits: MvccLimits): Uint8Array {
  if (typeof key !== 'string' || !key.startsWith('/')) {
    throw new InvalidArgumentError('a key is a string that begins with "/"', { key });
  }
  // A lone surrogate would encode as U+FFFD, so two different strings would share one key.
  if (loneSurrogate.test(key)) throw new InvalidArgumentError('a key must be valid Unicode');
  const bytes = utf8(key);
  if (bytes.length > limits.keyBytesMax) throw new TooLargeError('key', bytes.length, limits.keyBytesMax);
  return bytes;
}

export function validateValue(value: unknown, limits: MvccLimits): void {
  if (!(value instanceof Uint8Array)) throw new InvalidArgumentError('a value is bytes');
  if (value.length > limits.valueBytesMax) {
    throw new TooLargeError('value', value.length, limits.valueBytesMax);
  }
}

export function validateCount(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new InvalidArgumentError(`${what} must be a non-negative integer below 2^53`, { [what]: value });
  }
  return value;
}

export function validateLeaseId(id: unknown): number {
  validateCount(id, 'lease');
  if (id === 0) throw new InvalidArgumentError('lease 0 means "no lease"');
  return id as number;
}

function validateOptionalCount(value: unknown, what: string): void {
  if (value !== undefined) validateCount(value, what);
}

export function validateRequestId(requestId: unknown, limits: MvccLimits): Uint8Array {
  if (typeof requestId !== 'string' || requestId.length === 0) {
    throw new InvalidArgumentError('a Request-ID is a non-empty string');
  }
  const bytes = utf8(requestId);
  if (bytes.length > limits.requestIdBytesMax) {
    throw new TooLargeError('Request-ID', bytes.length, limits.requestIdBytesMax);
  }
  return bytes;
}

/** The user-key range a get or delete covers: one key, or every key under a prefix. */
export function keyRangeOf(keyBytes: Uint8Array, prefix: boolean | undefined): KvRange {
  if (prefix === true) return { start: keyBytes, end: prefixEnd(keyBytes) };
  const end = new Uint8Array(keyBytes.length + 1);
  end.set(keyBytes);
  return { start: keyBytes, end };
}

export function validatePut(op: PutOp, limits: MvccLimits, inTxn: boolean): Uint8Array {
  const key = validateKey(op.key, limits);
  validateValue(op.value, limits);
  validateOptionalCount(op.lease, 'lease');
  validateOptionalCount(op.ifVersion, 'ifVersion');
  validateOptionalCount(op.ifRevision, 'ifRevision');
  if (inTxn && (op.ifVersion !== undefined || op.ifRevision !== undefined)) {
    throw new InvalidArgumentError('inside a txn, use compares instead of ifVersion/ifRevision');
  }
  return key;
}

export function validateDelete(op: DeleteOp, limits: MvccLimits, inTxn: boolean): KvRange {
  const key = validateKey(op.key, limits);
  validateOptionalCount(op.ifVersion, 'ifVersion');
  validateOptionalCount(op.ifRevision, 'ifRevision');
  const conditional = op.ifVersion !== undefined || op.ifRevision !== undefined;
  if (conditional && (inTxn || op.prefix === true)) {
    throw new InvalidArgumentError('ifVersion/ifRevision apply to a single-key delete outside a txn');
  }
  return keyRangeOf(key, op.prefix);
}

export function validateRange(request: RangeRequest, limits: MvccLimits, inTxn: boolean): KvRange {
  const key = validateKey(request.key, limits);
  validateOptionalCount(request.limit, 'limit');
  validateOptionalCount(request.revision, 'revision');
  if (inTxn && request.revision !== undefined && request.revision !== 0) {
    throw new InvalidArgumentError('a get inside a txn reads the txn revision');
  }
  if (request.rangeEnd === undefined) return keyRangeOf(key, request.prefix);
  const end = request.rangeEnd;
  if (inTxn) throw new InvalidArgumentError('a get inside a txn reads one key or a prefix, not [key, rangeEnd)');
  if (request.prefix === true) throw new InvalidArgumentError('a get has prefix or rangeEnd, not both');
  if (!(end instanceof Uint8Array) || end.length === 0) throw new InvalidArgumentError('rangeEnd is non-empty bytes');
  if (end.length > limits.keyBytesMax + 1) throw new TooLargeError('rangeEnd', end.length, limits.keyBytesMax + 1);
  // An end at or below the key is an empty range (as in etcd), not an error.
  return { start: key, end: compareBytes(end, key) > 0 ? end : key };
}

/** Whether a read names a single key (absent: key_not_found), not a prefix or a range. */
export function isSingleKeyRead(request: RangeRequest): boolean {
  return request.prefix !== true && request.rangeEnd === undefined;
}

function validateCompare(compare: Compare, limits: MvccLimits): void {
  validateKey(compare.key, limits);
  if (!compareTargets.includes(compare.target)) {
    throw new InvalidArgumentError(`unknown compare target ${String(compare.target)}`);
  }
  if (!compareOperators.includes(compare.op)) {
    throw new InvalidArgumentError(`unknown compare operator ${String(compare.op)}`);
  }
  if (compare.target === 'value') validateValue(compare.value, limits);
  else validateCount(compare.value, compare.target);
}

/** One branch's writes may not touch a key twice: the whole txn is one revision. */
function validateTxnBranch(ops: readonly TxnOp[], limits: MvccLimits): void {
  const putKeys: Uint8Array[] = [];
  const deleteRanges: KvRange[] = [];
  for (const op of ops) {
    if (op.type === 'put') putKeys.push(validatePut(op, limits, true));
    else if (op.type === 'delete') deleteRanges.push(validateDelete(op, limits, true));
    else if (op.type === 'get') validateRange(op, limits, true);
    else throw new InvalidArgumentError(`unknown txn operation ${String((op as TxnOp).type)}`);
  }
  const sorted = [...putKeys].sort(compareBytes);
  for (let i = 1; i < sorted.length; i++) {
    if (compareBytes(sorted[i - 1] as Uint8Array, sorted[i] as Uint8Array) === 0) {
      throw new InvalidArgumentError('a txn branch puts the same key twice');
    }
  }
  for (const key of putKeys) {
    for (const range of deleteRanges) {
      if (compareBytes(key, range.start) >= 0 && compareBytes(key, range.end) < 0) {
        throw new InvalidArgumentError('a txn branch puts and deletes the same key');
      }
    }
  }
}

export function validateTxn(txn: TxnRequest, limits: MvccLimits): void {
  const count = txn.compare.length + txn.success.length + txn.failure.length;
  if (count > limits.txnOpsMax) throw new TooLargeError('txn operations and compares', count, limits.txnOpsMax, 'too_many_operations');
  for (const compare of txn.compare) validateCompare(compare, limits);
  validateTxnBranch(txn.success, limits);
  validateTxnBranch(txn.failure, limits);
}

export function validateCommand(op: Command, limits: MvccLimits): void {
  switch (op.type) {
    case 'put':
      validatePut(op, limits, false);
      return;
    case 'delete':
      validateDelete(op, limits, false);
      return;
    case 'txn':
      validateTxn(op, limits);
      return;
    case 'compact':
      validateCount(op.revision, 'revision');
      return;
    case 'deleteLeaseKeys':
      validateCount(op.lease, 'lease');
      if (op.lease === 0) throw new InvalidArgumentError('lease 0 means "no lease"');
      return;
    case 'leaseGrant':
      validateLeaseTtl(op.ttlMs, limits);
      if (op.id !== undefined) validateLeaseId(op.id);
      return;
    case 'leaseGrantBatch': {
      if (op.grants.length < 1 || op.grants.length > limits.leaseGrantBatchMax) {
        if (op.grants.length < 1) throw new InvalidArgumentError('a lease grant batch grants at least one lease');
        throw new TooLargeError('lease grant batch', op.grants.length, limits.leaseGrantBatchMax);
      }
      const ids = new Set<number>();
      for (const grant of op.grants) {
        validateLeaseTtl(grant.ttlMs, limits);
        if (grant.id === undefined) continue;
        validateLeaseId(grant.id);
        if (ids.has(grant.id)) throw new InvalidArgumentError(`lease ${grant.id} is named twice in one batch`, { id: grant.id });
        ids.add(grant.id);
      }
      return;
    }
    case 'leaseRevoke':
      validateLeaseId(op.id);
      return;
    case 'leaseRevokeBatch': {
      if (op.ids.length < 1) throw new InvalidArgumentError('a lease revoke batch revokes at least one lease');
      if (op.ids.length > limits.leaseRevokeBatchMax) throw new TooLargeError('lease revoke batch', op.ids.length, limits.leaseRevokeBatchMax);
      const ids = new Set<number>();
      for (const id of op.ids) {
        validateLeaseId(id);
        if (ids.has(id)) throw new InvalidArgumentError(`lease ${id} is named twice in one batch`, { id });
        ids.add(id);
      }
      return;
    }
    case 'leaseCheckpoint':
      if (op.leases.length > limits.leaseCheckpointBatchMax) {
        throw new TooLargeError('lease checkpoint batch', op.leases.length, limits.leaseCheckpointBatchMax);
      }
      for (const lease of op.leases) {
        validateLeaseId(lease.id);
        validateCount(lease.remainingMs, 'remainingMs');
      }
      return;
    case 'seqCreate':
      validateSeqPrefix(op.prefix, limits);
      validateValue(op.value, limits);
      validateLeaseId(op.lease);
      return;
    case 'seqCheck':
      validateSeqKey(op.prefix, op.key, limits);
      validateLeaseId(op.lease);
      return;
    case 'seqRelease':
      validateSeqKey(op.prefix, op.key, limits);
      return;
    case 'policySet':
      validateCount(op.ifVersion, 'ifVersion');
      if (op.record.length > policyRecordBytesMax) throw new TooLargeError('a policy record', op.record.length, policyRecordBytesMax);
      return;
    case 'tenantsSet':
      validateCount(op.ifVersion, 'ifVersion');
      if (op.record.length > tenantsRecordBytesMax) throw new TooLargeError('a tenant table', op.record.length, tenantsRecordBytesMax);
      return;
    case 'ownershipSet':
      if (op.record.length > ownershipRecordBytesMax) throw new TooLargeError('an ownership table', op.record.length, ownershipRecordBytesMax);
      return;
    case 'importKeys':
      if (op.record.length > importRecordBytesMax) throw new TooLargeError('an import record', op.record.length, importRecordBytesMax);
      return;
    case 'upgradeStore':
      validateCount(op.storeFormat, 'storeFormat');
      if (op.storeFormat < 1 || op.storeFormat > 0xff) throw new InvalidArgumentError('a store format is 1 to 255');
      return;
    default:
      throw new InvalidArgumentError(`unknown command ${String((op as Command).type)}`);
  }
}

/**
 * Contender keys are `{prefix}{12 digits}`: fixed width, so key order is revision order. A
 * revision of 10^12 or more (a restored cell's epoch, mvcc/epoch.ts, starts at 2^40) is written
 * `r{16 digits}`: 'r' sorts after every digit, so such a key follows every 12-digit one of the
 * same queue (a contender restored from the backup stays ahead of the new cell's), and 16 digits
 * hold every revision below 2^53. Cells of epoch 0 below 10^12 revisions never write the wide form.
 */
export const seqDigits = 12;
const seqWideMark = 'r';
const seqWideDigits = 16;
const seqNarrowEnd = 10 ** seqDigits;
const seqKeyPattern = new RegExp(`^(\\d{${seqDigits}}|${seqWideMark}\\d{${seqWideDigits}})$`);

/** The sequence part of the contender key created at `revision`. */
export function seqSuffix(revision: number): string {
  assert(Number.isSafeInteger(revision) && revision > 0, 'a contender revision is a positive count');
  if (revision < seqNarrowEnd) return String(revision).padStart(seqDigits, '0');
  return `${seqWideMark}${String(revision).padStart(seqWideDigits, '0')}`;
}

function validateSeqPrefix(prefix: unknown, limits: MvccLimits): void {
  const bytes = validateKey(prefix, limits);
  if (!(prefix as string).endsWith('/') || bytes.length + seqDigits > limits.keyBytesMax) {
    throw new InvalidArgumentError('a queue prefix ends with "/" and leaves room for the sequence', { prefix });
  }
}

/** Returns the key's sequence number (its createRevision). */
export function validateSeqKey(prefix: string, key: unknown, limits: MvccLimits): number {
  validateSeqPrefix(prefix, limits);
  const suffix = typeof key === 'string' && key.startsWith(prefix) ? key.slice(prefix.length) : '';
  const wide = suffix.startsWith(seqWideMark);
  const revision = Number(wide ? suffix.slice(1) : suffix);
  // The wide form only for what the narrow one cannot hold: one key per revision.
  if (!seqKeyPattern.test(suffix) || (wide && revision < seqNarrowEnd)) {
    throw new InvalidArgumentError(`not a contender key of ${prefix}`, { key });
  }
  return revision;
}
