// `baton snapshot status` reads a Baton snapshot saved either way (baton snapshot save: the bare
// stream; etcdctl snapshot save: etcd's framing around it): the same hash (HashKV at the
// snapshot's revision), revision and key count; a damaged or foreign file is refused by name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EntryType } from '../../../src/raft/types.js';
import { MemoryEngine, MvccStore, defaultMvccLimits, encodeCommand, hashKeySpace, utf8 } from '../../../src/mvcc/index.js';
import type { Command } from '../../../src/mvcc/index.js';
import { snapshotPadding } from '../../../src/api/grpc/snapshot-stream.js';
import { snapshotStatus } from '../../../src/cli/snapshot-status.js';

test('snapshot status: both framings, the HashKV of the snapshot\'s revision, damage refused', () => {
  const store = new MvccStore(new MemoryEngine());
  let index = 0;
  const apply = (op: Command): void => {
    const data = encodeCommand({ proposedAtMs: 1, op }, defaultMvccLimits);
    store.applyBatch([{ index: ++index, term: 3, type: EntryType.normal, data }]);
  };
  for (let i = 0; i < 40; i++) apply({ type: 'put', key: `/s/${i % 25}`, value: utf8(`v${i}`) } as Command);
  const body = Buffer.concat([...store.snapshot().chunks]);
  const padded = Buffer.concat([body, snapshotPadding(body.length)]);
  const framed = Buffer.concat([padded, createHash('sha256').update(padded).digest()]);
  const dir = mkdtempSync(join(tmpdir(), 'snapshot-status-'));
  try {
    const expected = { hash: hashKeySpace(store).hash, revision: 40, compactRevision: 0, totalKeys: 25, appliedIndex: 40, appliedTerm: 3 };
    for (const [name, bytes, framing] of [['baton.snap', body, 'baton'], ['etcdctl.db', framed, 'etcdctl']] as const) {
      writeFileSync(join(dir, name), bytes);
      const status = snapshotStatus(join(dir, name));
      const { hash, revision, compactRevision, totalKeys, appliedIndex, appliedTerm } = status;
      assert.deepEqual({ hash, revision, compactRevision, totalKeys, appliedIndex, appliedTerm }, expected, name);
      assert.equal(status.framing, framing);
      assert.equal(status.totalSize, bytes.length);
      assert.equal(status.epoch, 0);
      assert.equal(status.leases, 0);
    }
    const damaged = Buffer.from(body);
    const middle = Math.floor(damaged.length / 2);
    damaged[middle] = (damaged[middle] as number) ^ 0xff;
    writeFileSync(join(dir, 'damaged.snap'), damaged);
    assert.throws(() => snapshotStatus(join(dir, 'damaged.snap')), /damaged\.snap/);
    writeFileSync(join(dir, 'bolt.db'), Buffer.alloc(8192));
    assert.throws(() => snapshotStatus(join(dir, 'bolt.db')), /not a Baton snapshot/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
