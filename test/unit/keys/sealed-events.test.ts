// History events in a store that seals its records (src/keys/sealed-event.ts): an event keeps the
// replaced value's sealed bytes, so a put makes one AES-GCM call, not two. What must hold: the
// history and the state read exactly as from a plaintext store given the same commands; the file
// holds no value; an event's value opens only under its own key (a value spliced into another
// key's event is refused naming the store); after a data-key rotation no new event names the old
// key, so the rewrite can retire it and everything still reads.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CorruptFileError } from '../../../src/base/errors.js';
import { addRecordKey, keyringOf, openRecordKeys, RecordSealer, SealedEngine, type Keyring } from '../../../src/keys/index.js';
import { storedEventParts } from '../../../src/keys/sealed-event.js';
import { defaultMvccLimits, encodeCommand, hashKeySpace, MemoryEngine, MvccStore, utf8, type Command } from '../../../src/mvcc/index.js';
import { EntryType } from '../../../src/raft/types.js';
import { LmdbEngine } from '../../../src/storage/index.js';
import { withTempDir } from '../storage/temp-dir.js';

const historyTable = { start: Uint8Array.of(0x68), end: Uint8Array.of(0x69) };

function openSealed(directory: string, keyring: Keyring): { raw: LmdbEngine; sealer: RecordSealer; store: MvccStore } {
  mkdirSync(directory, { recursive: true });
  const keys = openRecordKeys(directory, keyring, { create: true, write: true });
  const raw = LmdbEngine.open({ directory, commits: 'deferred', bootId: 'boot-1' });
  const sealer = new RecordSealer(keys, join(directory, 'state.mdb'));
  return { raw, sealer, store: new MvccStore(new SealedEngine(raw, sealer)) };
}

/** Applies each command to every store, as entries of one log. */
function applier(stores: () => readonly MvccStore[]): (op: Command) => void {
  let index = 0;
  return (op) => {
    const data = encodeCommand({ proposedAtMs: 1, op }, defaultMvccLimits);
    index++;
    for (const store of stores()) store.applyBatch([{ index, term: 2, type: EntryType.normal, data }]);
  };
}

/** The whole history, values as text (a sealed store hands out Buffers, a memory one Uint8Arrays). */
function history(store: MvccStore): unknown[] {
  const text = (kv: { value: Uint8Array } | null): unknown => (kv === null ? null : { ...kv, value: Buffer.from(kv.value).toString() });
  return store.events({ startRevision: 1, limit: 10_000 }).map((e) => ({ ...e, kv: text(e.kv), prevKv: text(e.prevKv) }));
}

const put = (key: string, value: string): Command => ({ type: 'put', key, value: utf8(value) }) as Command;

test('sealed events: history and state as a plaintext store has them, no value in the file, every event without a second seal', async () => {
  await withTempDir(async (dir) => {
    const sealed = openSealed(dir, keyringOf([randomBytes(32)]));
    const plain = new MvccStore(new MemoryEngine());
    const apply = applier(() => [sealed.store, plain]);
    for (let i = 0; i < 120; i++) apply(put(`/e/${i % 17}`, `event-probe-value-${i}`));
    apply({ type: 'delete', key: '/e/3' } as Command);
    apply({ type: 'delete', key: '/e/1', prefix: true } as Command);
    apply({
      type: 'txn', compare: [], failure: [],
      success: [put('/e/5', 'event-probe-value-txn-a'), put('/e/new', 'event-probe-value-txn-b'), { type: 'delete', key: '/e/6' } as Command],
    } as unknown as Command);
    apply(put('/e/3', 'event-probe-value-again'));

    assert.deepEqual(history(sealed.store), history(plain), 'the history reads as the plaintext store\'s');
    assert.equal(hashKeySpace(sealed.store).hash, hashKeySpace(plain).hash, 'the state is the same');

    // Every event took the cipher-free form: creates hold only their key, updates and deletes the
    // replaced record's own sealed bytes (the one seal of the put that replaced it).
    let withValue = 0;
    for (const { key, value } of sealed.raw.range(historyTable)) {
      const parts = storedEventParts(value);
      assert.ok(parts !== null, `event ${Buffer.from(key).toString('hex')} is sealed whole`);
      if (parts.sealedPrev !== null) {
        withValue++;
        assert.equal(parts.sealedPrev[0], 0xe5, 'the embedded value is a sealed record');
      }
    }
    assert.ok(withValue >= 100, `${withValue} events carry a replaced value`);
    await sealed.raw.checkpoint();
    assert.equal(readFileSync(join(dir, 'state.mdb')).includes(Buffer.from('event-probe-value')), false, 'no value in plaintext');
    await sealed.raw.close();
  });
});

test('sealed events: a value spliced into another key\'s event is refused naming the store', async () => {
  await withTempDir(async (dir) => {
    const sealed = openSealed(dir, keyringOf([randomBytes(32)]));
    const apply = applier(() => [sealed.store]);
    apply(put('/a', 'a1'));
    apply(put('/b', 'b1'));
    apply(put('/a', 'a2')); // revision 3: holds a1
    apply(put('/b', 'b2')); // revision 4: holds b1
    const stored = [...sealed.raw.range(historyTable)];
    const [ofA, ofB] = [stored[2], stored[3]].map((entry) => storedEventParts((entry as { value: Uint8Array }).value));
    assert.ok(ofA?.sealedPrev && ofB?.sealedPrev);
    // B's head (its key in plaintext) with A's sealed value: the value opens only under /a.
    const spliced = Buffer.concat([Uint8Array.of(0xe6), ofB.head.head, ofA.sealedPrev]);
    sealed.raw.write((w) => w.put((stored[3] as { key: Uint8Array }).key, spliced));
    assert.throws(() => sealed.store.events({ startRevision: 4, limit: 1 }),
      (e: Error) => e instanceof CorruptFileError && e.path === join(dir, 'state.mdb') && /does not authenticate/.test(e.reason));
    // A truncated event is refused too, not read as another one.
    sealed.raw.write((w) => w.put((stored[2] as { key: Uint8Array }).key, Uint8Array.of(0xe6, 0x82, 5)));
    assert.throws(() => sealed.store.events({ startRevision: 3, limit: 1 }),
      (e: Error) => e instanceof CorruptFileError && /not a well-formed sealed event/.test(e.reason));
    await sealed.raw.close();
  });
});

test('sealed events: after a data-key rotation no new event names the old key; a reseal moves old ones', async () => {
  await withTempDir(async (dir) => {
    const keyring = keyringOf([randomBytes(32)]);
    const first = openSealed(dir, keyring);
    const plain = new MvccStore(new MemoryEngine());
    let stores: MvccStore[] = [first.store, plain];
    const apply = applier(() => stores);
    for (let i = 0; i < 20; i++) apply(put(`/r/${i % 5}`, `before-${i}`));
    await first.raw.close();
    assert.equal(addRecordKey(dir, keyring), 2);
    const second = openSealed(dir, keyring);
    stores = [second.store, plain];
    const before = new Set([...second.raw.range(historyTable)].map((entry) => Buffer.from(entry.key).toString('hex')));
    // Each key's current record is under data key 1: its next event must not embed it.
    for (let i = 0; i < 10; i++) apply(put(`/r/${i % 5}`, `after-${i}`));
    for (const { key, value } of second.raw.range(historyTable)) {
      if (before.has(Buffer.from(key).toString('hex'))) continue;
      assert.equal(second.sealer.keyNoOf(key, value), 2, 'a new event names the active data key');
    }
    // The rewrite's step for old events: sealed again under key 2, in the same form.
    second.raw.write((w) => {
      for (const { key, value } of second.raw.range(historyTable)) {
        const resealed = second.sealer.reseal(key, value);
        if (resealed !== null) w.put(key, resealed);
      }
    });
    for (const { key, value } of second.raw.range(historyTable)) assert.equal(second.sealer.keyNoOf(key, value), 2);
    assert.deepEqual(history(second.store), history(plain));
    await second.raw.close();
  });
});
