// The MVCC state machine: revisions, history, transactions, compaction, Request-ID dedup and
// snapshots over a small ordered KvEngine (LMDB in src/storage, MemoryEngine here).
export { MvccStore } from './store.js';
export { checkEpochRoom, epochEnd, epochFloor, epochOfRevision, epochRevisions, epochUsedFraction, epochWarnFraction } from './epoch.js';
export { policyRecordBytesMax, readPolicyRecord, type StoredPolicy } from './policy-record.js';
export { decodeTenants, encodeTenants, readTenantsRecord, tenantsRecordBytesMax, type StoredTenants } from './tenants-record.js';
export { readLeaseKeys } from './read.js';
export type { MvccSnapshot } from './store.js';
export { MemoryEngine } from './memory-engine.js';
export { encodeCommand, decodeCommand, decodeCommandUnchecked } from './command-codec.js';
export { ContentHasher } from './content-hash.js';
export { hashKeySpace, hashKeySpaceSteps } from './kv-hash.js';
export type { HashableStore, KvHash } from './kv-hash.js';
export { encodeSnapshot, decodeSnapshot } from './snapshot-stream.js';
export { compareBytes, lowerBoundByKey, prefixEnd, utf8, fromUtf8 } from './bytes.js';
export { validateLeaseTtl } from './lease-state.js';
export { compactEventHead, storeFormatGrantBatch, storeFormatLatest, storeFormatRevokeBatch } from './records.js';
export type { LeaseRecord } from './lease-state.js';
export { cellWork, compareOperators, compareTargets, defaultMvccLimits } from './types.js';
export type { Origin } from './types.js';
export type {
  ApplyOutcome,
  Command,
  CommandAuthorizer,
  CommandEnvelope,
  CommandProposer,
  CommandResult,
  CommandType,
  CompactOp,
  CompactResult,
  Compare,
  CompareOperator,
  CompareTarget,
  DeleteLeaseKeysOp,
  DeleteLeaseKeysResult,
  DeleteOp,
  DeleteResult,
  KeyValue,
  KvEngine,
  KvEntry,
  KvRange,
  KvReader,
  KvWriter,
  LeaseCheckpointOp,
  LeaseCheckpointResult,
  LeaseGrantOp,
  LeaseGrantResult,
  LeaseRevokeOp,
  LeaseRevokeResult,
  LeaseRevokeBatchOp,
  LeaseRevokeBatchResult,
  MvccEvent,
  MvccBugs,
  MvccLimits,
  MvccMeta,
  Proposed,
  PutOp,
  PutResult,
  RangeRequest,
  RangeResult,
  ResultOf,
  SeqCheckOp,
  SeqCheckResult,
  SeqCreateOp,
  SeqCreateResult,
  SeqPosition,
  SeqReleaseOp,
  SeqReleaseResult,
  TxnOp,
  TxnOpResult,
  TxnRequest,
  TxnResult,
  StoreFormat,
  UpgradeStoreOp,
  UpgradeStoreResult,
} from './types.js';
export { currentKey, tablesWithData } from './layout.js';
export { isLeasesOnly, leasesOnlyImportBytesMax, parseImportRecord } from './import-keys.js';
export { restampImportRequests } from './namespace-requests.js';
