// A store that seals its records itself (docs/design/encryption.md "The store"): every value of a
// table that holds data (mvcc's tablesWithData: current and history values, dedup outcomes, the
// policy, members and ownership records) is AES-256-GCM under the store's data key before it
// reaches LMDB, and opened after it is read; tables of numbers only are left as they are (a seal
// costs ~2 µs, and an apply reads and writes several of them). Keys stay in plaintext: LMDB orders them, and ranges, prefixes and history
// walks need that order (the design doc says what this shows). A sealed value is
//   u8 0xE5 | u8 data-key number | nonce 12 (u32 open number | u64 counter) | ciphertext | tag 16
// with the record's key as additional data, so a value moved to another key does not open. The
// nonce's open number is taken durably at each write open (record-keys.ts): a crash or restart
// can never give a counter value again under the same prefix. Snapshot streams (snapshotEntries)
// leave as plaintext: they are sealed again by the snapshot file or backup that holds them.
import { createCipheriv, createDecipheriv } from 'node:crypto';
import { CorruptFileError } from '../base/errors.js';
import { tablesWithData, type KvEngine, type KvEntry, type KvRange, type KvWriter } from '../mvcc/index.js';
import type { RecordKeys } from './record-keys.js';

const marker = 0xe5;
/** The current-value table's prefix ('k', mvcc/layout.ts). */
const currentTable = 0x6b;
const headBytes = 2 + 12;
const tagBytes = 16;

/** Plaintexts of this process's recent seals, by nonce counter (bounded by bytes). */
const recentBytesMax = 8 * 1024 * 1024;
const recentValueBytesMax = 64 * 1024;

export class RecordSealer {
  private counter = 0;
  // A put reads the key's previous value before it writes the new one: when this process sealed
  // it, the plaintext is still known, and one AES-GCM call (~8 µs here) of the three a put makes is
  // saved. Keyed by the nonce's counter, checked against the record's key (a value moved to another
  // key still goes through the cipher, and fails there).
  private readonly recent = new Map<number, { readonly key: Buffer; readonly plain: Buffer }>();
  private recentBytes = 0;
  constructor(private readonly keys: RecordKeys, private readonly path: string) {}

  seal(key: Uint8Array, value: Uint8Array): Uint8Array {
    if (!tablesWithData.has(key[0] as number)) return value;
    const out = this.sealOnly(key, value);
    // Only current values: the next put of the key reads them. History events and dedup outcomes
    // are not read back by applies (copying them into the cache cost more than it saved).
    if (key[0] === currentTable) this.remember(this.counter, key, value);
    return out;
  }

  private sealOnly(key: Uint8Array, value: Uint8Array): Uint8Array {
    if (this.keys.openNo === 0) throw new Error('a read-only open of a sealed store cannot write');
    // The nonce is written in place, in the record's head (no buffer of its own).
    const out = Buffer.allocUnsafe(headBytes + value.length + tagBytes);
    out[0] = marker;
    out[1] = this.keys.activeNo;
    out.writeUInt32BE(this.keys.openNo, 2);
    out.writeUInt16BE(0, 6);
    out.writeUIntBE(++this.counter, 8, 6);
    const dek = this.keys.byNo.get(this.keys.activeNo) as Buffer;
    const cipher = createCipheriv('aes-256-gcm', dek, out.subarray(2, headBytes));
    cipher.setAAD(key);
    const body = cipher.update(value);
    body.copy(out, headBytes);
    cipher.final();
    cipher.getAuthTag().copy(out, headBytes + body.length);
    return out;
  }

  private remember(counter: number, key: Uint8Array, value: Uint8Array): void {
    if (value.length > recentValueBytesMax) return;
    // Copies: the caller may reuse its buffers (KvWriter.put's contract).
    this.recent.set(counter, { key: Buffer.from(key), plain: Buffer.from(value) });
    this.recentBytes += key.length + value.length;
    for (const [old, entry] of this.recent) {
      if (this.recentBytes <= recentBytesMax) break;
      this.recent.delete(old);
      this.recentBytes -= entry.key.length + entry.plain.length;
    }
  }

  open(key: Uint8Array, sealed: Uint8Array): Uint8Array {
    if (!tablesWithData.has(key[0] as number)) return sealed;
    const bytes = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength);
    if (bytes.length < headBytes + tagBytes || bytes[0] !== marker) this.damaged(key, 'is not a sealed record (a plaintext value in a sealed store)');
    if (this.keys.openNo !== 0 && bytes.readUInt32BE(2) === this.keys.openNo) {
      const known = this.recent.get(bytes.readUIntBE(8, 6));
      if (known !== undefined && known.key.equals(key)) return known.plain;
    }
    const dek = this.keys.byNo.get(bytes[1] as number);
    if (dek === undefined) this.damaged(key, `is sealed under data key ${bytes[1] as number}, which ${this.path} does not hold`);
    try {
      const decipher = createDecipheriv('aes-256-gcm', dek, bytes.subarray(2, headBytes));
      decipher.setAAD(key);
      decipher.setAuthTag(bytes.subarray(bytes.length - tagBytes));
      const head = decipher.update(bytes.subarray(headBytes, bytes.length - tagBytes));
      const tail = decipher.final();
      return tail.length === 0 ? head : Buffer.concat([head, tail]);
    } catch {
      return this.damaged(key, 'does not authenticate (damaged or altered)');
    }
  }

  /** The data key currently sealing new records. */
  get activeNo(): number {
    return this.keys.activeNo;
  }

  /** The data-key number a stored value of a sealed table names (its second byte). */
  keyNoOf(key: Uint8Array, sealed: Uint8Array): number {
    if (sealed.length < headBytes + tagBytes || sealed[0] !== marker) this.damaged(key, 'is not a sealed record (a plaintext value in a sealed store)');
    return sealed[1] as number;
  }

  /**
   * The stored value sealed again under the active data key (record-rewrite.ts), or null when it
   * already is (or its table is not sealed). Opens it first: a damaged record stops the rewrite as
   * it would stop a read. Not remembered: the rewrite touches old records no apply is about to read.
   */
  reseal(key: Uint8Array, sealed: Uint8Array): Uint8Array | null {
    if (!tablesWithData.has(key[0] as number)) return null;
    if (this.keyNoOf(key, sealed) === this.keys.activeNo) return null;
    return this.sealOnly(key, this.open(key, sealed));
  }

  private damaged(key: Uint8Array, why: string): never {
    // The file is LMDB's; the key names the record (a byte offset is LMDB's to know).
    throw new CorruptFileError(this.path, 0, `the record of key ${Buffer.from(key.subarray(0, 48)).toString('hex')} ${why}`);
  }
}

/** `inner` with every value sealed on the way in and opened on the way out. */
export class SealedEngine implements KvEngine {
  constructor(private readonly inner: KvEngine, private readonly sealer: RecordSealer) {}

  get(key: Uint8Array): Uint8Array | undefined {
    const value = this.inner.get(key);
    return value === undefined ? undefined : this.sealer.open(key, value);
  }

  range(range: KvRange): Iterable<KvEntry> {
    return openEntries(this.inner.range(range), this.sealer);
  }

  count(range: KvRange): number {
    if (this.inner.count !== undefined) return this.inner.count(range);
    let count = 0;
    for (const _entry of this.inner.range(range)) count++;
    return count;
  }

  write<T>(body: (writer: KvWriter) => T): T {
    const sealer = this.sealer;
    return this.inner.write((inner) => body({
      get: (key) => {
        const value = inner.get(key);
        return value === undefined ? undefined : sealer.open(key, value);
      },
      range: (range) => openEntries(inner.range(range), sealer),
      put: (key, value) => inner.put(key, sealer.seal(key, value)),
      delete: (key) => inner.delete(key),
    }));
  }

  snapshotEntries(): Iterable<KvEntry> {
    return openEntries(this.inner.snapshotEntries(), this.sealer);
  }

  replaceAll(entries: Iterable<KvEntry>): void {
    const sealer = this.sealer;
    this.inner.replaceAll((function* () {
      for (const entry of entries) yield { key: entry.key, value: sealer.seal(entry.key, entry.value) };
    })());
  }
}

function* openEntries(entries: Iterable<KvEntry>, sealer: RecordSealer): Generator<KvEntry> {
  for (const entry of entries) yield { key: entry.key, value: sealer.open(entry.key, entry.value) };
}

