// The one limits table (src/base/limits.ts): the contract's figures are the table's, and every
// module's default options are built from it, so a limit changes in one place.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../project-root.js';
import * as limits from '../../../src/base/limits.js';
import { defaultMvccLimits } from '../../../src/mvcc/index.js';
import { defaultApiLimits } from '../../../src/api/http/limits.js';
import { defaultRaftConfig } from '../../../src/raft/index.js';
import { defaultTransportLimits } from '../../../src/transport/limits.js';
import { defaultWatchLimits } from '../../../src/watch/index.js';
import { defaultLockLimits } from '../../../src/lock/lock-service.js';
import { defaultLeaseServiceOptions } from '../../../src/lease/lease-config.js';
import { defaultReadGateOptions } from '../../../src/kv/read-gate.js';
import { defaultStreamLimits } from '../../../src/api/stream/index.js';


test('the contract states the table\'s limits', () => {
  const contract = readFileSync(join(projectRoot(import.meta.url, 'docs/api/contract.md'), 'docs', 'api', 'contract.md'), 'utf8');
  assert.match(contract, new RegExp(`Keys are at most ${limits.keyBytesMax} bytes`));
  assert.match(contract, new RegExp(`capped at ${limits.valueBytesMax / limits.MiB} MiB`));
  assert.match(contract, new RegExp(`≤${limits.requestIdBytesMax} bytes`));
  assert.match(contract, new RegExp(`at most ${limits.txnOpsMax} operations and compares`));
});

test('every module\'s defaults come from the table', () => {
  for (const defaults of [defaultMvccLimits, defaultApiLimits]) {
    assert.equal(defaults.keyBytesMax, limits.keyBytesMax);
    assert.equal(defaults.valueBytesMax, limits.valueBytesMax);
    assert.equal(defaults.txnOpsMax, limits.txnOpsMax);
    assert.equal(defaults.requestBytesMax, limits.requestBytesMax);
  }
  assert.equal(defaultMvccLimits.requestIdBytesMax, limits.requestIdBytesMax);
  assert.deepEqual(
    [defaultMvccLimits.leaseTtlMsMin, defaultMvccLimits.leaseTtlMsMax, defaultMvccLimits.leasesMax, defaultMvccLimits.leaseKeysMax],
    [limits.leaseTtlMsMin, limits.leaseTtlMsMax, limits.leasesMax, limits.leaseKeysMax],
  );
  assert.deepEqual(
    [defaultRaftConfig.appendBytesMax, defaultRaftConfig.applyBytesMax, defaultRaftConfig.uncommittedBytesMax],
    [limits.appendBytesMax, limits.applyBytesMax, limits.uncommittedBytesMax],
  );
  assert.equal(defaultTransportLimits.frameBytesMax, limits.frameBytesMax);
  assert.equal(defaultTransportLimits.snapshotChunkBytes, limits.snapshotChunkBytes);
  assert.equal(defaultWatchLimits.bufferedBytesMax, limits.watchBufferedBytesMax);
  assert.equal(defaultWatchLimits.watchersPerNodeMax, limits.watchersPerNodeMax);
  assert.deepEqual(defaultLockLimits, { waitMsMax: limits.lockWaitMsMax, ownerBytesMax: limits.lockOwnerBytesMax, listMax: limits.lockListMax });
  assert.equal(defaultLeaseServiceOptions.keepaliveIdsMax, limits.keepaliveIdsMax);
  assert.equal(defaultReadGateOptions.readsInFlightMax, limits.readsInFlightMax);
  // The node's stream sessions and the router's stream relay share these (src/router/stream-relay.ts).
  assert.deepEqual(defaultStreamLimits, {
    socketBufferedBytesHigh: limits.streamSocketBufferedBytesHigh,
    socketBufferedBytesMax: limits.streamSocketBufferedBytesMax,
    requestsInFlightMax: limits.streamRequestsInFlightMax,
  });
});

test('the relations hold: a maximal request fits an entry, an append a frame, an event a watcher', () => {
  const maximalBody = limits.keyBytesMax + Math.ceil((limits.valueBytesMax * 4) / 3);
  assert.ok(maximalBody < limits.requestBytesMax);
  assert.ok(limits.appendBytesMax + limits.requestBytesMax + limits.entryFramingBytes <= limits.frameBytesMax);
  assert.ok(2 * (limits.keyBytesMax + limits.valueBytesMax) <= limits.watchBufferedBytesMax);
  // A lease outlives a leader change: two election timeouts at the default tick (100 ms).
  assert.ok(limits.leaseTtlMsMin >= 2 * defaultRaftConfig.electionTicks * 100);
});
