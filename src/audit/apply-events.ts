// Which committed entries are audited, decided at apply so every member writes the same record:
// policy and user changes, namespace-ownership changes (docs/design/cells.md), a lease revoked by a client (forced revocation; expiry is the cell's
// own work), a lock or election entry deleted by a client (forced release), compaction, store
// upgrades, membership changes, and every write authorization refused at apply. Everything else
// (puts, reads) is not audited, so the log costs the write path nothing but this filter.
import { decodeCommandUnchecked, type ApplyOutcome, type Command } from '../mvcc/index.js';
import { EntryType, type Entry } from '../raft/index.js';
import type { AuditRecord } from './audit-log.js';

const queueRoots = ['/locks/', '/elections/'];
/** The result kinds an audited command answers with: only these entries are decoded. */
const auditedResults: ReadonlySet<string> = new Set(['policySet', 'ownershipSet', 'tenantsSet', 'leaseRevoke', 'compact', 'upgradeStore', 'delete']);

/** Commands whose outcome is audited whatever it is (the proposer waits for their record). */
export function isAuditedCommand(op: Command): boolean {
  switch (op.type) {
    case 'policySet':
    case 'ownershipSet':
    case 'tenantsSet':
    case 'leaseRevoke':
    case 'compact':
    case 'upgradeStore':
      return true;
    case 'delete':
      return queueRoots.some((root) => op.key.startsWith(root));
    default:
      return false;
  }
}

/** The records of one applied batch (entries as the state machine saw them, with their outcomes). */
export function auditRecordsOf(entries: readonly Entry[], outcomes: readonly ApplyOutcome[]): AuditRecord[] {
  const records: AuditRecord[] = [];
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i] as Entry;
    const outcome = outcomes[i] as ApplyOutcome;
    if (entry.type === EntryType.config) {
      records.push({ event: 'membership', principal: null, index: entry.index, result: 'ok' });
      continue;
    }
    // The cheap filter first: only these outcomes can be audited, so only their entries are decoded.
    const denied = outcome.type === 'failed' && outcome.error.code === 'permission_denied';
    const kind = outcome.type === 'applied' ? outcome.result.type : null;
    if (!denied && (kind === null || !auditedResults.has(kind))) continue;
    const envelope = decodeCommandUnchecked(entry.data);
    const op = envelope.op;
    const principal = envelope.principal ?? null;
    if (!denied && (!isAuditedCommand(op) || (op.type === 'leaseRevoke' && principal === null))) continue;
    const result = outcome.type === 'applied' ? 'ok' : outcome.type === 'failed' ? outcome.error.code : 'noop';
    const revision = outcome.type === 'applied' && 'revision' in outcome.result ? (outcome.result as { revision: number }).revision : undefined;
    records.push({
      event: denied ? 'denied' : eventName(op),
      principal,
      address: envelope.address ?? null,
      index: entry.index,
      ...(revision === undefined ? {} : { revision }),
      result,
      detail: detailOf(op),
    });
  }
  return records;
}

function eventName(op: Command): string {
  switch (op.type) {
    case 'policySet':
      return 'policy';
    case 'leaseRevoke':
      return 'lease-revoke';
    case 'delete':
      return 'lock-release';
    case 'upgradeStore':
      return 'upgrade';
    case 'ownershipSet':
      return 'ownership';
    case 'tenantsSet':
      return 'tenants';
    default:
      return op.type;
  }
}

/** What the operation was about: keys and ids, never values or the policy's secrets. */
function detailOf(op: Command): Record<string, unknown> {
  switch (op.type) {
    case 'put':
      return { op: 'put', key: op.key };
    case 'delete':
      return { op: 'delete', key: op.key, ...(op.prefix === true ? { prefix: true } : {}) };
    case 'txn':
      return { op: 'txn', compares: op.compare.length, success: op.success.length, failure: op.failure.length };
    case 'leaseGrant':
    case 'leaseRevoke':
      return { op: op.type, ...('id' in op && op.id !== undefined ? { lease: op.id } : {}) };
    case 'seqCreate':
    case 'seqCheck':
    case 'seqRelease':
      return { op: op.type, prefix: op.prefix };
    case 'compact':
      return { op: 'compact', revision: op.revision };
    case 'policySet':
      return { op: 'policySet', ifVersion: op.ifVersion, bytes: op.record.length };
    case 'ownershipSet':
      return { op: 'ownershipSet', bytes: op.record.length };
    case 'tenantsSet':
      return { op: 'tenantsSet', ifVersion: op.ifVersion, bytes: op.record.length };
    default:
      return { op: op.type };
  }
}
