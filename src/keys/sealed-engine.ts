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
// A history event keeps the previous value's sealed bytes instead of sealing them again
// (sealed-event.ts): one AES-GCM call per put, not two.
import { createCipheriv, createDecipheriv } from 'node:crypto';
import { CorruptFileError } from '../base/errors.js';
import { tablesWithData, type KvEngine, type KvEntry, type KvRange, type KvWriter } from '../mvcc/index.js';
import type { RecordKeys } from './record-keys.js';
import { eventMarker, plainEventHead, prevRecordKey, storedEvent, storedEventParts, type EventHead } from './sealed-event.js';

const marker = 0xe5;
/** The current-value table's prefix ('k', mvcc/layout.ts). */
const currentTable = 0x6b;
/** The history table's prefix ('h'). */
const historyTable = 0x68;
const headBytes = 2 + 12;
const tagBytes = 16;

/**
 * The cache of recent seals: a ring of slots indexed by the nonce counter, for values up to a few
 * KiB. Small on purpose: an earlier cache of 8 MiB in a Map (tens of thousands of entries,
 * deleted from the front) cost more CPU per put, in garbage collection and in the Map, than the
 * opens it saved (the encrypted cell did 1.2x the puts per CPU second without it, same run).
 */
const recentSlots = 1024;
const recentValueBytesMax = 4 * 1024;

export class RecordSealer {
  private counter = 0;
  // A put reads the key's previous value before it writes the new one: when this process sealed
  // it, the plaintext is still known, and one AES-GCM call (~8 µs here) of the two a put makes is
  // saved. Keyed by the nonce's counter, checked against the record's key (a value moved to another
  // key still goes through the cipher, and fails there).
  private readonly recentCounters = new Float64Array(recentSlots);
  /** Per slot: the record's key then its plaintext, in one buffer; the key's length. */
  private readonly recentEntries: (Buffer | undefined)[] = new Array<Buffer | undefined>(recentSlots);
  private readonly recentKeyLengths = new Uint32Array(recentSlots);
  constructor(private readonly keys: RecordKeys, private readonly path: string) {}

  /**
   * The current record an apply read last, as stored and as opened: the event that the apply
   * writes next holds these very plaintext bytes as its prevKv (RevisionWriter.put and delete).
   */
  private lastCurrent: { readonly key: Uint8Array; readonly sealed: Uint8Array; readonly plain: Uint8Array } | null = null;

  /** A current record read inside a write (SealedEngine.write): kept for the event that follows. */
  noteCurrentRead(key: Uint8Array, sealed: Uint8Array, plain: Uint8Array): void {
    // The key copied: a caller may reuse its key buffer (KvWriter's contract); the values are
    // the engine's own copies.
    if (key[0] === currentTable) this.lastCurrent = { key: Buffer.from(key), sealed, plain };
  }

  /** A write ended: what it read is not carried into the next one. */
  endWrite(): void {
    this.lastCurrent = null;
  }

  seal(key: Uint8Array, value: Uint8Array): Uint8Array {
    if (!tablesWithData.has(key[0] as number)) return value;
    if (key[0] === historyTable) {
      const event = this.eventWithoutCipher(value);
      if (event !== null) return event;
    }
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

  /**
   * The stored form of a format-2 event that needs no cipher call (sealed-event.ts): one without a
   * previous value (its head holds nothing a key does not), or one whose previous value is the
   * current record this write read, sealed under the active data key (the rewrite's promise:
   * applies write nothing under an older one). Else null: the event is sealed whole.
   */
  private eventWithoutCipher(value: Uint8Array): Uint8Array | null {
    const head = plainEventHead(value);
    if (head === null) return null;
    if (!head.hasPrev) return value.length === head.head.length ? storedEvent(head.head, null) : null;
    const last = this.lastCurrent;
    if (last === null || last.sealed[1] !== this.keys.activeNo) return null;
    // Its key is the event's key under the current table's prefix (compared without building it).
    if (last.key[0] !== currentTable || !sameBytes(last.key.subarray(1), head.keyBytes)) return null;
    if (!sameBytes(last.plain, value.subarray(head.head.length))) return null;
    return storedEvent(head.head, last.sealed);
  }

  private remember(counter: number, key: Uint8Array, value: Uint8Array): void {
    const slot = counter % recentSlots;
    if (value.length > recentValueBytesMax) {
      this.recentEntries[slot] = undefined;
      return;
    }
    // A copy: the caller may reuse its buffers (KvWriter.put's contract).
    const entry = Buffer.allocUnsafe(key.length + value.length);
    entry.set(key, 0);
    entry.set(value, key.length);
    this.recentCounters[slot] = counter;
    this.recentEntries[slot] = entry;
    this.recentKeyLengths[slot] = key.length;
  }

  /** The plaintext this process sealed under `counter` for `key`, if the ring still holds it. */
  private recalled(counter: number, key: Uint8Array): Uint8Array | undefined {
    const slot = counter % recentSlots;
    const entry = this.recentEntries[slot];
    if (entry === undefined || this.recentCounters[slot] !== counter) return undefined;
    const keyLength = this.recentKeyLengths[slot] as number;
    if (keyLength !== key.length || !entry.subarray(0, keyLength).equals(key)) return undefined;
    return entry.subarray(keyLength);
  }

  open(key: Uint8Array, sealed: Uint8Array): Uint8Array {
    if (!tablesWithData.has(key[0] as number)) return sealed;
    if (key[0] === historyTable && sealed[0] === eventMarker) return this.openEvent(key, sealed);
    const bytes = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength);
    if (bytes.length < headBytes + tagBytes || bytes[0] !== marker) this.damaged(key, 'is not a sealed record (a plaintext value in a sealed store)');
    if (this.keys.openNo !== 0 && bytes.readUInt32BE(2) === this.keys.openNo) {
      const known = this.recalled(bytes.readUIntBE(8, 6), key);
      if (known !== undefined) return known;
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

  private openEvent(key: Uint8Array, stored: Uint8Array): Uint8Array {
    const parts = this.eventParts(key, stored);
    if (parts.sealedPrev === null) return parts.head.head;
    const prev = this.open(prevRecordKey(parts.head), parts.sealedPrev);
    const out = Buffer.allocUnsafe(parts.head.head.length + prev.length);
    out.set(parts.head.head, 0);
    out.set(prev, parts.head.head.length);
    return out;
  }

  private eventParts(key: Uint8Array, stored: Uint8Array): { head: EventHead; sealedPrev: Uint8Array | null } {
    const parts = storedEventParts(stored);
    if (parts === null) return this.damaged(key, 'is not a well-formed sealed event');
    return parts;
  }

  /** The data key currently sealing new records. */
  get activeNo(): number {
    return this.keys.activeNo;
  }

  /** The data-key number a stored value of a sealed table names (its second byte). */
  keyNoOf(key: Uint8Array, sealed: Uint8Array): number {
    if (key[0] === historyTable && sealed[0] === eventMarker) {
      // An event without a previous value seals nothing: it names the active key.
      const { sealedPrev } = this.eventParts(key, sealed);
      return sealedPrev === null ? this.keys.activeNo : this.recordKeyNo(key, sealedPrev);
    }
    return this.recordKeyNo(key, sealed);
  }

  /** The data-key number a sealed record (0xE5) names; `key` names it if it is not one. */
  private recordKeyNo(key: Uint8Array, sealed: Uint8Array): number {
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
    if (key[0] === historyTable && sealed[0] === eventMarker) {
      // The event keeps its form: its previous value sealed again under the active key.
      const { head, sealedPrev } = this.eventParts(key, sealed);
      const prevKey = prevRecordKey(head);
      return storedEvent(head.head, this.sealOnly(prevKey, this.open(prevKey, sealedPrev as Uint8Array)));
    }
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
    try {
      return this.inner.write((inner) => body({
        get: (key) => {
          const value = inner.get(key);
          if (value === undefined) return undefined;
          const plain = sealer.open(key, value);
          sealer.noteCurrentRead(key, value, plain);
          return plain;
        },
        range: (range) => openEntries(inner.range(range), sealer),
        put: (key, value) => inner.put(key, sealer.seal(key, value)),
        delete: (key) => inner.delete(key),
      }));
    } finally {
      sealer.endWrite();
    }
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



function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(b);
}
