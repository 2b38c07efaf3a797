// Sealed files: a whole file encrypted under its own data key, for backups (`baton snapshot save
// --encryption-key-file`, scheduled backups under --backup-dir). Layout:
//   header  magic "BATNSEAL" | u32 version | u32 jsonBytes | JSON {kind, kekId, iv, tag, wrapped, chunkBytes}
//   chunks  u32 (plainBytes | 0x8000_0000 on the last chunk) | ciphertext | 16-byte GCM tag
// The data key is random per file and wrapped (envelope.ts) by the active KEK, whose id is in the
// JSON. Each chunk is AES-256-GCM with nonce = its index (a fresh key per file, so a counter never
// repeats under one key, with no state to lose in a crash), and additional data = SHA-256 of the
// header | chunk index | last flag: a chunk moved, dropped, taken from another file or a cut after
// a whole chunk all fail to authenticate or end without the last chunk, named by file and offset.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { CorruptFileError } from '../base/errors.js';
import { ConfigError } from '../base/config-error.js';
import { unwrapKey, wrapKey, WrongKeyError } from './envelope.js';
import type { Keyring } from './keyring.js';

export const sealedMagic = Buffer.from('BATNSEAL', 'latin1');
const version = 1;
const chunkBytesDefault = 64 * 1024;
const chunkBytesMax = 16 * 1024 * 1024;
const jsonBytesMax = 4096;
const tagBytes = 16;
const lastFlag = 0x8000_0000;
const label = 'sealed-file';

interface SealedHeader {
  readonly kind: string;
  readonly kekId: string;
  readonly iv: string;
  readonly tag: string;
  readonly wrapped: string;
  readonly chunkBytes: number;
}

/** Encrypts a stream into sealed-file bytes: push() what comes, end() once; write what both return. */
export class SealedFileWriter {
  readonly kekId: string;
  private readonly key = randomBytes(32);
  private readonly headerHash: Buffer;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private index = 0;
  private ended = false;
  readonly header: Buffer;

  constructor(keyring: Keyring, kind: string, private readonly chunkBytes = chunkBytesDefault) {
    const wrap = wrapKey(keyring.active, this.key, label);
    this.kekId = wrap.kekId;
    const json: SealedHeader = {
      kind, kekId: wrap.kekId, iv: wrap.iv.toString('base64'), tag: wrap.tag.toString('base64'),
      wrapped: wrap.wrapped.toString('base64'), chunkBytes,
    };
    const body = Buffer.from(JSON.stringify(json));
    const head = Buffer.alloc(16);
    sealedMagic.copy(head, 0);
    head.writeUInt32LE(version, 8);
    head.writeUInt32LE(body.length, 12);
    this.header = Buffer.concat([head, body]);
    this.headerHash = createHash('sha256').update(this.header).digest();
  }

  /** The sealed bytes of every whole chunk `data` completes (the header first, on the first call). */
  push(data: Uint8Array): Buffer[] {
    const out: Buffer[] = this.started ? [] : this.start();
    this.pending.push(Buffer.from(data));
    this.pendingBytes += data.length;
    // Keep at least one byte back: the last chunk is sealed by end(), with its flag.
    while (this.pendingBytes > this.chunkBytes) {
      const all = Buffer.concat(this.pending);
      out.push(this.seal(all.subarray(0, this.chunkBytes), false));
      this.pending = [all.subarray(this.chunkBytes)];
      this.pendingBytes = all.length - this.chunkBytes;
    }
    return out;
  }

  /** The last chunk (maybe empty), flagged as last. */
  end(): Buffer[] {
    if (this.ended) throw new Error('sealed file already ended');
    const out = this.started ? [] : this.start();
    this.ended = true;
    out.push(this.seal(Buffer.concat(this.pending), true));
    this.pending = [];
    this.key.fill(0);
    return out;
  }

  private started = false;
  private start(): Buffer[] {
    this.started = true;
    return [this.header];
  }

  private seal(plain: Buffer, last: boolean): Buffer {
    const cipher = createCipheriv('aes-256-gcm', this.key, chunkNonce(this.index));
    cipher.setAAD(chunkAad(this.headerHash, this.index, last));
    const head = Buffer.alloc(4);
    head.writeUInt32LE((plain.length | (last ? lastFlag : 0)) >>> 0, 0);
    const sealed = Buffer.concat([head, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
    this.index++;
    return sealed;
  }
}

/** Encrypts a whole buffer (tests, small files). */
export function sealBytes(keyring: Keyring, kind: string, data: Uint8Array, chunkBytes = chunkBytesDefault): Buffer {
  const writer = new SealedFileWriter(keyring, kind, chunkBytes);
  return Buffer.concat([...writer.push(data), ...writer.end()]);
}

/** True when the file begins with the sealed-file magic. */
export function isSealedFile(path: string): boolean {
  const fd = openSync(path, 'r');
  try {
    const head = Buffer.alloc(sealedMagic.length);
    const read = readSync(fd, head, 0, head.length, 0);
    return read === head.length && head.equals(sealedMagic);
  } finally {
    closeSync(fd);
  }
}

export interface SealedFile {
  readonly path: string;
  readonly kind: string;
  readonly kekId: string;
  readonly sizeBytes: number;
  /** The plaintext in pieces (one per chunk), each authenticated before it is yielded. */
  plaintext(): Generator<Uint8Array>;
}

/**
 * Opens a sealed file: reads its header and unwraps its data key. No keyring: refused naming the
 * file and the key id it needs; the wrong keyring: WrongKeyError naming the file; damage:
 * CorruptFileError with the file and the offset of the first bad chunk (thrown by plaintext()).
 */
export function openSealedFile(path: string, keyring: Keyring | null): SealedFile {
  const fd = openSync(path, 'r');
  let sizeBytes: number;
  let header: Buffer;
  let json: SealedHeader;
  try {
    sizeBytes = fstatSync(fd).size;
    const head = readExactly(fd, path, 0, 16);
    if (!head.subarray(0, 8).equals(sealedMagic)) throw new CorruptFileError(path, 0, 'not a sealed (encrypted) file');
    if (head.readUInt32LE(8) !== version) throw new CorruptFileError(path, 8, `sealed-file version ${head.readUInt32LE(8)}, this build reads ${version}`);
    const jsonBytes = head.readUInt32LE(12);
    if (jsonBytes < 2 || jsonBytes > jsonBytesMax) throw new CorruptFileError(path, 12, 'bad header size');
    header = Buffer.concat([head, readExactly(fd, path, 16, jsonBytes)]);
    json = parseHeader(header.subarray(16), path);
  } finally {
    closeSync(fd);
  }
  if (keyring === null) {
    throw new ConfigError(`${path} is encrypted (key-encryption key ${json.kekId}); give --encryption-key-file or --encryption-key-command`);
  }
  const key = unwrapKey(keyring, {
    kekId: json.kekId, iv: Buffer.from(json.iv, 'base64'), tag: Buffer.from(json.tag, 'base64'), wrapped: Buffer.from(json.wrapped, 'base64'),
  }, label, path);
  const headerHash = createHash('sha256').update(header).digest();
  const start = header.length;
  return {
    path, kind: json.kind, kekId: json.kekId, sizeBytes,
    plaintext: () => readChunks(path, key, headerHash, start, json.chunkBytes),
  };
}

function* readChunks(path: string, key: Buffer, headerHash: Buffer, start: number, chunkBytes: number): Generator<Uint8Array> {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    let last = false;
    for (let position = start, index = 0; !last; index++) {
      if (position >= size) throw new CorruptFileError(path, position, 'file ends before its last chunk (truncated)');
      const field = readExactly(fd, path, position, 4).readUInt32LE(0);
      last = (field & lastFlag) !== 0;
      const plainBytes = field & ~lastFlag;
      if (plainBytes > chunkBytes) throw new CorruptFileError(path, position, `chunk of ${plainBytes} bytes is larger than the file's ${chunkBytes}`);
      const body = readExactly(fd, path, position + 4, plainBytes + tagBytes, position);
      let plain: Buffer;
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, chunkNonce(index));
        decipher.setAAD(chunkAad(headerHash, index, last));
        decipher.setAuthTag(body.subarray(plainBytes));
        plain = Buffer.concat([decipher.update(body.subarray(0, plainBytes)), decipher.final()]);
      } catch {
        throw new CorruptFileError(path, position, `chunk ${index} does not authenticate (damaged or altered)`);
      }
      position += 4 + plainBytes + tagBytes;
      if (last && position !== size) throw new CorruptFileError(path, position, 'data after the last chunk');
      if (plain.length > 0) yield plain;
    }
  } finally {
    closeSync(fd);
  }
}

function parseHeader(body: Buffer, path: string): SealedHeader {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    throw new CorruptFileError(path, 16, 'sealed-file header is not valid JSON');
  }
  const json = value as Partial<SealedHeader> | null;
  const strings = ['kind', 'kekId', 'iv', 'tag', 'wrapped'] as const;
  if (json === null || typeof json !== 'object' || strings.some((name) => typeof json[name] !== 'string') ||
    typeof json.chunkBytes !== 'number' || !Number.isSafeInteger(json.chunkBytes) || json.chunkBytes < 1 || json.chunkBytes > chunkBytesMax) {
    throw new CorruptFileError(path, 16, 'sealed-file header has the wrong shape');
  }
  return json as SealedHeader;
}

function readExactly(fd: number, path: string, position: number, length: number, unitStart = position): Buffer {
  const out = Buffer.alloc(length);
  let done = 0;
  while (done < length) {
    const read = readSync(fd, out, done, length - done, position + done);
    if (read === 0) throw new CorruptFileError(path, unitStart, 'file ends inside a chunk (truncated)');
    done += read;
  }
  return out;
}

function chunkNonce(index: number): Buffer {
  const nonce = Buffer.alloc(12);
  nonce.writeUIntBE(index, 6, 6);
  return nonce;
}

function chunkAad(headerHash: Buffer, index: number, last: boolean): Buffer {
  const tail = Buffer.alloc(9);
  tail.writeUIntBE(index, 2, 6);
  tail.writeUInt8(last ? 1 : 0, 8);
  return Buffer.concat([headerHash, tail]);
}

