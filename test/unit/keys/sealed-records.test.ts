// The store's records sealed by Baton (src/keys/sealed-engine.ts, record-keys.ts) on real LMDB:
// the file holds no value (keys stay visible, as documented), values read back after a reopen;
// no nonce repeats across opens (each open takes a durable open number); a wrong KEK is refused
// naming the key file; an altered value, or a value moved to another key, is refused naming the
// store; a rotated data key seals new writes while old records stay readable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CorruptFileError } from '../../../src/base/errors.js';
import { addRecordKey, keyringOf, openRecordKeys, RecordSealer, SealedEngine, WrongKeyError, type Keyring } from '../../../src/keys/index.js';
import { LmdbEngine } from '../../../src/storage/index.js';
import { withTempDir } from '../storage/temp-dir.js';

const value = (i: number): Buffer => Buffer.from(`sealed-probe-value-${i}`);
// 'k' keys: the current-value table, whose values are sealed (numbers-only tables are not).
const key = (i: number): Buffer => Buffer.from(`kprobe-${i}`);

function open(directory: string, keyring: Keyring): { raw: LmdbEngine; sealed: SealedEngine; openNo: number; activeNo: number } {
  mkdirSync(directory, { recursive: true });
  const keys = openRecordKeys(directory, keyring, { create: true, write: true });
  const raw = LmdbEngine.open({ directory, commits: 'deferred', bootId: 'boot-1' });
  return { raw, sealed: new SealedEngine(raw, new RecordSealer(keys, join(directory, 'state.mdb'))), openNo: keys.openNo, activeNo: keys.activeNo };
}

test('sealed records: no value in the file, read back, nonces unique across opens, key refusals, tamper, rotation', async () => {
  await withTempDir(async (dir) => {
    const keyring = keyringOf([randomBytes(32)]);
    const nonces = new Set<string>();
    const collect = (raw: LmdbEngine): void => {
      for (const entry of raw.range({ start: Uint8Array.of(0x6b), end: Uint8Array.of(0x6c) })) nonces.add(Buffer.from(entry.value.subarray(2, 14)).toString('hex'));
    };
    let written = 0;
    for (let round = 0; round < 3; round++) {
      const { raw, sealed, openNo } = open(dir, keyring);
      assert.equal(openNo, round + 1, 'each write open takes the next open number');
      for (let i = 0; i < 50; i++, written++) sealed.write((w) => w.put(key(written), value(written)));
      collect(raw);
      await raw.close();
    }
    assert.equal(nonces.size, written, 'every record has its own nonce, across three opens');
    const file = readFileSync(join(dir, 'state.mdb'));
    assert.equal(file.includes(Buffer.from('sealed-probe-value')), false, 'no value in plaintext');
    assert.equal(file.includes(Buffer.from('kprobe-1')), true, 'keys stay visible (documented)');
    // A numbers-only table (0x72, the revision index) is stored as written.
    const plainTable = open(dir, keyring);
    plainTable.sealed.write((w) => w.put(Buffer.from('r-index'), Buffer.from('numbers-only')));
    assert.deepEqual(Buffer.from(plainTable.raw.get(Buffer.from('r-index')) ?? []), Buffer.from('numbers-only'));
    assert.deepEqual(Buffer.from(plainTable.sealed.get(Buffer.from('r-index')) ?? []), Buffer.from('numbers-only'));
    plainTable.raw.get(Buffer.from('r-index'));
    plainTable.sealed.write((w) => w.delete(Buffer.from('r-index')));
    await plainTable.raw.close();

    assert.throws(() => openRecordKeys(dir, keyringOf([randomBytes(32)]), { create: false, write: true }),
      (e: Error) => e instanceof WrongKeyError && e.message.includes(join(dir, 'records.key')));

    // Rotation of the data key: new writes under key 2, old records still read.
    assert.equal(addRecordKey(dir, keyring), 2);
    const rotated = open(dir, keyring);
    assert.equal(rotated.activeNo, 2);
    assert.equal(rotated.openNo, 5, 'opens keep counting (3 rounds, the numbers-only check, this one)');
    rotated.sealed.write((w) => w.put(key(1000), value(1000)));
    assert.equal(rotated.raw.get(key(1000))?.[1], 2, 'the new record names data key 2');
    assert.equal(rotated.raw.get(key(0))?.[1], 1, 'an old record names data key 1');
    assert.deepEqual(Buffer.from(rotated.sealed.get(key(0)) ?? []), value(0));
    assert.deepEqual(Buffer.from(rotated.sealed.get(key(1000)) ?? []), value(1000));

    // A flipped byte, and a sealed value copied under another key: both refused naming the store.
    const altered = Buffer.from(rotated.raw.get(key(3)) as Uint8Array);
    altered[20] = (altered[20] as number) ^ 1;
    rotated.raw.write((w) => {
      w.put(key(3), altered);
      w.put(key(4), rotated.raw.get(key(5)) as Uint8Array);
    });
    for (const which of [3, 4]) {
      assert.throws(() => rotated.sealed.get(key(which)), (e: Error) => e instanceof CorruptFileError && e.path === join(dir, 'state.mdb') && /does not authenticate/.test(e.reason));
    }
    await rotated.raw.close();
  });
});
