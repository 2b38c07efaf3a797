// etcd compares take any int64; Baton's numeric attributes are all >= 0 and its log stores compare
// values unsigned, so the facade decides a compare with a negative constant itself. Found by the
// Go clientv3 bench: `Version(k) > -1` was refused, while etcd 3.4 accepts it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileCompare } from '../../../src/api/grpc/kv-service.js';
import type { CompareMsg } from '../../../src/api/grpc/wire.js';
import { MemoryEngine, MvccStore, defaultMvccLimits, encodeCommand, utf8 } from '../../../src/mvcc/index.js';
import { EntryType } from '../../../src/raft/index.js';
import type { Compare } from '../../../src/mvcc/index.js';

const compare = (result: CompareMsg['result'], target: CompareMsg['target'], field: keyof CompareMsg, value: number): CompareMsg =>
  ({ result, target, key: Buffer.from('k'), range_end: Buffer.alloc(0), [field]: String(value) }) as CompareMsg;

/** Whether a txn with these compares takes its success branch on a store where /k has version 1. */
function succeeds(compares: readonly (Compare | null)[]): boolean {
  const store = new MvccStore(new MemoryEngine(), defaultMvccLimits);
  const apply = (index: number, op: Parameters<typeof encodeCommand>[0]['op']) => {
    const [outcome] = store.applyBatch([{ index, term: 1, type: EntryType.normal, data: encodeCommand({ proposedAtMs: 1, op }, defaultMvccLimits) }]);
    return outcome;
  };
  apply(1, { type: 'put', key: '/k', value: utf8('v') });
  const outcome = apply(2, {
    type: 'txn',
    compare: compares.filter((c): c is Compare => c !== null),
    success: [],
    failure: [],
  });
  assert.ok(outcome?.type === 'applied' && outcome.result.type === 'txn');
  return outcome.result.succeeded;
}

test('a compare with a negative constant is decided as etcd decides it', () => {
  const [equal, greater, less, notEqual] = [0, 1, 2, 3] as const;
  // VERSION > -1 and != -1 always hold: dropped from the conjunction.
  assert.equal(compileCompare(compare(greater, 0, 'version', -1)), null);
  assert.equal(compileCompare(compare(notEqual, 2, 'mod_revision', -5)), null);
  assert.equal(succeeds([compileCompare(compare(greater, 0, 'version', -1))]), true);
  // < -1 and == -1 never hold: the txn takes its failure branch.
  assert.equal(succeeds([compileCompare(compare(less, 1, 'create_revision', -1))]), false);
  assert.equal(succeeds([compileCompare(compare(equal, 4, 'lease', -3))]), false);
  // Non-negative constants compare as before.
  assert.deepEqual(compileCompare(compare(equal, 0, 'version', 1)), { key: '/k', target: 'version', op: '==', value: 1 });
  assert.equal(succeeds([compileCompare(compare(equal, 0, 'version', 1))]), true);
});
