// Every access an operation makes, read or revealed, so that no part of a request escapes the
// decision (etcd's holes were parts that did: a txn's prevKv and lease attach, CVE-2026-44283;
// a lease's key list, CVE-2023-32082; a watch past its range, GHSA-xg4h-6gfc-h4m8). `Command` is
// a closed union: a new command kind without a case here does not compile.
import { electionKeyPrefix, electionsRoot, lockKeyPrefix } from '../base/queue-prefixes.js';
import type { Command, RangeRequest, TxnOp } from '../mvcc/index.js';
import type { Access } from './decide.js';
import { boundedRange, keyRange, prefixRange, type AuthOp, type KeyRange } from './policy.js';

/** What the decision may need to know of the state (a lease's attached keys). */
export interface AccessLookup {
  leaseKeys(lease: number): readonly string[];
}

/** The accesses of a command written through the log; [] for the cell's own housekeeping. */
export function commandAccesses(command: Command, lookup: AccessLookup): Access[] {
  switch (command.type) {
    case 'put':
    case 'delete':
      return txnOpAccesses(command);
    case 'txn':
      // A compare reveals the key's attributes; both branches are checked, whichever runs.
      return [
        ...command.compare.map((compare): Access => ({ op: 'read', range: keyRange(compare.key) })),
        ...command.success.flatMap(txnOpAccesses),
        ...command.failure.flatMap(txnOpAccesses),
      ];
    case 'leaseGrant':
    case 'leaseGrantBatch':
      return [{ op: 'lease', anyKey: true }];
    case 'leaseRevoke':
      // Revoking deletes every key attached to the lease.
      return [{ op: 'lease', anyKey: true }, ...lookup.leaseKeys(command.id).map((key): Access => ({ op: 'write', range: keyRange(key) }))];
    case 'leaseRevokeBatch':
      // The leader's expiry (cell work, never a client's); were it a principal's, as leaseRevoke.
      return [{ op: 'lease', anyKey: true }, ...command.ids.flatMap((id) => lookup.leaseKeys(id).map((key): Access => ({ op: 'write', range: keyRange(key) })))];
    case 'seqCreate':
      // A contender's entry is attached to its lease, as a put with a lease is.
      return [{ op: queueOp(command.prefix), range: prefixRange(command.prefix) }, ...(command.lease === 0 ? [] : [leaseAccess])];
    case 'seqCheck':
    case 'seqRelease':
      return [{ op: queueOp(command.prefix), range: prefixRange(command.prefix) }];
    case 'compact':
    case 'upgradeStore':
    case 'policySet':
    case 'ownershipSet':
    case 'importKeys':
    case 'tenantsSet':
      return [adminAccess];
    case 'deleteLeaseKeys':
    case 'leaseCheckpoint':
      return []; // proposed by the leader itself (expiry, checkpoints), never by a client
  }
}

function txnOpAccesses(op: TxnOp): Access[] {
  switch (op.type) {
    case 'put':
      // Attaching a key to a lease needs the lease operation too (etcd's CVE-2026-44283 was a
      // lease attached without a check); whoever revokes the lease needs write on the key.
      return op.lease === undefined || op.lease === 0
        ? [{ op: 'write', range: keyRange(op.key) }]
        : [{ op: 'write', range: keyRange(op.key) }, leaseAccess];
    case 'delete':
      return [{ op: 'write', range: op.prefix === true ? prefixRange(op.key) : keyRange(op.key) }];
    case 'get':
      return [{ op: 'read', range: readRange(op) }];
  }
}

/** The keys a range read covers. */
export function readRange(request: Pick<RangeRequest, 'key' | 'prefix' | 'rangeEnd'>): KeyRange {
  if (request.prefix === true) return prefixRange(request.key);
  return boundedRange(request.key, request.rangeEnd);
}

/** A read served by a member (not through the log). */
export function readAccesses(request: Pick<RangeRequest, 'key' | 'prefix' | 'rangeEnd'>): Access[] {
  return [{ op: 'read', range: readRange(request) }];
}

/** A watch: its range when created; each event's key again before it is sent (watchEventAccess). */
export function watchAccesses(request: { key: string; prefix?: boolean; rangeEnd?: Uint8Array }): Access[] {
  return [{ op: 'watch', range: readRange(request) }];
}

export function watchEventAccess(key: string): Access {
  return { op: 'watch', range: keyRange(key) };
}

/** A lease's time-to-live: with its key list, each key is revealed (CVE-2023-32082). */
export function leaseInfoAccesses(keys: readonly string[]): Access[] {
  return [leaseAccess, ...keys.map((key): Access => ({ op: 'read', range: keyRange(key) }))];
}

function queueOp(prefix: string): AuthOp {
  return prefix.startsWith(electionsRoot) ? 'election' : 'lock';
}

/** Administration (members, maintenance, compaction, the policy): `admin` on every key. */
export const adminAccess: Access = { op: 'admin', range: { from: new Uint8Array(0), to: null } };

/** The cell's status and member list. */
export const clusterInfoAccess: Access = { op: 'read', clusterInfo: true };

/** A lease's keepalive, list entry or time-to-live without keys. */
export const leaseAccess: Access = { op: 'lease', anyKey: true };

/** A lock's state, holder and fencing check: its whole queue. */
export function lockAccesses(name: string): Access[] {
  return [{ op: 'lock', range: prefixRange(lockKeyPrefix(name)) }];
}

/** An election's leader and observation: its whole queue. */
export function electionAccesses(name: string): Access[] {
  return [{ op: 'election', range: prefixRange(electionKeyPrefix(name)) }];
}
