// A store that seals its records itself (docs/design/encryption.md "The store"): every value of a
// table that holds data (mvcc's tablesWithData: current and history values, dedup outcomes, the
// policy, members and ownership records) is encrypted and authenticated under the store's data key
// before it reaches LMDB, and opened after it is read; tables of numbers only are left as they are
// (an apply reads and writes several of them). Keys stay in plaintext: LMDB orders them, and
// ranges, prefixes and history walks need that order (the design doc says what this shows).
// A sealed value (format 2, written since session 15) is
//   u8 0xE6 | u8 data-key number | u32 open number | u48 keystream position | ciphertext | tag 16
// (AES-256-CTR, then HMAC-SHA-256 over the record's key, the header and the ciphertext), so a value
// moved to another key does not open. Format 1 (0xE5, AES-256-GCM per record, nonce = open number
// | counter) is still read. The open number is taken durably at each write open (record-keys.ts):
// a crash or restart can never give a keystream position again under the same open number.
// Snapshot streams (snapshotEntries) leave as plaintext: they are sealed again by the snapshot
// file or backup that holds them.
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, timingSafeEqual, type Cipher } from 'node:crypto';
import { CorruptFileError } from '../base/errors.js';
import { tablesWithData, type KvEngine, type KvEntry, type KvRange, type KvWriter } from '../mvcc/index.js';
import type { RecordKeys } from './record-keys.js';

/** Format 1 (read only now): AES-256-GCM, one createCipheriv per record. */
const gcmMarker = 0xe5;
const gcmHeadBytes = 2 + 12;
/** Format 2 (written): AES-256-CTR from one long-lived keystream per open, then HMAC-SHA-256. */
const ctrMarker = 0xe6;
const ctrHeadBytes = 2 + 4 + 6;
const tagBytes = 16;
/** Keystream bytes one open may use (the position field is 48 bits). */
const streamBytesMax = 2 ** 48;

/** Plaintexts of this process's recent seals, by keystream position (bounded by bytes). */
const recentBytesMax = 8 * 1024 * 1024;
const recentValueBytesMax = 64 * 1024;

interface RecordSubkeys {
  readonly cipher: Buffer;
  readonly mac: Buffer;
}

/** Separate cipher and MAC keys from one data key (HKDF-SHA-256, labels fixed by the format). */
function subkeysOf(dek: Buffer): RecordSubkeys {
  return {
    cipher: Buffer.from(hkdfSync('sha256', dek, Buffer.alloc(0), 'baton records ctr', 32)),
    mac: Buffer.from(hkdfSync('sha256', dek, Buffer.alloc(0), 'baton records mac', 32)),
  };
}

/** The CTR counter block at keystream block `block` of open `openNo`: openNo u32 | 0 u32 | block u64. */
function counterBlock(openNo: number, block: number): Buffer {
  const iv = Buffer.alloc(16);
  iv.writeUInt32BE(openNo, 0);
  iv.writeUIntBE(block, 10, 6);
  return iv;
}

export class RecordSealer {
  // Node's crypto cannot re-key a GCM context with a new nonce, and a createCipheriv per record
  // (context set-up plus a stream object to collect) was most of a put's sealing cost. So one
  // AES-256-CTR keystream per write open, advanced by every seal: a record's nonce is its open
  // number and its byte position in that stream, which only grows within the open (and the open
  // number is taken durably before the first seal), so no keystream byte is ever used twice.
  // Authentication: HMAC-SHA-256 (truncated to 16 bytes) over the record's LMDB key, the header
  // and the ciphertext, under a separate key derived from the same data key (encrypt-then-MAC).
  private stream: Cipher | null = null;
  private position = 0;
  private readonly subkeys = new Map<number, RecordSubkeys>();
  // A put reads the key's previous value before it writes the new one: when this process sealed
  // it, the plaintext is still known and the open is skipped. Keyed by the keystream position,
  // checked against the record's key (a value moved to another key still goes through the MAC,
  // and fails there).
  private readonly recent = new Map<number, { readonly key: Buffer; readonly plain: Buffer }>();
  private recentBytes = 0;
  constructor(private readonly keys: RecordKeys, private readonly path: string) {}

  seal(key: Uint8Array, value: Uint8Array): Uint8Array {
    if (!tablesWithData.has(key[0] as number)) return value;
    const { openNo, activeNo } = this.keys;
    if (openNo === 0) throw new Error('a read-only open of a sealed store cannot write');
    const subkeys = this.subkeysFor(activeNo) as RecordSubkeys;
    this.stream ??= createCipheriv('aes-256-ctr', subkeys.cipher, counterBlock(openNo, 0));
    const position = this.position;
    if (position + value.length >= streamBytesMax) throw new Error(`${this.path}: this open's keystream is used up; restart the node`);
    this.position += value.length;
    const out = Buffer.allocUnsafe(ctrHeadBytes + value.length + tagBytes);
    out[0] = ctrMarker;
    out[1] = activeNo;
    out.writeUInt32BE(openNo, 2);
    out.writeUIntBE(position, 6, 6);
    if (value.length > 0) this.stream.update(value).copy(out, ctrHeadBytes);
    this.tagOf(subkeys.mac, key, out.subarray(0, ctrHeadBytes + value.length)).copy(out, ctrHeadBytes + value.length, 0, tagBytes);
    this.remember(position, key, value);
    return out;
  }

  private tagOf(macKey: Buffer, key: Uint8Array, headAndBody: Uint8Array): Buffer {
    const keyLength = Buffer.allocUnsafe(4);
    keyLength.writeUInt32BE(key.length, 0);
    return createHmac('sha256', macKey).update(keyLength).update(key).update(headAndBody).digest();
  }

  private subkeysFor(no: number): RecordSubkeys | undefined {
    let subkeys = this.subkeys.get(no);
    if (subkeys === undefined) {
      const dek = this.keys.byNo.get(no);
      if (dek === undefined) return undefined;
      subkeys = subkeysOf(dek);
      this.subkeys.set(no, subkeys);
    }
    return subkeys;
  }

  private remember(position: number, key: Uint8Array, value: Uint8Array): void {
    if (value.length > recentValueBytesMax) return;
    // An empty value takes no keystream, so the next seal shares its position: replace it.
    const previous = this.recent.get(position);
    if (previous !== undefined) this.recentBytes -= previous.key.length + previous.plain.length;
    // Copies: the caller may reuse its buffers (KvWriter.put's contract).
    this.recent.set(position, { key: Buffer.from(key), plain: Buffer.from(value) });
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
    if (bytes[0] === ctrMarker && bytes.length >= ctrHeadBytes + tagBytes) return this.openCtr(key, bytes);
    if (bytes[0] === gcmMarker && bytes.length >= gcmHeadBytes + tagBytes) return this.openGcm(key, bytes);
    return this.damaged(key, 'is not a sealed record (a plaintext value in a sealed store)');
  }

  private openCtr(key: Uint8Array, bytes: Buffer): Uint8Array {
    const openNo = bytes.readUInt32BE(2);
    const position = bytes.readUIntBE(6, 6);
    if (this.keys.openNo !== 0 && openNo === this.keys.openNo) {
      const known = this.recent.get(position);
      if (known !== undefined && known.key.equals(key)) return known.plain;
    }
    const subkeys = this.subkeysFor(bytes[1] as number);
    if (subkeys === undefined) this.damaged(key, `is sealed under data key ${bytes[1] as number}, which ${this.path} does not hold`);
    const bodyEnd = bytes.length - tagBytes;
    const tag = this.tagOf(subkeys.mac, key, bytes.subarray(0, bodyEnd)).subarray(0, tagBytes);
    if (!timingSafeEqual(tag, bytes.subarray(bodyEnd))) this.damaged(key, 'does not authenticate (damaged or altered)');
    if (bodyEnd === ctrHeadBytes) return new Uint8Array(0);
    const decipher = createDecipheriv('aes-256-ctr', subkeys.cipher, counterBlock(openNo, Math.floor(position / 16)));
    const skip = position % 16;
    if (skip > 0) decipher.update(Buffer.alloc(skip));
    return decipher.update(bytes.subarray(ctrHeadBytes, bodyEnd));
  }

  private openGcm(key: Uint8Array, bytes: Buffer): Uint8Array {
    const dek = this.keys.byNo.get(bytes[1] as number);
    if (dek === undefined) this.damaged(key, `is sealed under data key ${bytes[1] as number}, which ${this.path} does not hold`);
    try {
      const decipher = createDecipheriv('aes-256-gcm', dek, bytes.subarray(2, gcmHeadBytes));
      decipher.setAAD(key);
      decipher.setAuthTag(bytes.subarray(bytes.length - tagBytes));
      const head = decipher.update(bytes.subarray(gcmHeadBytes, bytes.length - tagBytes));
      const tail = decipher.final();
      return tail.length === 0 ? head : Buffer.concat([head, tail]);
    } catch {
      return this.damaged(key, 'does not authenticate (damaged or altered)');
    }
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

