// The command envelope in a Raft entry's data: a hand-written binary format (values are bytes, up
// to 1 MiB, so no JSON/base64 on the apply path). Decoding validates everything, so apply sees
// only well-formed commands; both directions enforce the request size limit.
//
//   u8 0xB7  u8 format=1  u64 proposedAtMs  u8 flags [u32 len, UTF-8 requestId] [u64 source]
//   [u32 len, UTF-8 principal] [u32 len, UTF-8 address]  op
//   flags: bit 0 a requestId follows, bit 1 a source (proposing member id) follows, bit 2 the
//   principal the request came from ('' anonymous; absent: the cell's own work; older versions
//   refuse the flag as malformed), bit 3 the client's source address "IP:port" (written only with
//   an audit log, for its records; older versions refuse the flag as malformed); older
//   versions wrote 0 or 1 there, so their entries decode unchanged (no source)
//   op:  u8 code, then per code:
//     1 put     key, value, ?lease, ?ifVersion, ?ifRevision
//     2 delete  key, bool prefix, ?ifVersion, ?ifRevision
//     3 txn     u16 n, n x compare(key, u8 target, u8 operator, value|u64), u16 n ops, u16 n ops
//     4 compact u64 revision
//     5 deleteLeaseKeys u64 lease
//     6 get     key, bool prefix, ?limit, bool keysOnly, bool countOnly, ?revision (txn only)
//     7 leaseGrant      u64 ttlMs, ?id
//     8 leaseRevoke     u64 id
//     9 leaseCheckpoint u16 n, n x (u64 id, u64 remainingMs)
//    10 seqCreate  prefix, value, u64 lease, bool ifEmpty
//    11 seqCheck   prefix, key, u64 lease
//    12 seqRelease prefix, key
//    13 upgradeStore   u8 storeFormat (older versions refuse code 13 as malformed: change nothing)
//    14 policySet      record bytes, u64 ifVersion (older versions refuse code 14 as malformed)
//    15 ownershipSet   record bytes (older versions refuse code 15 as malformed)
//    16 importKeys     record bytes (a move's copy into the destination, import-keys.ts; older
//                      versions refuse code 16 as malformed and change nothing)
//    19 leaseGrantBatch u16 n, n x (u64 ttlMs, ?id) (#31; proposed only once the store format is
//       3, i.e. every member applies it; older versions refuse code 19 as malformed: change nothing)
//    20 tenantsSet     record bytes, u64 ifVersion (#28; 17-18 left for other work in flight)
//    21 leaseRevokeBatch u16 n, n x u64 id (#31; proposed only once the store format is 4, i.e.
//       every member applies it; older versions refuse code 21 as malformed: change nothing)
//   key/value: u32 length + bytes; ?x: u8 present [u64 x]
import { InvalidArgumentError, TooLargeError } from '../base/errors.js';
import { ByteReader, ByteWriter } from './byte-codec.js';
import { validateCommand, validateCount, validateRequestId } from './validate.js';
import {
  compareOperators,
  compareTargets,
  type Command,
  type CommandEnvelope,
  type Compare,
  type MvccLimits,
  type PutOp,
  type TxnOp,
} from './types.js';

const magic = 0xb7;
const format = 1;
const flagRequestId = 1;
const flagSource = 2;
const flagPrincipal = 4;
const flagAddress = 8;
/** "[IPv6]:port" is at most 53 bytes; room to spare, and a bound on what apply accepts. */
export const addressBytesMax = 64;
/** A principal's name (a certificate's CN, a user): bounded like a Request-ID's neighbour fields. */
export const principalBytesMax = 256;
const opCode = {
  put: 1,
  delete: 2,
  txn: 3,
  compact: 4,
  deleteLeaseKeys: 5,
  get: 6,
  leaseGrant: 7,
  leaseRevoke: 8,
  leaseCheckpoint: 9,
  seqCreate: 10,
  seqCheck: 11,
  seqRelease: 12,
  upgradeStore: 13,
  policySet: 14,
  ownershipSet: 15,
  importKeys: 16,
  leaseGrantBatch: 19,
  tenantsSet: 20,
  leaseRevokeBatch: 21,
} as const;

/** Validates and encodes; throws the typed error a client should see. */
export function encodeCommand(envelope: CommandEnvelope, limits: MvccLimits): Uint8Array {
  validateCount(envelope.proposedAtMs, 'proposedAtMs');
  if (envelope.source !== undefined) validateCount(envelope.source, 'source');
  if (envelope.requestId !== undefined) validateRequestId(envelope.requestId, limits);
  if (envelope.principal !== undefined && new TextEncoder().encode(envelope.principal).length > principalBytesMax) {
    throw new TooLargeError('a principal name', new TextEncoder().encode(envelope.principal).length, principalBytesMax);
  }
  if (envelope.address !== undefined && Buffer.byteLength(envelope.address) > addressBytesMax) {
    throw new TooLargeError('a source address', Buffer.byteLength(envelope.address), addressBytesMax);
  }
  validateCommand(envelope.op, limits);
  const bytes = encodeCommandUnchecked(envelope);
  checkRequestBytes(bytes, limits);
  return bytes;
}

/**
 * Encodes without validating. Apply must cope with such entries anyway (a leader with other
 * limits or an older version may have proposed them); tests use this to produce them.
 */
export function encodeCommandUnchecked(envelope: CommandEnvelope): Uint8Array {
  const writer = new ByteWriter(commandBytesEstimate(envelope));
  writer.u8(magic).u8(format).u64(envelope.proposedAtMs);
  const hasSource = envelope.source !== undefined;
  const hasPrincipal = envelope.principal !== undefined;
  const hasAddress = envelope.address !== undefined;
  writer.u8((envelope.requestId === undefined ? 0 : flagRequestId) | (hasSource ? flagSource : 0) | (hasPrincipal ? flagPrincipal : 0) | (hasAddress ? flagAddress : 0));
  if (envelope.requestId !== undefined) writer.string(envelope.requestId);
  if (envelope.source !== undefined) writer.u64(envelope.source);
  if (envelope.principal !== undefined) writer.string(envelope.principal);
  if (envelope.address !== undefined) writer.string(envelope.address);
  writeOp(writer, envelope.op);
  return writer.finish();
}

export function decodeCommand(data: Uint8Array, limits: MvccLimits): CommandEnvelope {
  checkRequestBytes(data, limits);
  const envelope = decodeCommandUnchecked(data);
  if (envelope.requestId !== undefined) validateRequestId(envelope.requestId, limits);
  validateCommand(envelope.op, limits);
  return envelope;
}

export function checkRequestBytes(data: Uint8Array, limits: MvccLimits): void {
  if (data.length > limits.requestBytesMax) {
    throw new TooLargeError('request', data.length, limits.requestBytesMax);
  }
}

/**
 * Decodes the structure only (InvalidArgumentError if malformed). Apply uses it so that a retry
 * is matched by its Request-ID before the command's content is judged.
 */
export function decodeCommandUnchecked(data: Uint8Array): CommandEnvelope {
  const reader = new ByteReader(data, 'input', 'command');
  if (reader.u8() !== magic) reader.fail('not a Baton command');
  const version = reader.u8();
  if (version !== format) reader.fail(`unknown command format ${version}`);
  const proposedAtMs = reader.u64();
  const flags = reader.u8();
  if ((flags & ~(flagRequestId | flagSource | flagPrincipal | flagAddress)) !== 0) reader.fail(`unknown command flags ${flags}`);
  const requestId = (flags & flagRequestId) !== 0 ? reader.string() : undefined;
  const source = (flags & flagSource) !== 0 ? reader.u64() : undefined;
  const principal = (flags & flagPrincipal) !== 0 ? reader.string() : undefined;
  if (principal !== undefined && new TextEncoder().encode(principal).length > principalBytesMax) reader.fail(`a principal over ${principalBytesMax} bytes`);
  const address = (flags & flagAddress) !== 0 ? reader.string() : undefined;
  if (address !== undefined && Buffer.byteLength(address) > addressBytesMax) reader.fail(`a source address over ${addressBytesMax} bytes`);
  const op = readOp(reader, false) as Command;
  reader.end();
  return {
    ...(requestId === undefined ? {} : { requestId }),
    proposedAtMs,
    ...(source === undefined ? {} : { source }),
    ...(principal === undefined ? {} : { principal }),
    ...(address === undefined ? {} : { address }),
    op,
  };
}

/**
 * At least the encoded size of a put (UTF-8 takes at most 3 bytes per UTF-16 unit), so its writer
 * never grows: one buffer and one exact copy per command instead of a buffer per doubling.
 */
function commandBytesEstimate(envelope: CommandEnvelope): number {
  const op = envelope.op;
  const head = 11 + (envelope.requestId === undefined ? 0 : 4 + 3 * envelope.requestId.length) + 8
    + (envelope.principal === undefined ? 0 : 4 + 3 * envelope.principal.length)
    + (envelope.address === undefined ? 0 : 4 + 3 * envelope.address.length);
  if (op.type === 'leaseRevokeBatch') return head + 3 + 8 * op.ids.length;
  if (op.type !== 'put') return 64 + head;
  return head + 1 + 4 + 3 * op.key.length + 4 + op.value.length + 3 * 9;
}

function writeOptional(writer: ByteWriter, value: number | undefined): void {
  writer.u8(value === undefined ? 0 : 1);
  if (value !== undefined) writer.u64(value);
}

function readOptional(reader: ByteReader): number | undefined {
  return reader.bool() ? reader.u64() : undefined;
}

function writeOp(writer: ByteWriter, op: Command | TxnOp): void {
  writer.u8(opCode[op.type]);
  switch (op.type) {
    case 'put':
      writer.string(op.key).bytes(op.value);
      writeOptional(writer, op.lease);
      writeOptional(writer, op.ifVersion);
      writeOptional(writer, op.ifRevision);
      return;
    case 'delete':
      writer.string(op.key).u8(op.prefix === true ? 1 : 0);
      writeOptional(writer, op.ifVersion);
      writeOptional(writer, op.ifRevision);
      return;
    case 'get':
      writer.string(op.key).u8(op.prefix === true ? 1 : 0);
      writeOptional(writer, op.limit);
      writer.u8(op.keysOnly === true ? 1 : 0).u8(op.countOnly === true ? 1 : 0);
      writeOptional(writer, op.revision);
      return;
    case 'txn':
      writer.u16(op.compare.length);
      for (const compare of op.compare) writeCompare(writer, compare);
      for (const branch of [op.success, op.failure]) {
        writer.u16(branch.length);
        for (const inner of branch) writeOp(writer, inner);
      }
      return;
    case 'compact':
      writer.u64(op.revision);
      return;
    case 'deleteLeaseKeys':
      writer.u64(op.lease);
      return;
    case 'leaseGrant':
      writer.u64(op.ttlMs);
      writeOptional(writer, op.id);
      return;
    case 'leaseRevoke':
      writer.u64(op.id);
      return;
    case 'leaseGrantBatch':
      writer.u16(op.grants.length);
      for (const grant of op.grants) {
        writer.u64(grant.ttlMs);
        writeOptional(writer, grant.id);
      }
      break;
    case 'leaseRevokeBatch':
      writer.u16(op.ids.length);
      for (const id of op.ids) writer.u64(id);
      return;
    case 'leaseCheckpoint':
      writer.u16(op.leases.length);
      for (const lease of op.leases) writer.u64(lease.id).u64(lease.remainingMs);
      return;
    case 'seqCreate':
      writer.string(op.prefix).bytes(op.value).u64(op.lease).u8(op.ifEmpty ? 1 : 0);
      return;
    case 'seqCheck':
      writer.string(op.prefix).string(op.key).u64(op.lease);
      return;
    case 'seqRelease':
      writer.string(op.prefix).string(op.key);
      return;
    case 'upgradeStore':
      writer.u8(op.storeFormat);
      return;
    case 'policySet':
      writer.bytes(op.record).u64(op.ifVersion);
      return;
    case 'ownershipSet':
    case 'importKeys':
      writer.bytes(op.record);
      return;
    case 'tenantsSet':
      writer.bytes(op.record).u64(op.ifVersion);
      return;
  }
}

function writeCompare(writer: ByteWriter, compare: Compare): void {
  writer.string(compare.key);
  writer.u8(compareTargets.indexOf(compare.target)).u8(compareOperators.indexOf(compare.op));
  if (compare.target === 'value') writer.bytes(compare.value as Uint8Array);
  else writer.u64(compare.value as number);
}

function withOptionals<T extends object>(base: T, optionals: Record<string, number | boolean | undefined>): T {
  const out: Record<string, unknown> = { ...(base as Record<string, unknown>) };
  for (const [name, value] of Object.entries(optionals)) {
    if (value !== undefined && value !== false) out[name] = value;
  }
  return out as T;
}

function readOp(reader: ByteReader, inTxn: boolean): Command | TxnOp {
  const code = reader.u8();
  switch (code) {
    case opCode.put: {
      const key = reader.string();
      // A view: commands are decoded from Raft entries, which nothing writes to again, and
      // applying copies the value into the store anyway.
      const value = reader.bytesView();
      const lease = readOptional(reader);
      const ifVersion = readOptional(reader);
      const ifRevision = readOptional(reader);
      // The hot path (every put applied): built directly rather than through withOptionals.
      const op: { -readonly [K in keyof PutOp]: PutOp[K] } = { type: 'put', key, value };
      if (lease !== undefined) op.lease = lease;
      if (ifVersion !== undefined) op.ifVersion = ifVersion;
      if (ifRevision !== undefined) op.ifRevision = ifRevision;
      return op;
    }
    case opCode.delete: {
      const key = reader.string();
      const prefix = reader.bool();
      const ifVersion = readOptional(reader);
      const ifRevision = readOptional(reader);
      return withOptionals({ type: 'delete', key }, { prefix, ifVersion, ifRevision });
    }
    case opCode.get: {
      if (!inTxn) reader.fail('a get is only a command inside a txn');
      const key = reader.string();
      const prefix = reader.bool();
      const limit = readOptional(reader);
      const keysOnly = reader.bool();
      const countOnly = reader.bool();
      const revision = readOptional(reader);
      return withOptionals({ type: 'get', key }, { prefix, limit, keysOnly, countOnly, revision });
    }
    case opCode.txn:
      if (inTxn) reader.fail('a txn cannot nest');
      return readTxn(reader);
    case opCode.compact:
      if (inTxn) reader.fail('compact is not a txn operation');
      return { type: 'compact', revision: reader.u64() };
    case opCode.deleteLeaseKeys:
      if (inTxn) reader.fail('deleteLeaseKeys is not a txn operation');
      return { type: 'deleteLeaseKeys', lease: reader.u64() };
    case opCode.leaseGrant:
    case opCode.leaseGrantBatch:
    case opCode.leaseRevoke:
    case opCode.leaseRevokeBatch:
    case opCode.leaseCheckpoint:
      if (inTxn) reader.fail('lease commands are not txn operations');
      return readLeaseOp(reader, code);
    case opCode.seqCreate:
    case opCode.seqCheck:
    case opCode.seqRelease:
      if (inTxn) reader.fail('queue commands are not txn operations');
      return readSeqOp(reader, code);
    case opCode.upgradeStore:
      if (inTxn) reader.fail('upgradeStore is not a txn operation');
      return { type: 'upgradeStore', storeFormat: reader.u8() };
    case opCode.policySet: {
      if (inTxn) reader.fail('policySet is not a txn operation');
      const record = reader.bytes();
      return { type: 'policySet', record, ifVersion: reader.u64() };
    }
    case opCode.ownershipSet:
      if (inTxn) reader.fail('ownershipSet is not a txn operation');
      return { type: 'ownershipSet', record: reader.bytes() };
    case opCode.importKeys:
      if (inTxn) reader.fail('importKeys is not a txn operation');
      return { type: 'importKeys', record: reader.bytes() };
    case opCode.tenantsSet: {
      if (inTxn) reader.fail('tenantsSet is not a txn operation');
      const record = reader.bytes();
      return { type: 'tenantsSet', record, ifVersion: reader.u64() };
    }
    default:
      return reader.fail(`unknown operation code ${code}`);
  }
}

function readLeaseOp(reader: ByteReader, code: number): Command {
  if (code === opCode.leaseGrant) {
    const ttlMs = reader.u64();
    const id = readOptional(reader);
    return id === undefined ? { type: 'leaseGrant', ttlMs } : { type: 'leaseGrant', ttlMs, id };
  }
  if (code === opCode.leaseRevoke) return { type: 'leaseRevoke', id: reader.u64() };
  if (code === opCode.leaseRevokeBatch) {
    const count = reader.u16();
    const ids = new Array<number>(count);
    for (let i = 0; i < count; i++) ids[i] = reader.u64();
    return { type: 'leaseRevokeBatch', ids };
  }
  if (code === opCode.leaseGrantBatch) {
    const count = reader.u16();
    const grants = new Array<{ readonly ttlMs: number; readonly id?: number }>(count);
    // Grants without an id and with the TTL of the one before share its (immutable) object: a
    // session batch is one TTL a thousand times, decoded on every member.
    let plain: { readonly ttlMs: number } | null = null;
    for (let i = 0; i < count; i++) {
      const ttlMs = reader.u64();
      const id = readOptional(reader);
      if (id !== undefined) grants[i] = { ttlMs, id };
      else grants[i] = plain = plain !== null && plain.ttlMs === ttlMs ? plain : { ttlMs };
    }
    return { type: 'leaseGrantBatch', grants };
  }
  const count = reader.u16();
  const leases: { id: number; remainingMs: number }[] = [];
  for (let i = 0; i < count; i++) leases.push({ id: reader.u64(), remainingMs: reader.u64() });
  return { type: 'leaseCheckpoint', leases };
}

function readSeqOp(reader: ByteReader, code: number): Command {
  const prefix = reader.string();
  if (code === opCode.seqCreate) {
    const value = reader.bytes();
    const lease = reader.u64();
    return { type: 'seqCreate', prefix, value, lease, ifEmpty: reader.bool() };
  }
  const key = reader.string();
  if (code === opCode.seqCheck) return { type: 'seqCheck', prefix, key, lease: reader.u64() };
  return { type: 'seqRelease', prefix, key };
}

function readTxn(reader: ByteReader): Command {
  const compareCount = reader.u16();
  const compare: Compare[] = [];
  for (let i = 0; i < compareCount; i++) compare.push(readCompare(reader));
  const branches: TxnOp[][] = [];
  for (let b = 0; b < 2; b++) {
    const count = reader.u16();
    const ops: TxnOp[] = [];
    for (let i = 0; i < count; i++) ops.push(readOp(reader, true) as TxnOp);
    branches.push(ops);
  }
  return { type: 'txn', compare, success: branches[0] ?? [], failure: branches[1] ?? [] };
}

function readCompare(reader: ByteReader): Compare {
  const key = reader.string();
  const target = compareTargets[reader.u8()];
  const op = compareOperators[reader.u8()];
  if (target === undefined || op === undefined) {
    throw new InvalidArgumentError('malformed command: unknown compare target or operator');
  }
  const value = target === 'value' ? reader.bytes() : reader.u64();
  return { key, target, op, value };
}
