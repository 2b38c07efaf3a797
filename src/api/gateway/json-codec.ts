// etcd's gateway JSON (grpc-gateway's jsonpb with OrigName): field names as declared in the protos
// (`create_revision`, but `ID`, `TTL`, `dbSize`), lowerCamel names accepted on input as jsonpb
// does, unknown fields ignored (etcd's gateway allows them), bytes as base64, 64-bit integers as
// strings, enums by name, default values omitted. A request is turned into the protobuf bytes the
// facade's own codecs decode, and an answer back from the bytes they encode: the gateway runs the
// very handlers a gRPC call runs, with nothing decoded twice differently.
import protobuf from 'protobufjs';
import { GatewayInputError } from './errors.js';

/** The protobuf encoding of a JSON request body (an object). */
export function requestBytes(type: protobuf.Type, json: unknown): Buffer {
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    throw new GatewayInputError(`a ${type.name} must be a JSON object`);
  }
  let message: protobuf.Message;
  try {
    message = type.fromObject(declaredNames(type, json as Record<string, unknown>));
  } catch (error) {
    // protobufjs names the field and what it expected ("etcdserverpb.PutRequest.lease: integer|Long expected").
    throw new GatewayInputError((error as Error).message);
  }
  return Buffer.from(type.encode(message).finish());
}

const toJsonOptions: protobuf.IConversionOptions = {
  longs: String, enums: String, bytes: String, defaults: false, arrays: false, oneofs: false, json: true,
};

/** The JSON object of an answer the facade encoded as protobuf bytes. */
export function answerJson(type: protobuf.Type, bytes: Uint8Array): Record<string, unknown> {
  return withoutDefaults(type, type.toObject(type.decode(bytes), toJsonOptions));
}

const int64Types = new Set(['int64', 'uint64', 'sint64', 'fixed64', 'sfixed64']);

/**
 * The JSON of an answer straight from the value a handler answered with (what its encoder would
 * write), without encoding and decoding it again: 64-bit integers as strings, bytes as base64,
 * enums by name, defaults left out, messages and oneof members kept. The same rules as
 * answerJson's; the gateway's golden test checks every answer shape. Throws on a shape it does
 * not know (the caller then takes the encoded path).
 */
export function valueJson(type: protobuf.Type, value: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of type.fieldsArray) {
    const raw = value[field.name];
    if (raw === undefined || raw === null) continue;
    if (field.repeated) {
      if (!Array.isArray(raw)) throw new TypeError(`${field.name}: not an array`);
      if (raw.length > 0) out[field.name] = raw.map((item) => fieldJson(field, item));
      continue;
    }
    const json = fieldJson(field, raw);
    const target = field.resolvedType;
    if (!(target instanceof protobuf.Type) && field.partOf === null && isDefault(field, json)) continue;
    out[field.name] = json;
  }
  return out;
}

function fieldJson(field: protobuf.Field, raw: unknown): unknown {
  const target = field.resolvedType;
  if (target instanceof protobuf.Type) {
    if (typeof raw !== 'object' || raw === null) throw new TypeError(`${field.name}: not a message`);
    return valueJson(target, raw as Record<string, unknown>);
  }
  if (target instanceof protobuf.Enum) {
    const name = typeof raw === 'number' ? target.valuesById[raw] : typeof raw === 'string' && raw in target.values ? raw : undefined;
    if (name === undefined) throw new TypeError(`${field.name}: not an enum value`);
    return name;
  }
  if (field.type === 'bytes') {
    if (!(raw instanceof Uint8Array)) throw new TypeError(`${field.name}: not bytes`);
    return Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('base64');
  }
  if (int64Types.has(field.type)) {
    if (typeof raw !== 'number' && typeof raw !== 'string' && typeof raw !== 'bigint' && typeof raw !== 'object') throw new TypeError(`${field.name}: not an integer`);
    return String(raw);
  }
  if (field.type === 'bool') return raw === true;
  if (field.type === 'string') {
    if (typeof raw !== 'string') throw new TypeError(`${field.name}: not a string`);
    return raw;
  }
  if (typeof raw !== 'number') throw new TypeError(`${field.name}: not a number`);
  return raw;
}

/**
 * Drops scalar fields that hold their default value. The facade's encoder writes some zeros
 * explicitly (a watch_id of 0, an empty error), and protobufjs keeps what was on the wire, but
 * jsonpb leaves every default out: a put event has no "type". Oneof members and messages stay.
 */
function withoutDefaults(type: protobuf.Type, object: Record<string, unknown>): Record<string, unknown> {
  for (const field of type.fieldsArray) {
    const value = object[field.name];
    if (value === undefined) continue;
    const target = field.resolvedType;
    if (target instanceof protobuf.Type) {
      if (Array.isArray(value)) for (const item of value) withoutDefaults(target, item as Record<string, unknown>);
      else withoutDefaults(target, value as Record<string, unknown>);
    } else if (!field.repeated && field.partOf === null && isDefault(field, value)) {
      delete object[field.name];
    }
  }
  return object;
}

function isDefault(field: protobuf.Field, value: unknown): boolean {
  if (field.resolvedType instanceof protobuf.Enum) {
    return value === 0 || value === field.resolvedType.valuesById[0];
  }
  return value === 0 || value === '0' || value === '' || value === false;
}

/**
 * Renames lowerCamel keys to the declared field names, recursively, and checks each value's JSON
 * kind as jsonpb would (protobufjs's fromObject skips a number given for bytes, or an unknown
 * enum name, where etcd answers 400). Unknown keys are dropped; null means "not set".
 */
function declaredNames(type: protobuf.Type, json: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(json)) {
    const field = type.fields[key] ?? camelFields(type).get(key);
    if (field === undefined || value === null) continue; // unknown: ignored, as etcd's gateway does
    if (field.repeated) {
      if (!Array.isArray(value)) throw wrongKind(field, 'an array');
      out[field.name] = value.map((item) => single(field, item));
    } else {
      out[field.name] = single(field, value);
    }
  }
  return out;
}

function single(field: protobuf.Field, value: unknown): unknown {
  const target = field.resolvedType;
  if (target instanceof protobuf.Type) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw wrongKind(field, 'an object');
    return declaredNames(target, value as Record<string, unknown>);
  }
  if (target instanceof protobuf.Enum) {
    if (typeof value === 'string' && value in target.values) return value;
    if (typeof value === 'number' && Number.isInteger(value)) return value;
    throw wrongKind(field, `one of ${Object.keys(target.values).join(', ')}`);
  }
  switch (field.type) {
    case 'bytes':
      if (typeof value !== 'string' || !base64.test(value)) throw wrongKind(field, 'base64 text');
      return value;
    case 'string':
      if (typeof value !== 'string') throw wrongKind(field, 'a string');
      return value;
    case 'bool':
      if (typeof value !== 'boolean') throw wrongKind(field, 'true or false');
      return value;
    default: // the integer types: a JSON number, or its digits in a string (64-bit ones as etcd writes them)
      if (typeof value === 'number' ? Number.isInteger(value) : typeof value === 'string' && /^-?\d+$/.test(value)) return value;
      throw wrongKind(field, 'an integer');
  }
}

/** Standard or URL-safe base64, padded or not (Go's json reads standard; etcd's clients send it). */
const base64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

function wrongKind(field: protobuf.Field, expected: string): GatewayInputError {
  return new GatewayInputError(`${field.parent?.name ?? ''}.${field.name}: ${expected} expected`);
}

const camelCache = new WeakMap<protobuf.Type, Map<string, protobuf.Field>>();

function camelFields(type: protobuf.Type): Map<string, protobuf.Field> {
  let names = camelCache.get(type);
  if (names === undefined) {
    names = new Map(type.fieldsArray.map((f) => [f.name.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase()), f]));
    camelCache.set(type, names);
  }
  return names;
}
