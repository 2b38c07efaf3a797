// The store's live-key count (etcd_debugging_mvcc_keys_total, src/mvcc/live-keys.ts) on the real
// LMDB engine: after every batch of a seeded mix of puts (with and without leases), deletes,
// delete-ranges, txns, lease grants and revocations (what an expiry proposes), lease key
// deletions, lock-queue entries, namespace imports (a move's copy and an aborted move's clear),
// aborted batches and snapshot installs, the count kept at apply equals a full scan of the
// current table. BATON_SEED=<n> reruns one seed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SeededRandom, chance, pick, randomInt, type Random } from '../../../src/base/random.js';
import { EntryType, type Entry } from '../../../src/raft/types.js';
import { MvccStore, defaultMvccLimits, encodeCommand } from '../../../src/mvcc/index.js';
import { encodeCommandUnchecked } from '../../../src/mvcc/command-codec.js';
import type { Command, KvEngine, KvWriter, TxnOp } from '../../../src/mvcc/index.js';
import { encodeImportRecord } from '../../../src/mvcc/import-keys.js';
import { tablePrefix, tableRange } from '../../../src/mvcc/layout.js';
import { LmdbEngine } from '../../../src/storage/index.js';
import { withTempDir } from '../storage/temp-dir.js';

const text = (s: string): Uint8Array => new TextEncoder().encode(s);
const limits = { ...defaultMvccLimits, leaseAttachStrict: true };
const keys = ['/a', '/a/1', '/a/2', '/b', '/b/1', '/c', '/q/x', '/L/' + 'z'.repeat(600)];
const imported = ['/pay/1', '/pay/2', '/pay/3', '/pay/sub/4'];

/** The truth: the current table's records, one by one (not the engine's count). */
function scanLiveKeys(engine: KvEngine): number {
  let count = 0;
  for (const _entry of engine.range(tableRange(tablePrefix.current))) count++;
  return count;
}

/** The cell's ownership table: this is cell-2, /pay/ belongs to cell-1 (so imports land in it). */
const ownership: Command = {
  type: 'ownershipSet',
  record: text(JSON.stringify({
    epoch: 2, cell: 'cell-2',
    namespaces: [{ prefix: '/', cell: 'cell-2', epoch: 2 }, { prefix: '/pay/', cell: 'cell-1', epoch: 2 }],
    cells: [{ id: 'cell-1', endpoints: ['http://a:1'] }, { id: 'cell-2', endpoints: ['http://b:1'] }],
  })),
};

function randomCommand(random: Random, leases: number[]): Command {
  const lease = (): number => (leases.length > 0 && chance(random, 0.4) ? pick(random, leases) : 0);
  const roll = randomInt(random, 0, 99);
  if (roll < 30) return { type: 'put', key: pick(random, keys), value: text(`v${roll}`), lease: lease() };
  if (roll < 40) return { type: 'delete', key: pick(random, keys) };
  if (roll < 46) return { type: 'delete', key: pick(random, ['/a', '/b', '/', '/q/']), prefix: true };
  if (roll < 60) {
    const op = (): TxnOp => {
      const kind = randomInt(random, 0, 3);
      if (kind === 0) return { type: 'put', key: pick(random, keys), value: text('t') };
      if (kind === 1) return { type: 'delete', key: pick(random, keys) };
      if (kind === 2) return { type: 'delete', key: pick(random, ['/a', '/b/', '/']), prefix: true };
      return { type: 'get', key: pick(random, keys) };
    };
    return {
      type: 'txn',
      compare: [{ key: pick(random, keys), target: 'version', op: pick(random, ['==', '>'] as const), value: randomInt(random, 0, 2) }],
      success: Array.from({ length: randomInt(random, 0, 4) }, op),
      failure: Array.from({ length: randomInt(random, 0, 4) }, op),
    };
  }
  if (roll < 66) return { type: 'leaseGrant', ttlMs: 10_000 };
  // An expiry: the leader proposes the revocation, which deletes the lease's keys.
  if (roll < 69 && leases.length > 0) return { type: 'leaseRevoke', id: pick(random, leases) };
  // Many expiries in one entry (op 21), the leader's batched path; a repeated id is skipped.
  if (roll < 72 && leases.length > 0) return { type: 'leaseRevokeBatch', ids: [pick(random, leases), pick(random, leases), pick(random, leases)] };
  if (roll < 75 && leases.length > 0) return { type: 'deleteLeaseKeys', lease: pick(random, leases) };
  if (roll < 82 && leases.length > 0) return { type: 'seqCreate', prefix: '/q/', value: text('c'), lease: pick(random, leases), ifEmpty: false };
  if (roll < 85) return { type: 'seqRelease', prefix: '/q/', key: `/q/${String(randomInt(random, 1, 400)).padStart(12, '0')}` };
  if (roll < 95) {
    // A move's import batch, or (clear, nothing to put) an aborted move's cleanup.
    const abortCleanup = chance(random, 0.3);
    const puts = abortCleanup ? [] : imported.filter(() => chance(random, 0.5)).map((key) => ({
      key, value: text('i'), version: 1, createRevision: 1, modRevision: 1, lease: 0,
    }));
    const deletes = abortCleanup ? [] : imported.filter(() => chance(random, 0.2));
    return { type: 'importKeys', record: encodeImportRecord({ prefix: '/pay/', clear: abortCleanup || chance(random, 0.2), floor: 0, puts, deletes, leases: [] }) };
  }
  return { type: 'compact', revision: 1 };
}

/** Fails every write transaction while `failing` is set, after its body ran: LMDB aborts it. */
class FailingEngine implements KvEngine {
  failing = false;
  constructor(private readonly inner: LmdbEngine) {}
  get(key: Uint8Array): Uint8Array | undefined {
    return this.inner.get(key);
  }
  range(range: Parameters<KvEngine['range']>[0]): ReturnType<KvEngine['range']> {
    return this.inner.range(range);
  }
  count(range: Parameters<KvEngine['range']>[0]): number {
    return this.inner.count(range);
  }
  write<T>(body: (writer: KvWriter) => T): T {
    return this.inner.write((writer) => {
      const result = body(writer);
      if (this.failing) throw new Error('disk full (test)');
      return result;
    });
  }
  snapshotEntries(): ReturnType<KvEngine['snapshotEntries']> {
    return this.inner.snapshotEntries();
  }
  replaceAll(entries: Parameters<KvEngine['replaceAll']>[0]): void {
    this.inner.replaceAll(entries);
  }
}

function seeds(): readonly bigint[] {
  const one = process.env['BATON_SEED'];
  return one === undefined ? [1n, 2n, 3n, 0x29n] : [BigInt(one)];
}

test('the live-key count kept at apply equals a full scan after every batch of a random mix', async () => {
  for (const seed of seeds()) {
    await withTempDir(async (dir) => {
      const random = new SeededRandom(seed);
      const lmdb = LmdbEngine.open({ directory: dir });
      const engine = new FailingEngine(lmdb);
      try {
        let store = new MvccStore(engine, limits);
        const leases: number[] = [];
        let index = 0;
        const entry = (op: Command): Entry => {
          index++;
          // Unchecked: an invalid command (a txn putting one key twice) must change nothing, count included.
          return { index, term: 1, type: EntryType.normal, data: encodeCommandUnchecked({ proposedAtMs: 1_000 + index, source: 1, op }) };
        };
        store.applyBatch([entry(ownership)]);
        assert.equal(store.liveKeys(), 0);
        const seen = { created: 0, aborted: 0, imports: 0, revokes: 0, reopened: 0 };
        for (let round = 0; round < 150; round++) {
          const ops = Array.from({ length: randomInt(random, 1, 8) }, () => randomCommand(random, leases));
          const entries = ops.map(entry);
          const where = `seed ${seed} round ${round}`;
          if (chance(random, 0.05)) {
            // An aborted batch keeps nothing: neither its writes nor its count.
            const before = store.liveKeys();
            engine.failing = true;
            assert.throws(() => store.applyBatch(entries), /disk full/);
            engine.failing = false;
            index -= entries.length;
            assert.equal(store.liveKeys(), before, `${where}: aborted batch`);
            assert.equal(store.liveKeys(), scanLiveKeys(engine), `${where}: aborted batch vs scan`);
            seen.aborted++;
            continue;
          }
          const outcomes = store.applyBatch(entries);
          outcomes.forEach((outcome) => {
            if (outcome.type !== 'applied') return;
            if (outcome.result.type === 'leaseGrant') leases.push(outcome.result.id);
            if (outcome.result.type === 'leaseRevoke') {
              leases.splice(leases.indexOf(outcome.result.id), 1);
              if (outcome.result.deleted > 0) seen.revokes++;
            }
            if (outcome.result.type === 'leaseRevokeBatch') {
              for (const revoked of outcome.result.leases) {
                leases.splice(leases.indexOf(revoked.id), 1);
                if (revoked.deleted > 0) seen.revokes++;
              }
            }
            if (outcome.result.type === 'importKeys') seen.imports++;
          });
          const scanned = scanLiveKeys(engine);
          seen.created = Math.max(seen.created, scanned);
          assert.equal(store.liveKeys(), scanned, `${where}: ${ops.map((op) => op.type).join(',')}`);
          if (chance(random, 0.05)) {
            // A member that opens the same files counts them once, and carries on from there.
            store = new MvccStore(engine, limits);
            assert.equal(store.liveKeys(), scanned, `${where}: reopened`);
            seen.reopened++;
          }
        }
        // The mix really did what the count must follow.
        assert.ok(seen.created >= 5 && seen.aborted > 0 && seen.imports > 0 && seen.revokes > 0, JSON.stringify(seen));
      } finally {
        await lmdb.close();
      }
    });
  }
});

test('a snapshot install replaces the count with the installed state\'s', async () => {
  await withTempDir(async (dir) => {
    const source = LmdbEngine.open({ directory: `${dir}/a` });
    const target = LmdbEngine.open({ directory: `${dir}/b` });
    try {
      const a = new MvccStore(source, limits);
      const b = new MvccStore(target, limits);
      const put = (store: MvccStore, from: number, count: number): void => {
        store.applyBatch(Array.from({ length: count }, (_, i) => ({
          index: store.appliedIndex + i + 1, term: 1, type: EntryType.normal,
          data: encodeCommand({ proposedAtMs: 1_000 + i, source: 1, op: { type: 'put', key: `/k/${from + i}`, value: text('v') } }, limits),
        })));
      };
      put(a, 0, 40);
      put(b, 1000, 7);
      assert.equal(b.liveKeys(), 7);
      const snapshot = a.snapshot({ chunkBytesMax: 512 });
      b.restore(snapshot.chunks);
      assert.equal(b.liveKeys(), 40);
      assert.equal(b.liveKeys(), scanLiveKeys(target));
      put(b, 40, 3);
      assert.equal(b.liveKeys(), 43);
      assert.equal(b.liveKeys(), scanLiveKeys(target));
    } finally {
      await source.close();
      await target.close();
    }
  });
});
