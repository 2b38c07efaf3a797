// Every limit of the contract (docs/api/contract.md, "Limits") and every bound that protects a
// node, once, each with its reason, and after each group the relations that must hold between
// them, checked when the module loads (as TigerBeetle's constants.zig does). The modules' default
// option objects (defaultMvccLimits, defaultApiLimits, defaultRaftConfig, ...) are built from
// these; a deployment may lower some through its configuration, never past the relations.
import { assert } from './assert.js';

export const KiB = 1024;
export const MiB = 1024 * KiB;

// --- The contract: a breach is 413 too_large (or 400) naming the limit --------------------------

/** etcd's default too; keys are path-like names, not payloads. */
export const keyBytesMax = 4 * KiB;
/** A coordination value (a config, an address, a small document); bigger data belongs elsewhere. */
export const valueBytesMax = 1 * MiB;
/** Operations plus compares in one transaction: etcd's --max-txn-ops default is 128 too. */
export const txnOpsMax = 128;
/** A Request-ID (an idempotency key): a UUID or a short name, never data. */
export const requestIdBytesMax = 128;
/**
 * An HTTP request body, and an encoded command in the log: room for one key and one value of the
 * maximum size with their JSON or base64 overhead (4/3) and a transaction's compares.
 */
export const requestBytesMax = 1.5 * MiB;
/** Leases: at least two election timeouts (a lease outlives a leader change), at most a day. */
export const leaseTtlMsMin = 5_000;
export const leaseTtlMsMax = 24 * 60 * 60 * 1000;
/** Leases in a cell, and keys on one lease (a revocation deletes them in one entry). */
export const leasesMax = 1_000_000;
export const leaseKeysMax = 10_000;
/** Lease ids per keepalive call, and leases per page of GET /v1/leases. */
export const keepaliveIdsMax = 1_000;
/**
 * Leases granted by one POST /v1/leases/batch, and by one leaseGrantBatch log entry (op 19): a
 * session storm costs one request and one entry per thousand sessions instead of one each (a
 * cell whose store format predates op 19 proposes one entry per grant, together).
 */
export const leaseGrantBatchMax = 1_000;
/**
 * Leases revoked by one leaseRevokeBatch log entry (op 21, the leader's expiry in a format-4
 * store): a mass expiry costs one entry per thousand lost sessions instead of one each. The
 * leader also bounds the keys an entry deletes (lease-config.ts), so its apply stays short.
 */
export const leaseRevokeBatchMax = 1_000;
export const leaseListLimitDefault = 1_000;
export const leaseListLimitMax = 10_000;
/** A lock's wait, its owner description, and holders per lock list. */
export const lockWaitMsMax = 300_000;
export const lockOwnerBytesMax = 256;
export const lockListMax = 1_000;

/** JSON punctuation and field names around one key and value in a request body (generous). */
const requestFramingBytes = 16 * KiB;
assert(keyBytesMax + Math.ceil((valueBytesMax * 4) / 3) + requestFramingBytes <= requestBytesMax,
  'a maximal key and base64 value fit one request body');
assert(requestIdBytesMax < keyBytesMax, 'a Request-ID is smaller than a key');
assert(leaseTtlMsMin < leaseTtlMsMax, 'the TTL bounds leave a range');
assert(leaseListLimitDefault <= leaseListLimitMax, 'the default lease page is allowed');

// --- The log and the network: what one entry, message and frame may carry ------------------------

/** Proposal id (16) and frame header around a command in an entry (driver/entry-frame.ts). */
export const entryFramingBytes = 64;
/** Entry data Raft packs into one append (at least one entry goes, whatever its size). */
export const appendBytesMax = 1 * MiB;
/** Committed entries handed to the state machine per Ready: bounds one apply transaction. */
export const applyBytesMax = 4 * MiB;
/** A leader's uncommitted log: past it, proposals are refused (429), not queued without end. */
export const uncommittedBytesMax = 64 * MiB;
/** A peer frame: a full append plus one maximal entry, with room for a peer with bigger appends. */
export const frameBytesMax = 16 * MiB;
/** A snapshot travels in chunks of this size, each in one frame. */
export const snapshotChunkBytes = 1 * MiB;

assert(requestBytesMax + entryFramingBytes <= applyBytesMax, 'a maximal entry fits one apply batch');
assert(appendBytesMax + requestBytesMax + entryFramingBytes <= frameBytesMax,
  'an append that overshoots by one maximal entry still fits a frame');
assert(requestBytesMax <= uncommittedBytesMax, 'an idle leader admits a maximal proposal');
assert(snapshotChunkBytes + entryFramingBytes <= frameBytesMax, 'a snapshot chunk fits a frame');

// --- The node: queues and work per step -----------------------------------------------------------

/** Proposals waiting for their outcome on one node; beyond it, 429 overloaded at once. */
export const proposalsPendingMax = 10_000;
/**
 * Bytes of proposals a follower has forwarded to its leader and not yet seen answered; past it,
 * 429 overloaded at once (a proposal is admitted whatever its size when none is outstanding).
 * Forwarded proposals share the peer connection with heartbeats and their answers: unbounded,
 * a write flood through the followers put megabytes of them ahead of every heartbeat answer in
 * the TCP stream to a busy leader, and read rounds, lease renewals and check-quorum waited
 * seconds behind them (#31: renewals failed and the leader changed while keys were attached).
 */
export const forwardedBytesMax = 2 * MiB;
/** Readys on their way to disk at once: the WAL group-commits them (put p50 -30% over one). */
export const readysInFlightMax = 8;
/**
 * A snapshot is due after this many bytes of log since the last one (or snapshotEntries); with a
 * store that checkpoints, the most log kept below the checkpoint for lagging followers.
 */
export const snapshotLogBytes = 64 * MiB;
/**
 * A store that checkpoints does so at least every this many applied entries (besides its
 * interval): the log an OS crash makes a member replay stays bounded under any write rate.
 */
export const checkpointEntriesMax = 50_000;
/**
 * A snapshot is encoded in chunks of this size on the event loop: 1 MiB chunks held the loop
 * 5-10 ms each and put p99 spiked whenever a member snapshotted; the file takes one per write.
 */
export const snapshotEncodeChunkBytes = 64 * KiB;
/** A gRPC Maintenance.Snapshot stream sends the store in messages of this size. */
export const grpcSnapshotChunkBytes = 256 * KiB;
/** Keep-alive HTTP sockets idle longer than this are closed (a client's pool reopens one). */
export const httpKeepAliveMs = 30_000;
/**
 * A graceful stop (SIGTERM) gives client requests in flight this long to be answered, after
 * leadership moved away; a request waits at most its own timeout, so longer would be waiting for
 * nothing but a stuck client.
 */
export const gracefulStopMs = 5_000;
/** A stopping server that has not exited after this long exits anyway (code 1), whatever hangs. */
export const stopBoundMs = 30_000;
/** Keepalives being answered at once: renewals have their own budget, apart from reads. */
export const keepalivesInFlightMax = 8_192;
/** Range reads answered at once, and of those, prefix reads (the expensive ones, shed first). */
export const readsInFlightMax = 1_024;
export const listsInFlightMax = 64;

/** Revisions the lock change feed reads as events per applied batch; beyond it, waiters re-check. */
export const lockFeedEventsReadMax = 10_000;
/** A snapshot file's metadata block (configuration, member table): bounded before it is parsed. */
export const snapshotMetaBytesMax = 1 * MiB;

assert(readysInFlightMax >= 1, 'at least one Ready is written at a time');
assert(snapshotEncodeChunkBytes <= snapshotChunkBytes, 'an encoded chunk fits a transfer chunk');
assert(listsInFlightMax <= readsInFlightMax, 'lists are a share of reads');
assert(keepaliveIdsMax * 16 <= requestBytesMax, 'a full keepalive call fits a request body');

// --- The stream (/v1/stream): the node's sessions and the router's relay both hold these ---------

/** JSON framing around one request in a stream frame: a frame is at most a request plus this. */
export const streamFrameFramingBytes = 64 * KiB;
/** Requests (put/get/txn/...) awaiting their answer on one stream connection; more is `overloaded`. */
export const streamRequestsInFlightMax = 1_024;
/** Watch output stops being written while a stream socket holds more than this (backpressure). */
export const streamSocketBufferedBytesHigh = 1 * MiB;
/** A stream connection whose socket holds more than this (it stopped reading answers) is closed. */
export const streamSocketBufferedBytesMax = 64 * MiB;

assert(streamSocketBufferedBytesHigh < streamSocketBufferedBytesMax, 'backpressure starts before a reader is cut off');
assert(requestBytesMax + streamFrameFramingBytes <= streamSocketBufferedBytesHigh * 2, 'a maximal frame is within twice the high mark');

// --- Watches ---------------------------------------------------------------------------------------

/** Undelivered events and bytes per watcher; past either it ends with slow_consumer. */
export const watchBufferedEventsMax = 1_024;
export const watchBufferedBytesMax = 4 * MiB;
/** Watchers per stream connection and per node (each costs an entry in the watch index). */
export const watchersPerConnectionMax = 10_000;
export const watchersPerNodeMax = 250_000;

assert(2 * (keyBytesMax + valueBytesMax) <= watchBufferedBytesMax,
  'a watcher can buffer one event of a maximal key and value with its previous value');
assert(watchersPerConnectionMax <= watchersPerNodeMax, 'a connection holds a share of the node\'s watchers');
