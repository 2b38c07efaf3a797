// Applies one validated command to the store inside the batch's write transaction. Every check
// that can fail (preconditions, compares, limits) runs before the first write, so a typed error
// leaves nothing behind; only a broken invariant (an assertion) aborts the whole batch.
import {
  CompactedError,
  FutureRevisionError,
  InvalidArgumentError,
  PreconditionFailedError,
} from '../base/errors.js';
import { compareBytes, fromUtf8, utf8 } from './bytes.js';
import { checkEpochRoom } from './epoch.js';
import { currentRange } from './layout.js';
import { applyLeaseCommand, applyLeaseRevokeBatch, checkPutLeases } from './lease-apply.js';
import { applySeqCommand } from './seq-apply.js';
import { applyPolicySet } from './policy-record.js';
import { applyImportKeys } from './import-keys.js';
import { applyOwnershipSet } from './ownership-record.js';
import { applyTenantsSet } from './tenants-record.js';
import { checkPutQuotas, tenantsOf } from './tenant-usage.js';
import type { TenantRecord } from '../base/tenants.js';
import { readLeaseKeys, readRange } from './read.js';
import { RevisionWriter } from './revision-writer.js';
import type { LiveKeyTally } from './live-keys.js';
import { storeFormatLatest, storeFormatRevokeBatch } from './records.js';
import { validateCommand, validateDelete, validatePut } from './validate.js';
import { assert, unreachable } from '../base/assert.js';
import type {
  MvccBugs,
  Command,
  CommandResult,
  Compare,
  DeleteOp,
  DeleteResult,
  KeyValue,
  KvWriter,
  MvccLimits,
  MvccMeta,
  PutOp,
  PutResult,
  StoreFormat,
  TxnOpResult,
  TxnRequest,
  TxnResult,
} from './types.js';

export interface CommandApplied {
  readonly result: CommandResult;
  readonly meta: MvccMeta;
}

export function applyCommand(
  writer: KvWriter,
  context: {
    meta: MvccMeta;
    limits: MvccLimits;
    bugs?: MvccBugs;
    tenants?: readonly TenantRecord[];
    /** Where created and deleted keys are counted (the store's batch tally: live-keys.ts). */
    liveKeys?: LiveKeyTally;
  },
  op: Command,
): CommandApplied {
  const { meta, limits } = context;
  // The store passes its decoded table (no read per command); other callers read this state's.
  const tenants = context.tenants ?? tenantsOf(writer);
  // A put's validation yields its key's UTF-8, which applying needs too (saves an encode).
  const putKeyBytes = op.type === 'put' ? validatePut(op, limits, false) : null;
  if (putKeyBytes === null) validateCommand(op, limits);
  if (op.type === 'compact') return applyCompact(meta, op.revision);
  if (op.type === 'upgradeStore') return applyUpgradeStore(meta, op.storeFormat);
  if (op.type === 'policySet') return { result: { type: 'policySet', version: applyPolicySet(writer, op), revision: meta.revision }, meta };
  if (op.type === 'tenantsSet') return { result: { type: 'tenantsSet', version: applyTenantsSet(writer, op), revision: meta.revision }, meta };
  if (op.type === 'importKeys') {
    const applied = applyImportKeys(writer, meta, op.record, limits, tenants, context.liveKeys);
    return { result: { type: 'importKeys', imported: applied.imported, leases: applied.leases, revision: applied.meta.revision }, meta: applied.meta };
  }
  if (op.type === 'ownershipSet') {
    return { result: { type: 'ownershipSet', epoch: applyOwnershipSet(writer, op).table.epoch, revision: meta.revision }, meta };
  }
  if (op.type === 'put') checkPutLeases(writer, [op], limits);
  if (op.type === 'put' && context.bugs?.tenantQuotaOff !== true) checkPutQuotas(writer, tenants, [op], null);
  if (op.type === 'leaseRevokeBatch') {
    // Below format 4 a member may run a build that refuses op 21 (malformed: no change): a
    // member that knows it refuses it there too, so the replicas never differ.
    if (meta.storeFormat < storeFormatRevokeBatch) {
      throw new InvalidArgumentError(`leaseRevokeBatch needs store format ${storeFormatRevokeBatch}; this store writes ${meta.storeFormat}`);
    }
    // A revision per lease at most: the last one must still be in the epoch.
    checkEpochRoom(meta.epoch, meta.revision + op.ids.length - 1);
    const result = applyLeaseRevokeBatch(writer, meta.revision, meta.storeFormat, tenants, op, context.liveKeys);
    return { result, meta: { ...meta, revision: result.revision } };
  }
  // Every command below may issue a revision: none may leave the epoch (refused before any write).
  checkEpochRoom(meta.epoch, meta.revision);
  const revisions = new RevisionWriter(writer, meta.revision, meta.storeFormat, tenants, context.liveKeys);
  let result: CommandResult;
  switch (op.type) {
    case 'put':
      result = applyPut(revisions, op, putKeyBytes as Uint8Array);
      break;
    case 'delete':
      result = applyDelete(revisions, op, limits);
      break;
    case 'txn':
      result = applyTxn(revisions, op, { meta, limits });
      break;
    case 'deleteLeaseKeys': {
      let deleted = 0;
      for (const key of readLeaseKeys(writer, op.lease)) {
        if (revisions.delete(utf8(key), key)) deleted++;
      }
      result = { type: 'deleteLeaseKeys', deleted, revision: revisions.finalRevision };
      break;
    }
    case 'leaseGrant':
    case 'leaseGrantBatch':
    case 'leaseRevoke':
    case 'leaseCheckpoint':
      result = applyLeaseCommand(revisions, op, limits);
      break;
    case 'seqCreate':
    case 'seqCheck':
    case 'seqRelease':
      result = applySeqCommand(revisions, op, limits, context.bugs);
      break;
    default:
      return unreachable(op, 'command');
  }
  return { result, meta: { ...meta, revision: revisions.finalRevision } };
}

function checkPreconditions(
  current: KeyValue | null,
  conditions: { ifVersion?: number | undefined; ifRevision?: number | undefined },
): void {
  const version = current?.version ?? 0;
  const modRevision = current?.modRevision ?? 0;
  const versionFails = conditions.ifVersion !== undefined && conditions.ifVersion !== version;
  const revisionFails = conditions.ifRevision !== undefined && conditions.ifRevision !== modRevision;
  if (!versionFails && !revisionFails) return;
  const what = versionFails ? `version is ${version}` : `modRevision is ${modRevision}`;
  throw new PreconditionFailedError(`precondition failed: the key's ${what}`, {
    current: current === null ? null : { version, modRevision },
  });
}

function applyPut(revisions: RevisionWriter, op: PutOp, keyBytes: Uint8Array = utf8(op.key)): PutResult {
  const prev = revisions.current(keyBytes, op.key);
  checkPreconditions(prev, op);
  const kv = revisions.put(keyBytes, { key: op.key, value: op.value, lease: op.lease ?? 0 }, prev);
  return {
    type: 'put',
    created: kv.version === 1,
    version: kv.version,
    revision: kv.modRevision,
    fencingToken: kv.createRevision,
  };
}

function applyDelete(revisions: RevisionWriter, op: DeleteOp, limits: MvccLimits): DeleteResult {
  const range = validateDelete(op, limits, false);
  if (op.prefix !== true) {
    const keyBytes = range.start;
    checkPreconditions(revisions.current(keyBytes, op.key), op);
    const deleted = revisions.delete(keyBytes, op.key) ? 1 : 0;
    return { type: 'delete', deleted, revision: revisions.finalRevision };
  }
  // Collect first: the engine forbids writing while a range is being iterated.
  const keys: Uint8Array[] = [];
  for (const entry of revisions.writer.range(currentRange(range))) keys.push(entry.key.subarray(1));
  for (const keyBytes of keys) assert(revisions.delete(keyBytes, fromUtf8(keyBytes)), 'listed key');
  return { type: 'delete', deleted: keys.length, revision: revisions.finalRevision };
}

function compareHolds(current: KeyValue | null, compare: Compare): boolean {
  let order: number;
  if (compare.target === 'value') {
    // As in etcd: a value compare against an absent key is false, whatever the operator.
    if (current === null) return false;
    order = compareBytes(current.value, compare.value as Uint8Array);
  } else {
    order = (current?.[compare.target] ?? 0) - (compare.value as number);
  }
  switch (compare.op) {
    case '==':
      return order === 0;
    case '!=':
      return order !== 0;
    case '<':
      return order < 0;
    case '>':
      return order > 0;
  }
}

function applyTxn(
  revisions: RevisionWriter,
  txn: TxnRequest,
  context: { meta: MvccMeta; limits: MvccLimits },
): TxnResult {
  const succeeded = txn.compare.every((compare) =>
    compareHolds(revisions.current(utf8(compare.key), compare.key), compare),
  );
  const branch = succeeded ? txn.success : txn.failure;
  // Before the first write: a txn is all or nothing.
  const puts = branch.filter((op): op is PutOp => op.type === 'put');
  checkPutLeases(revisions.writer, puts, context.limits);
  checkPutQuotas(revisions.writer, revisions.tenantTable, puts, branch.length);
  const results: TxnOpResult[] = [];
  for (const op of branch) {
    if (op.type === 'put') results.push(applyPut(revisions, op));
    else if (op.type === 'delete') results.push(applyDelete(revisions, op, context.limits));
    else {
      // Reads inside a txn see the txn's earlier writes: the current table already holds them.
      const reader = { reader: revisions.writer, meta: context.meta, limits: context.limits };
      results.push(readRange(reader, { ...op, revision: 0 }, true));
    }
  }
  // Every answer in a txn reports the txn's one revision.
  const revision = revisions.finalRevision;
  return {
    type: 'txn',
    succeeded,
    revision,
    results: results.map((result) => ({ ...result, revision })),
  };
}

/**
 * Moves the store format forward. A format this version does not write is refused (the entry
 * changes nothing here): a format changes only how state is encoded, never the state, so a member
 * left behind still answers every read as the others do.
 */
function applyUpgradeStore(meta: MvccMeta, storeFormat: number): CommandApplied {
  if (storeFormat > storeFormatLatest) {
    throw new InvalidArgumentError(`store format ${storeFormat} is newer than this version writes (${storeFormatLatest})`, {
      storeFormat,
    });
  }
  if (storeFormat < meta.storeFormat) {
    throw new InvalidArgumentError(`the store writes format ${meta.storeFormat}: it never goes back to ${storeFormat}`, {
      storeFormat,
    });
  }
  const next = { ...meta, storeFormat: storeFormat as StoreFormat };
  return { result: { type: 'upgradeStore', storeFormat: next.storeFormat, revision: meta.revision }, meta: next };
}

/** Moves the compact revision; history-compactor.ts deletes the history below it in steps. */
function applyCompact(meta: MvccMeta, revision: number): CommandApplied {
  if (revision > meta.revision) throw new FutureRevisionError(revision, meta.revision);
  if (revision <= meta.compactRevision) throw new CompactedError(meta.compactRevision);
  const next = { ...meta, compactRevision: revision };
  return { result: { type: 'compact', revision: meta.revision, compactRevision: revision }, meta: next };
}
