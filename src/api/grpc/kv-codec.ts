// Hand-written protobuf codecs for the facade's hottest calls, KV.Range and KV.Put. proto-loader's
// generic path decodes into a message object, then copies it with every default filled in and
// each int64 turned into a Long and then a decimal string; encoding parses those strings back into
// Longs. These read and write the wire format directly: fields as numbers, bytes as views of the
// request, one exactly sized buffer per answer. Same messages as proto/etcd/rpc.proto (unknown
// fields skipped, zero values omitted as proto3 does); test/unit/grpc/kv-codec.test.ts checks them
// against proto-loader's codecs.
import type { ServiceDefinition } from '@grpc/grpc-js';
import { assert } from '../../base/assert.js';
import type { ResponseHeader } from './header.js';
import type { Int64, KeyValueMsg, PutRequestMsg, PutResponseMsg, RangeRequestMsg, RangeResponseMsg, SortOrder, SortTarget } from './wire.js';

const varintType = 0;
const fixed64Type = 1;
const bytesType = 2;
const fixed32Type = 5;
const emptyBytes = Buffer.alloc(0);

class WireReader {
  private at = 0;
  constructor(private readonly buf: Buffer) {}

  get done(): boolean {
    return this.at >= this.buf.length;
  }

  /** A varint as a number: exact below 2^53; above (or negative int64s) it is unsafe and int() refuses it. */
  varint(): number {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      const byte = this.buf[this.at++];
      if (byte === undefined) throw malformed();
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
      scale *= 128;
    }
    throw malformed();
  }

  bytes(): Buffer {
    const length = this.varint();
    const end = this.at + length;
    if (end > this.buf.length) throw malformed();
    const out = this.buf.subarray(this.at, end);
    this.at = end;
    return out;
  }

  skip(wireType: number): void {
    if (wireType === varintType) this.varint();
    else if (wireType === bytesType) this.bytes();
    else if (wireType === fixed64Type) this.at += 8;
    else if (wireType === fixed32Type) this.at += 4;
    else throw malformed();
    if (this.at > this.buf.length) throw malformed();
  }
}

function malformed(): Error {
  return new Error('malformed protobuf message');
}

export function decodeRangeRequest(buf: Buffer): RangeRequestMsg {
  const request: RangeRequestMsg = {
    key: emptyBytes,
    range_end: emptyBytes,
    limit: 0,
    revision: 0,
    sort_order: 0,
    sort_target: 0,
    serializable: false,
    keys_only: false,
    count_only: false,
    min_mod_revision: 0,
    max_mod_revision: 0,
    min_create_revision: 0,
    max_create_revision: 0,
  };
  const reader = new WireReader(buf);
  while (!reader.done) {
    const tag = reader.varint();
    const field = Math.floor(tag / 8);
    const wireType = tag & 7;
    if (wireType === bytesType && (field === 1 || field === 2)) {
      if (field === 1) request.key = reader.bytes();
      else request.range_end = reader.bytes();
      continue;
    }
    if (wireType !== varintType) {
      reader.skip(wireType);
      continue;
    }
    const value = reader.varint();
    switch (field) {
      case 3: request.limit = value; break;
      case 4: request.revision = value; break;
      case 5: request.sort_order = value as SortOrder; break;
      case 6: request.sort_target = value as SortTarget; break;
      case 7: request.serializable = value !== 0; break;
      case 8: request.keys_only = value !== 0; break;
      case 9: request.count_only = value !== 0; break;
      case 10: request.min_mod_revision = value; break;
      case 11: request.max_mod_revision = value; break;
      case 12: request.min_create_revision = value; break;
      case 13: request.max_create_revision = value; break;
      default: break; // an unknown varint field
    }
  }
  return request;
}

export function decodePutRequest(buf: Buffer): PutRequestMsg {
  const request: PutRequestMsg = { key: emptyBytes, value: emptyBytes, lease: 0, prev_kv: false, ignore_value: false, ignore_lease: false };
  const reader = new WireReader(buf);
  while (!reader.done) {
    const tag = reader.varint();
    const field = Math.floor(tag / 8);
    const wireType = tag & 7;
    if (wireType === bytesType && (field === 1 || field === 2)) {
      if (field === 1) request.key = reader.bytes();
      else request.value = reader.bytes();
      continue;
    }
    if (wireType !== varintType) {
      reader.skip(wireType);
      continue;
    }
    const value = reader.varint();
    if (field === 3) request.lease = value;
    else if (field === 4) request.prev_kv = value !== 0;
    else if (field === 5) request.ignore_value = value !== 0;
    else if (field === 6) request.ignore_lease = value !== 0;
  }
  return request;
}

// ---------------------------------------------------------------------------------------------
// Encoding: sizes first, then one buffer written front to back.

/** An int64/uint64 field's value; the cluster id may exceed 2^53 (only decimal text holds it). */
function uint64Of(value: Int64): number | bigint {
  if (typeof value === 'number') return value;
  const number = Number(value);
  return Number.isSafeInteger(number) ? number : BigInt(value);
}

function varintSize(value: number | bigint): number {
  if (typeof value === 'bigint') return bigVarint(value).length;
  let size = 1;
  for (let rest = value; rest >= 128; rest = Math.floor(rest / 128)) size++;
  return size;
}

const bigVarints = new Map<bigint, Buffer>();

/** A 64-bit value's varint bytes (the cluster id: one per node, so cached). */
function bigVarint(value: bigint): Buffer {
  const cached = bigVarints.get(value);
  if (cached !== undefined) return cached;
  assert(value >= 0n && value < 1n << 64n, 'a uint64');
  const bytes: number[] = [];
  let rest = value;
  while (rest >= 128n) {
    bytes.push(Number(rest & 0x7fn) | 0x80);
    rest >>= 7n;
  }
  bytes.push(Number(rest));
  const out = Buffer.from(bytes);
  if (bigVarints.size < 16) bigVarints.set(value, out);
  return out;
}

class WireWriter {
  private at = 0;
  readonly buf: Buffer;
  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(size);
  }

  varint(value: number | bigint): this {
    if (typeof value === 'bigint') {
      const bytes = bigVarint(value);
      bytes.copy(this.buf, this.at);
      this.at += bytes.length;
      return this;
    }
    let rest = value;
    while (rest >= 128) {
      this.buf[this.at++] = (rest % 128) | 0x80;
      rest = Math.floor(rest / 128);
    }
    this.buf[this.at++] = rest;
    return this;
  }

  /** A varint field, omitted at zero (proto3's default). */
  number(field: number, value: number | bigint): this {
    if (value === 0 || value === 0n) return this;
    return this.varint(field * 8 + varintType).varint(value);
  }

  /** A length-delimited field: bytes, or a message whose encoded size is `length`. */
  delimited(field: number, length: number): this {
    return this.varint(field * 8 + bytesType).varint(length);
  }

  bytes(field: number, bytes: Uint8Array): this {
    if (bytes.length === 0) return this;
    this.delimited(field, bytes.length);
    this.buf.set(bytes, this.at);
    this.at += bytes.length;
    return this;
  }

  finish(): Buffer {
    assert(this.at === this.buf.length, 'an encoded message fills its computed size');
    return this.buf;
  }
}

function numberFieldSize(field: number, value: number | bigint): number {
  return value === 0 || value === 0n ? 0 : varintSize(field * 8) + varintSize(value);
}

function bytesFieldSize(field: number, length: number): number {
  return length === 0 ? 0 : varintSize(field * 8) + varintSize(length) + length;
}

function messageFieldSize(field: number, length: number): number {
  return varintSize(field * 8) + varintSize(length) + length;
}

interface HeaderFields {
  readonly size: number;
  readonly clusterId: number | bigint;
  readonly memberId: number | bigint;
  readonly revision: number | bigint;
  readonly term: number | bigint;
}

function headerFields(header: ResponseHeader): HeaderFields {
  const clusterId = uint64Of(header.cluster_id);
  const memberId = uint64Of(header.member_id);
  const revision = uint64Of(header.revision);
  const term = uint64Of(header.raft_term);
  const size = numberFieldSize(1, clusterId) + numberFieldSize(2, memberId) + numberFieldSize(3, revision) + numberFieldSize(4, term);
  return { size, clusterId, memberId, revision, term };
}

function writeHeader(writer: WireWriter, field: number, header: HeaderFields): void {
  writer.delimited(field, header.size).number(1, header.clusterId).number(2, header.memberId).number(3, header.revision).number(4, header.term);
}

function kvSize(kv: KeyValueMsg): number {
  return (
    bytesFieldSize(1, kv.key.length) +
    numberFieldSize(2, uint64Of(kv.create_revision)) +
    numberFieldSize(3, uint64Of(kv.mod_revision)) +
    numberFieldSize(4, uint64Of(kv.version)) +
    bytesFieldSize(5, kv.value.length) +
    numberFieldSize(6, uint64Of(kv.lease))
  );
}

function writeKv(writer: WireWriter, field: number, kv: KeyValueMsg, size: number): void {
  writer
    .delimited(field, size)
    .bytes(1, kv.key)
    .number(2, uint64Of(kv.create_revision))
    .number(3, uint64Of(kv.mod_revision))
    .number(4, uint64Of(kv.version))
    .bytes(5, kv.value)
    .number(6, uint64Of(kv.lease));
}

export function encodeRangeResponse(response: RangeResponseMsg): Buffer {
  const header = response.header === undefined ? null : headerFields(response.header);
  const kvSizes = response.kvs.map(kvSize);
  const count = uint64Of(response.count);
  let size = header === null ? 0 : messageFieldSize(1, header.size);
  for (const kv of kvSizes) size += messageFieldSize(2, kv);
  size += response.more ? 2 : 0;
  size += numberFieldSize(4, count);
  const writer = new WireWriter(size);
  if (header !== null) writeHeader(writer, 1, header);
  response.kvs.forEach((kv, i) => writeKv(writer, 2, kv, kvSizes[i] as number));
  if (response.more) writer.number(3, 1);
  writer.number(4, count);
  return writer.finish();
}

export function encodePutResponse(response: PutResponseMsg): Buffer {
  const header = response.header === undefined ? null : headerFields(response.header);
  const previous = response.prev_kv;
  const previousSize = previous === null ? 0 : kvSize(previous);
  const size = (header === null ? 0 : messageFieldSize(1, header.size)) + (previous === null ? 0 : messageFieldSize(2, previousSize));
  const writer = new WireWriter(size);
  if (header !== null) writeHeader(writer, 1, header);
  if (previous !== null) writeKv(writer, 2, previous, previousSize);
  return writer.finish();
}

/** etcd's KV service definition with these codecs for Range and Put (the rest stays proto-loader's). */
export function withKvCodecs(kv: ServiceDefinition): ServiceDefinition {
  const range = kv['Range'];
  const put = kv['Put'];
  assert(range !== undefined && put !== undefined, 'the KV service has Range and Put');
  return {
    ...kv,
    Range: { ...range, requestDeserialize: decodeRangeRequest, responseSerialize: encodeRangeResponse },
    Put: { ...put, requestDeserialize: decodePutRequest, responseSerialize: encodePutResponse },
  };
}
