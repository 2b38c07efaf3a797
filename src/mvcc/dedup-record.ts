// How a Request-ID's recorded outcome is stored (the 'd' table), in both store formats. A retry
// is answered from the decoded record, so decoding must give back exactly what was recorded:
// the same result fields in the same order, the same error class, message and details.
//
//   format 1:  u64 stampMs, then JSON: {"ok":true,"result":...,"q":fingerprint} or
//              {"ok":false,"error":{code,message,details},"q":...} (bytes as {"$bytes": latin1})
//   format 2:  u8 0b10_0000fo (o: the outcome is a result, else an error; f: a fingerprint
//              follows), varint stampMs,
//              [fingerprint: u8 kind | 0x40 digest | 0x80 key, [u32 digest], [varint + key]],
//              then the result (u8 shape, its fields) or the error as a value {code, message, details}
//
// Shapes: 1 put (varint version, varint revision, varint revision - fencingToken), 2 a put that
// created its key (varint revision: version 1, fencingToken = revision), 3 delete (varint
// deleted, varint revision), 4 leaseGrantBatch (varint revision, varint n, n x (varint id, varint
// ttlMs); issue 31, written only for op 19, which older versions refuse), 0 any other result, as
// a value. A value is JSON's data model in
// binary (null, booleans, integers, floats, strings, bytes, arrays, objects with their fields in
// order, undefined fields left out as JSON.stringify leaves them out); strings in `words` (field
// names, result types, error codes) take one byte. Put and delete take a shape only when they
// have exactly its fields, so anything else still round-trips as a value.
//
// A format-1 record starts with a u64 stamp below 2^53 (first byte 0); format 2 with 0b10xx_xxxx.
import { assert } from '../base/assert.js';
import {
  BatonError,
  CompactedError,
  FutureRevisionError,
  InvalidArgumentError,
  KeyNotFoundError,
  LeaseNotFoundError,
  LockHeldError,
  LockNotHeldError,
  PreconditionFailedError,
  QuotaExceededError,
  TooLargeError,
  UnavailableError,
} from '../base/errors.js';
import { ByteReader, ByteWriter } from './byte-codec.js';
import { fromLatin1, fromUtf8, latin1, utf8 } from './bytes.js';
import type { Command, CommandResult, DeleteResult, LeaseGrantBatchResult, PutResult, StoreFormat } from './types.js';

export type StoredOutcome =
  | { readonly ok: true; readonly result: CommandResult }
  | { readonly ok: false; readonly error: BatonError };

/**
 * What a request was, so that a Request-ID reused for a different request is refused
 * (request_id_reused) rather than answered with another request's outcome. For put, delete and
 * txn, `digest` covers the whole operation as the client gave it (every field: key, value, lease,
 * conditions, ...), so only an identical retry replays; for the other kinds, kind and key.
 */
export interface RequestFingerprint {
  readonly kind: Command['type'];
  /** The key the request names first (a txn's first key), or null (lease operations). */
  readonly key: string | null;
  /** 8 hex digits, or empty (kinds decided by kind and key). */
  readonly digest: string;
}

export interface DedupRecord {
  /** The dedup clock when the record was written (stored where older versions kept the proposal time). */
  readonly stampMs: number;
  readonly outcome: StoredOutcome;
  /** What the first request was; absent in records older versions wrote (those replay to anything). */
  readonly request?: RequestFingerprint;
}

const compactTag = 0x80;
const tagMask = 0xc0;
const recordFlag = { ok: 0x01, fingerprint: 0x02 } as const;

function isCompact(bytes: Uint8Array): boolean {
  return ((bytes[0] ?? 0) & tagMask) === compactTag;
}

export function encodeDedupRecord(record: DedupRecord, format: StoreFormat): Uint8Array {
  return format === 1 ? encodeDedupRecordJson(record) : encodeDedupRecordCompact(record);
}

export function decodeDedupRecord(bytes: Uint8Array): DedupRecord {
  return isCompact(bytes) ? decodeDedupRecordCompact(bytes) : decodeDedupRecordJson(bytes);
}

/**
 * The same record with another stamp, every other byte as it was (either format). A namespace
 * move re-stamps the records it imports into the destination's dedup clock (namespace-requests.ts).
 */
export function restampDedupRecord(bytes: Uint8Array, stampMs: number): Uint8Array {
  assert(Number.isSafeInteger(stampMs) && stampMs >= 0, `a dedup stamp is a non-negative integer: ${stampMs}`);
  if (!isCompact(bytes)) {
    const copy = bytes.slice();
    copy.set(new ByteWriter(8).u64(stampMs).finish(), 0);
    return copy;
  }
  const reader = new ByteReader(bytes, 'stored', 'dedup record');
  reader.u8();
  reader.varint();
  const rest = bytes.subarray(reader.position);
  const head = new ByteWriter(16).u8(bytes[0] as number).varint(stampMs).finish();
  const out = new Uint8Array(head.byteLength + rest.byteLength);
  out.set(head, 0);
  out.set(rest, head.byteLength);
  return out;
}

/** The record as format 2 stores it (a format-2 record is already): the content hash's form. */
export function canonicalDedupRecord(bytes: Uint8Array): Uint8Array {
  return isCompact(bytes) ? bytes : encodeDedupRecordCompact(decodeDedupRecordJson(bytes));
}

// ---------------------------------------------------------------------------------------------
// Format 2.

function encodeDedupRecordCompact(record: DedupRecord): Uint8Array {
  const { outcome, request } = record;
  const writer = new ByteWriter(64);
  const tag = compactTag | (outcome.ok ? recordFlag.ok : 0) | (request === undefined ? 0 : recordFlag.fingerprint);
  writer.u8(tag).varint(record.stampMs);
  if (request !== undefined) writeFingerprint(writer, request);
  if (outcome.ok) writeResult(writer, outcome.result);
  else writeValue(writer, errorToJson(outcome.error));
  return writer.finish();
}

function decodeDedupRecordCompact(bytes: Uint8Array): DedupRecord {
  const reader = new ByteReader(bytes, 'stored', 'dedup record');
  const tag = reader.u8();
  if ((tag & ~(compactTag | recordFlag.ok | recordFlag.fingerprint)) !== 0) reader.fail(`dedup tag ${tag}`);
  const stampMs = reader.varint();
  const request = (tag & recordFlag.fingerprint) === 0 ? undefined : readFingerprint(reader);
  const outcome: StoredOutcome =
    (tag & recordFlag.ok) !== 0
      ? { ok: true, result: readResult(reader) }
      : { ok: false, error: errorFromJson(readValue(reader) as unknown as ErrorJson) };
  reader.end();
  return request === undefined ? { stampMs, outcome } : { stampMs, outcome, request };
}

/** Command kinds by code: append only (stored in every format-2 fingerprint). */
const kinds: readonly Command['type'][] = [
  'put', 'delete', 'txn', 'compact', 'deleteLeaseKeys', 'leaseGrant', 'leaseRevoke', 'leaseCheckpoint',
  'seqCreate', 'seqCheck', 'seqRelease', 'upgradeStore', 'policySet', 'ownershipSet', 'tenantsSet',
  'importKeys', 'leaseGrantBatch', 'leaseRevokeBatch',
];
const fingerprintFlag = { digest: 0x40, key: 0x80 } as const;

function writeFingerprint(writer: ByteWriter, fingerprint: RequestFingerprint): void {
  const kind = kinds.indexOf(fingerprint.kind);
  assert(kind >= 0, `a fingerprint's kind ${fingerprint.kind}`);
  assert(fingerprint.digest === '' || /^[0-9a-f]{8}$/.test(fingerprint.digest), 'a digest is 8 hex digits or none');
  const hasDigest = fingerprint.digest !== '';
  writer.u8(kind | (hasDigest ? fingerprintFlag.digest : 0) | (fingerprint.key === null ? 0 : fingerprintFlag.key));
  if (hasDigest) writer.u32(parseInt(fingerprint.digest, 16));
  if (fingerprint.key !== null) writeText(writer, fingerprint.key);
}

function readFingerprint(reader: ByteReader): RequestFingerprint {
  const head = reader.u8();
  const kind = kinds[head & 0x3f];
  if (kind === undefined) reader.fail(`fingerprint kind ${head & 0x3f}`);
  const digest = (head & fingerprintFlag.digest) === 0 ? '' : reader.u32().toString(16).padStart(8, '0');
  const key = (head & fingerprintFlag.key) === 0 ? null : readText(reader);
  return { kind, key, digest };
}

const shape = { value: 0, put: 1, putCreated: 2, delete: 3, leaseGrantBatch: 4 } as const;
const grantBatchFields = ['type', 'leases', 'revision'];
const grantedFields = ['id', 'ttlMs'];
const putFields = ['type', 'created', 'version', 'revision', 'fencingToken'];
const deleteFields = ['type', 'deleted', 'revision'];

function hasFields(result: object, fields: readonly string[]): boolean {
  const names = Object.keys(result);
  return names.length === fields.length && names.every((name, i) => name === fields[i]);
}

function writeResult(writer: ByteWriter, result: CommandResult): void {
  switch (resultShape(result)) {
    case shape.putCreated:
      writer.u8(shape.putCreated).varint((result as PutResult).revision);
      return;
    case shape.put: {
      const { version, revision, fencingToken } = result as PutResult;
      writer.u8(shape.put).varint(version).varint(revision).varint(revision - fencingToken);
      return;
    }
    case shape.delete:
      writer.u8(shape.delete).varint((result as DeleteResult).deleted).varint((result as DeleteResult).revision);
      return;
    case shape.leaseGrantBatch: {
      const { leases, revision } = result as LeaseGrantBatchResult;
      writer.u8(shape.leaseGrantBatch).varint(revision).varint(leases.length);
      for (const lease of leases) writer.varint(lease.id).varint(lease.ttlMs);
      return;
    }
    case shape.value:
      writeValue(writer.u8(shape.value), result);
  }
}

/** The shape that holds `result` exactly, else a value. */
function resultShape(result: CommandResult): (typeof shape)[keyof typeof shape] {
  if (result.type === 'put' && hasFields(result, putFields) && typeof result.created === 'boolean') {
    const { created, version, revision, fencingToken } = result;
    if (!isCount(version) || !isCount(revision) || !isCount(fencingToken)) return shape.value;
    if (created) return version === 1 && fencingToken === revision ? shape.putCreated : shape.value;
    return fencingToken <= revision ? shape.put : shape.value;
  }
  if (result.type === 'delete' && hasFields(result, deleteFields) && isCount(result.deleted) && isCount(result.revision)) {
    return shape.delete;
  }
  if (result.type === 'leaseGrantBatch' && hasFields(result, grantBatchFields) && isCount(result.revision) && Array.isArray(result.leases) &&
    result.leases.every((lease) => hasFields(lease, grantedFields) && isCount(lease.id) && isCount(lease.ttlMs))) {
    return shape.leaseGrantBatch;
  }
  return shape.value;
}

function isCount(value: unknown): boolean {
  return Number.isSafeInteger(value) && (value as number) >= 0 && !Object.is(value, -0);
}

function readResult(reader: ByteReader): CommandResult {
  const code = reader.u8();
  switch (code) {
    case shape.putCreated: {
      const revision = reader.varint();
      return { type: 'put', created: true, version: 1, revision, fencingToken: revision };
    }
    case shape.put: {
      const version = reader.varint();
      const revision = reader.varint();
      const age = reader.varint();
      if (age > revision) reader.fail('a fencing token after its revision');
      return { type: 'put', created: false, version, revision, fencingToken: revision - age };
    }
    case shape.delete: {
      const deleted = reader.varint();
      return { type: 'delete', deleted, revision: reader.varint() };
    }
    case shape.leaseGrantBatch: {
      const revision = reader.varint();
      const leases: { id: number; ttlMs: number }[] = [];
      for (let n = reader.varint(); n > 0; n--) leases.push({ id: reader.varint(), ttlMs: reader.varint() });
      return { type: 'leaseGrantBatch', leases, revision };
    }
    case shape.value:
      return readValue(reader) as unknown as CommandResult;
    default:
      return reader.fail(`result shape ${code}`);
  }
}

/** Strings that take one byte as a value or a field name: append only (stored in records). */
const words: readonly string[] = [
  'type', 'put', 'delete', 'txn', 'get', 'compact', 'deleteLeaseKeys', 'leaseGrant', 'leaseRevoke',
  'leaseCheckpoint', 'seqCreate', 'seqCheck', 'seqRelease', 'created', 'version', 'revision',
  'fencingToken', 'deleted', 'succeeded', 'results', 'count', 'more', 'kvs', 'key', 'value',
  'createRevision', 'modRevision', 'lease', 'compactRevision', 'id', 'ttlMs', 'updated', 'kv', 'owner',
  'predecessor', 'code', 'message', 'details', 'current', 'holder', 'size', 'limit', 'reason',
  'currentRevision', 'precondition_failed', 'key_not_found', 'lease_not_found', 'lock_held',
  'lock_not_held', 'compacted', 'too_large', 'quota_exceeded', 'invalid_argument', 'upgradeStore',
  'storeFormat',
];
const wordCodes = new Map(words.map((word, i) => [word, i]));
assert(words.length < 0xff && wordCodes.size === words.length, 'words are distinct and fit a byte');
/** A field name not in `words`: this byte, then the name as text. */
const literalName = 0xff;

const valueTag = {
  null: 0, false: 1, true: 2, unsigned: 3, negative: 4, float: 5, text: 6, word: 7, bytes: 8,
  array: 9, object: 10,
} as const;

/** As JSON.stringify sees `value` (Uint8Array as bytes); undefined only inside objects (skipped). */
function writeValue(writer: ByteWriter, value: unknown): void {
  if (value === null || value === undefined) {
    writer.u8(valueTag.null);
  } else if (typeof value === 'boolean') {
    writer.u8(value ? valueTag.true : valueTag.false);
  } else if (typeof value === 'number') {
    writeNumber(writer, value);
  } else if (typeof value === 'string') {
    const word = wordCodes.get(value);
    if (word !== undefined) writer.u8(valueTag.word).u8(word);
    else writeText(writer.u8(valueTag.text), value);
  } else if (value instanceof Uint8Array) {
    writer.u8(valueTag.bytes).varint(value.length).raw(value);
  } else if (Array.isArray(value)) {
    writer.u8(valueTag.array).varint(value.length);
    for (const item of value as unknown[]) writeValue(writer, item);
  } else if (typeof value === 'object' && !('toJSON' in value)) {
    const fields = Object.entries(value).filter(([, field]) => field !== undefined);
    writer.u8(valueTag.object).varint(fields.length);
    for (const [name, field] of fields) {
      const word = wordCodes.get(name);
      if (word !== undefined) writer.u8(word);
      else writeText(writer.u8(literalName), name);
      writeValue(writer, field);
    }
  } else {
    assert(false, `a recorded outcome holds plain data, not ${typeof value}`);
  }
}

function writeNumber(writer: ByteWriter, value: number): void {
  // JSON's numbers: -0 reads back as 0, and NaN or an infinity as null.
  if (Number.isSafeInteger(value)) {
    if (value >= 0) writer.u8(valueTag.unsigned).varint(value);
    else writer.u8(valueTag.negative).varint(-value);
  } else if (Number.isFinite(value)) {
    const bytes = new Uint8Array(8);
    new DataView(bytes.buffer).setFloat64(0, value);
    writer.u8(valueTag.float).raw(bytes);
  } else {
    writer.u8(valueTag.null);
  }
}

function readValue(reader: ByteReader): unknown {
  const tag = reader.u8();
  switch (tag) {
    case valueTag.null:
      return null;
    case valueTag.false:
      return false;
    case valueTag.true:
      return true;
    case valueTag.unsigned:
      return reader.varint();
    case valueTag.negative:
      return -reader.varint();
    case valueTag.float:
      return new DataView(reader.raw(8).buffer).getFloat64(0);
    case valueTag.text:
      return readText(reader);
    case valueTag.word:
      return readWord(reader);
    case valueTag.bytes:
      return reader.raw(reader.varint());
    case valueTag.array: {
      const length = reader.varint();
      const items: unknown[] = [];
      for (let i = 0; i < length; i++) items.push(readValue(reader));
      return items;
    }
    case valueTag.object: {
      const length = reader.varint();
      const object: Record<string, unknown> = {};
      for (let i = 0; i < length; i++) {
        const code = reader.u8();
        const name = code === literalName ? readText(reader) : wordAt(reader, code);
        // Defined like JSON.parse defines fields (a "__proto__" field stays a field).
        Object.defineProperty(object, name, { value: readValue(reader), enumerable: true, writable: true, configurable: true });
      }
      return object;
    }
    default:
      return reader.fail(`value tag ${tag}`);
  }
}

function readWord(reader: ByteReader): string {
  return wordAt(reader, reader.u8());
}

function wordAt(reader: ByteReader, code: number): string {
  const word = words[code];
  if (word === undefined) reader.fail(`word ${code}`);
  return word;
}

function writeText(writer: ByteWriter, text: string): void {
  const bytes = utf8(text);
  writer.varint(bytes.length).raw(bytes);
}

function readText(reader: ByteReader): string {
  const bytes = reader.view(reader.varint());
  try {
    return fromUtf8(bytes);
  } catch {
    return reader.fail('invalid UTF-8');
  }
}

// ---------------------------------------------------------------------------------------------
// Format 1.

function encodeDedupRecordJson(record: DedupRecord): Uint8Array {
  const request = record.request === undefined ? {} : { q: encodeFingerprintText(record.request) };
  const json = JSON.stringify(
    record.outcome.ok
      ? { ok: true, result: record.outcome.result, ...request }
      : { ok: false, error: errorToJson(record.outcome.error), ...request },
    // Read the holder, not `value`: a Buffer's toJSON runs before the replacer sees it.
    function (this: Record<string, unknown>, name: string, value: unknown) {
      const raw = this[name];
      return raw instanceof Uint8Array ? { $bytes: latin1(raw) } : value;
    },
  );
  return new ByteWriter(16 + json.length).u64(record.stampMs).raw(utf8(json)).finish();
}

function decodeDedupRecordJson(bytes: Uint8Array): DedupRecord {
  const reader = new ByteReader(bytes, 'stored', 'dedup record');
  const stampMs = reader.u64();
  const parsed = JSON.parse(fromUtf8(reader.raw(reader.remaining)), (_name, value: unknown) => {
    if (typeof value === 'object' && value !== null && '$bytes' in value) {
      return fromLatin1((value as { $bytes: string }).$bytes);
    }
    return value;
  }) as ({ ok: true; result: CommandResult } | { ok: false; error: ErrorJson }) & { q?: string };
  const outcome: StoredOutcome = parsed.ok
    ? { ok: true, result: parsed.result }
    : { ok: false, error: errorFromJson(parsed.error) };
  return { stampMs, outcome, ...(parsed.q !== undefined ? { request: decodeFingerprintText(parsed.q) } : {}) };
}

// A format-1 fingerprint is one short string, "digest|kind" or "digest|kind|key" (the digest is 8
// hex digits or empty; a kind has no "|"; the key may).
function encodeFingerprintText(fingerprint: RequestFingerprint): string {
  const head = `${fingerprint.digest}|${fingerprint.kind}`;
  return fingerprint.key === null ? head : `${head}|${fingerprint.key}`;
}

function decodeFingerprintText(text: string): RequestFingerprint {
  const first = text.indexOf('|');
  assert(first >= 0, 'a stored request fingerprint has a kind');
  const second = text.indexOf('|', first + 1);
  const kind = text.slice(first + 1, second < 0 ? undefined : second) as Command['type'];
  return { digest: text.slice(0, first), kind, key: second < 0 ? null : text.slice(second + 1) };
}

// ---------------------------------------------------------------------------------------------
// Errors, in both formats: code, message and details; rebuilt as the same class.

interface ErrorJson {
  readonly code: string;
  readonly message: string;
  readonly details: Record<string, unknown>;
}

function errorToJson(error: BatonError): ErrorJson {
  return { code: error.code, message: error.message, details: { ...error.details } };
}

/** Rebuilds the same error class with the same message and details. */
function errorFromJson(json: ErrorJson): BatonError {
  const details = json.details;
  const number = (name: string): number => {
    const value = details[name];
    assert(typeof value === 'number', `stored error detail ${name}`);
    return value;
  };
  switch (json.code) {
    case 'compacted':
      return new CompactedError(number('compactRevision'));
    case 'too_large':
      return new TooLargeError(
        json.message.split(' is ')[0] ?? 'request',
        number('size'),
        number('limit'),
        details['reason'] === 'too_many_operations' ? 'too_many_operations' : undefined,
      );
    case 'precondition_failed':
      return new PreconditionFailedError(json.message, details);
    case 'key_not_found':
      return new KeyNotFoundError(json.message, details);
    case 'lease_not_found':
      return new LeaseNotFoundError(json.message, details);
    case 'lock_held':
      return new LockHeldError(json.message, details);
    case 'lock_not_held':
      return new LockNotHeldError(json.message, details);
    case 'quota_exceeded':
      return new QuotaExceededError(json.message, details);
    case 'unavailable':
      // Only the spent epoch (mvcc/epoch.ts) is decided at apply with this code.
      return new UnavailableError(json.message, details);
    case 'invalid_argument':
      if ('currentRevision' in details) {
        return new FutureRevisionError(number('revision'), number('currentRevision'));
      }
      return new InvalidArgumentError(json.message, details);
    default:
      return assert(false, `no rebuild for stored error code ${json.code}`) as never;
  }
}
