// The background rewrite that retires an old data key (src/keys/record-rewrite.ts) on real LMDB
// with the real MVCC store: after a data-key rotation, small transactions seal every old record
// again under the new key while puts keep being applied between them; a restart in the middle
// resumes after the saved cursor (and an OS restart starts the pass again); once the pass is
// checkpointed the status file says the old key is retired, `removeRecordKeys` drops it from
// records.key, and the store reopened without it reads every record (the same plaintext as
// before). The control: the same removal without the rewrite leaves records the store cannot open.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CorruptFileError } from '../../../src/base/errors.js';
import type { Timers } from '../../../src/base/timers.js';
import {
  addRecordKey, dataKeyId, keyringOf, openRecordKeys, readRewriteStatus, recordKeyNos, RecordRewriter, RecordSealer,
  removeRecordKeys, SealedEngine, type Keyring,
} from '../../../src/keys/index.js';
import { storedEventParts } from '../../../src/keys/sealed-event.js';
import { defaultMvccLimits, encodeCommand, MvccStore, tablesWithData } from '../../../src/mvcc/index.js';
import { EntryType, type Entry } from '../../../src/raft/types.js';
import { LmdbEngine } from '../../../src/storage/index.js';
import { withTempDir } from '../storage/temp-dir.js';

const quietLog = { info: () => {}, warn: () => {} };
const noTimers: Timers = { setTimeout: () => ({ cancel: () => {} }), monotonicMs: () => performance.now() };

interface Opened {
  raw: LmdbEngine;
  sealed: SealedEngine;
  sealer: RecordSealer;
  store: MvccStore;
  keyNos: number[];
  activeKeyId: string;
}

function open(directory: string, keyring: Keyring): Opened {
  mkdirSync(directory, { recursive: true });
  const keys = openRecordKeys(directory, keyring, { create: true, write: true });
  const raw = LmdbEngine.open({ directory, commits: 'deferred', bootId: 'boot-1' });
  const sealer = new RecordSealer(keys, join(directory, 'state.mdb'));
  const sealed = new SealedEngine(raw, sealer);
  return { raw, sealed, sealer, store: new MvccStore(sealed), keyNos: [...keys.byNo.keys()], activeKeyId: dataKeyId(keys.byNo.get(keys.activeNo) as Buffer) };
}

function rewriter(o: Opened, directory: string, bootId: string): RecordRewriter {
  return new RecordRewriter({
    engine: o.raw, sealer: o.sealer, keyNos: o.keyNos, activeKeyId: o.activeKeyId, directory, bootId,
    checkpoint: () => o.raw.checkpoint(), timers: noTimers, log: quietLog, sliceRecords: 40,
  });
}

let proposedAt = 1_000;
function put(store: MvccStore, keyNo: number, text: string): void {
  const index = store.appliedIndex + 1;
  const op = { type: 'put' as const, key: `/rw/k${keyNo}`, value: Buffer.from(text) };
  const entry: Entry = { index, term: 1, type: EntryType.normal, data: encodeCommand({ proposedAtMs: proposedAt++, op }, defaultMvccLimits) };
  store.applyBatch([entry]);
}

/**
 * The sealed record a stored value holds: the value itself, or for a history event in the
 * cipher-free form (sealed-event.ts) the replaced record it embeds; null when it holds none.
 */
function sealedRecordOf(value: Uint8Array): Uint8Array | null {
  const event = storedEventParts(value);
  return event === null ? value : event.sealedPrev;
}

/** Data-key numbers of every sealed record of a sealed table, counted. */
function keyNumbers(raw: LmdbEngine): Map<number, number> {
  const counts = new Map<number, number>();
  for (const entry of raw.snapshotEntries()) {
    if (!tablesWithData.has(entry.key[0] as number)) continue;
    const no = sealedRecordOf(entry.value)?.[1];
    if (no === undefined) continue;
    counts.set(no, (counts.get(no) ?? 0) + 1);
  }
  return counts;
}

/** Records every (data key, nonce) pair seen with its sealed bytes; fails on a pair sealed twice with other content. */
function checkNonces(raw: LmdbEngine, seen: Map<string, string>): void {
  for (const entry of raw.snapshotEntries()) {
    if (!tablesWithData.has(entry.key[0] as number)) continue;
    const record = sealedRecordOf(entry.value);
    if (record === null) continue;
    const value = Buffer.from(record);
    const pair = `${value[1]}:${value.subarray(2, 14).toString('hex')}`;
    const sealed = value.subarray(14).toString('hex');
    const before = seen.get(pair);
    assert.ok(before === undefined || before === sealed, `nonce ${pair} reused for other content`);
    seen.set(pair, sealed);
  }
}

function plaintext(sealed: SealedEngine): string[] {
  return [...sealed.snapshotEntries()].map((e) => `${Buffer.from(e.key).toString('hex')}=${Buffer.from(e.value).toString('hex')}`);
}

test('rewrite retires an old data key: small transactions under load, resumes after a restart, key dropped, all still read', async () => {
  await withTempDir(async (dir) => {
    const keyring = keyringOf([randomBytes(32)]);
    // Key 1: 120 keys written 3 times each (current values and history events under key 1).
    const first = open(dir, keyring);
    for (let round = 0; round < 3; round++) for (let k = 0; k < 120; k++) put(first.store, k, `secret-value-${round}-${k}`);
    const nonces = new Map<string, string>();
    checkNonces(first.raw, nonces);
    await first.raw.close();

    assert.equal(addRecordKey(dir, keyring), 2);
    const second = open(dir, keyring);
    const underKey1 = keyNumbers(second.raw).get(1) ?? 0;
    // The 120 creates' events hold no value (sealed-event.ts): nothing sealed in them.
    assert.equal(underKey1, 360, '120 current values and the 240 history events that hold a replaced value');
    const pass = rewriter(second, dir, 'boot-1');
    pass.start();
    for (let slice = 0; slice < 6; slice++) {
      assert.equal(pass.step(), false, 'the pass is not over after a few slices');
      put(second.store, 500 + slice, `new-under-key-2-${slice}`); // applies go on between slices
    }
    pass.stop(); // a restart in the middle (the stop saves the cursor; a crash keeps the last save)
    const saved = readRewriteStatus(dir);
    assert.ok(saved !== null && saved.state === 'running' && saved.cursor !== null && saved.scanned === 6 * 40);
    assert.ok(saved.rewritten > 0 && saved.rewritten <= 240);
    checkNonces(second.raw, nonces);
    const midway = keyNumbers(second.raw);
    assert.ok((midway.get(2) ?? 0) >= saved.rewritten, 'the rewritten records name key 2');
    await second.raw.close();

    // Restart, same boot: resumes after the cursor (not from the start).
    const third = open(dir, keyring);
    const resumed = rewriter(third, dir, 'boot-1');
    assert.equal(resumed.current().cursor, saved.cursor);
    assert.equal(resumed.current().scanned, saved.scanned);
    resumed.start();
    let slices = 0;
    while (!resumed.step()) {
      slices++;
      put(third.store, slices % 120, `rewritten-while-running-${slices}`);
      assert.ok(slices < 1_000, 'the pass ends');
    }
    assert.equal(readRewriteStatus(dir)?.retired.length, 0, 'nothing is retired before the checkpoint');
    await resumed.finish();
    const done = readRewriteStatus(dir);
    assert.equal(done?.state, 'done');
    assert.deepEqual(done?.retired, [1]);
    assert.equal(keyNumbers(third.raw).get(1), undefined, 'no stored value names key 1');
    checkNonces(third.raw, nonces); // across three opens, the rewrite's seals and the applies' share no nonce
    // 360 seals of the first open (events embed them), about as many by the rewrite, the applies between.
    assert.ok(nonces.size > 700, `${nonces.size} nonces`);
    const before = plaintext(third.sealed);
    assert.ok(before.length > 700);
    await third.raw.close();

    // Retire key 1 and reopen with key 2 alone: every record (current values, history) reads.
    assert.deepEqual(removeRecordKeys(dir, [1]), [1]);
    assert.deepEqual(recordKeyNos(dir), [2]);
    const last = open(dir, keyring);
    assert.deepEqual(last.keyNos, [2]);
    assert.deepEqual(plaintext(last.sealed), before, 'the same plaintext, read with key 2 only');
    assert.equal(last.store.range({ type: 'get', key: '/rw/', prefix: true }).count, 126, '120 keys written before, 6 during');
    assert.equal(Buffer.from(last.store.range({ type: 'get', key: '/rw/k119' }).kvs[0]?.value ?? []).toString(), 'secret-value-2-119');
    assert.equal(readFileSync(join(dir, 'state.mdb')).includes(Buffer.from('secret-value')), false, 'still no plaintext value in the file');
    // A new rewriter finds nothing to do (one key).
    assert.equal(rewriter(last, dir, 'boot-1').pending, false);
    await last.raw.close();
  });
});

test('rewrite: an OS restart (another boot) starts the pass again; the control: dropping the key without the rewrite loses records', async () => {
  await withTempDir(async (dir) => {
    const keyring = keyringOf([randomBytes(32)]);
    const first = open(dir, keyring);
    for (let k = 0; k < 100; k++) put(first.store, k, `control-value-${k}`);
    await first.raw.close();
    addRecordKey(dir, keyring);
    const second = open(dir, keyring);
    const pass = rewriter(second, dir, 'boot-1');
    pass.start();
    pass.step();
    pass.stop();
    assert.notEqual(readRewriteStatus(dir)?.cursor, null);
    // After an OS crash the store may be back at an older checkpoint: the cursor is not trusted.
    const afterReboot = rewriter(second, dir, 'boot-2');
    assert.equal(afterReboot.current().cursor, null);
    assert.equal(afterReboot.current().scanned, 0);
    // A status file of another store (another active data key) is not trusted either.
    const otherStore = new RecordRewriter({
      engine: second.raw, sealer: second.sealer, keyNos: second.keyNos, activeKeyId: 'another-store', directory: dir, bootId: 'boot-1',
      checkpoint: async () => {}, timers: noTimers, log: quietLog,
    });
    assert.equal(otherStore.current().cursor, null);
    await second.raw.close();

    // The control: key 1 removed with records still under it: a read is refused, naming the store.
    assert.deepEqual(removeRecordKeys(dir, [1, 2]), [1], 'the active key is never removed');
    const broken = open(dir, keyring);
    assert.throws(() => broken.store.range({ type: 'get', key: '/rw/k99' }),
      (e: Error) => e instanceof CorruptFileError && /sealed under data key 1/.test(e.reason));
    await broken.raw.close();
  });
});
