// Validation at the HTTP boundary: keys from URLs, query parameters, headers and JSON bodies
// become typed requests, or a 400/413 that says exactly what is wrong. Nothing unvalidated
// reaches the cell.
import type { IncomingHttpHeaders } from 'node:http';
import { InvalidArgumentError, TooLargeError } from '../../base/errors.js';
import { isDotSegment, keyNameProblem } from '../../base/key-name.js';
import type { Compare, CompareOp, CompareTarget, TxnOp, TxnRequest } from '../types.js';
import type { ApiLimits } from './limits.js';

export type Encoding = 'utf8' | 'base64';

/**
 * The path and query of a request target exactly as the client sent them (no WHATWG URL parse:
 * it resolves `.`/`..` segments, `%2E%2E` too, and turns `\` into `/`, so one key would name
 * another). A target with a dot segment anywhere in its path, a fragment, or no leading `/` is
 * refused with 400: nothing is resolved, and nothing surprising is routed.
 */
export function rawTarget(target: string): { path: string; search: string } {
  if (!target.startsWith('/')) throw new InvalidArgumentError('a request target must begin with /');
  if (target.includes('#')) throw new InvalidArgumentError('a request target has no fragment (percent-encode # as %23)');
  const question = target.indexOf('?');
  const path = question < 0 ? target : target.slice(0, question);
  const search = question < 0 ? '' : target.slice(question);
  for (const segment of path.split('/')) {
    if (isDotSegment(segment)) {
      throw new InvalidArgumentError(`a URL path must not have a "${segment}" segment (keys are never resolved like paths)`, {
        segment,
      });
    }
  }
  return { path, search };
}

/** `/v1/kv/locks/report-42` → `/locks/report-42`, percent-decoded per segment (from the raw path). */
export function keyFromPath(path: string, limits: ApiLimits): string {
  const rest = path.slice('/v1/kv'.length);
  let key: string;
  try {
    key = rest.split('/').map(decodeURIComponent).join('/');
  } catch {
    throw new InvalidArgumentError(`malformed percent-encoding in key "${rest}"`);
  }
  return validKey(key === '' ? '/' : key, limits);
}

export function validKey(key: unknown, limits: ApiLimits, what = 'key'): string {
  if (typeof key !== 'string') throw new InvalidArgumentError(`${what} must be a string`);
  const problem = keyNameProblem(key);
  if (problem !== null) throw new InvalidArgumentError(`${what} "${key.slice(0, 100)}" ${problem}`);
  const bytes = Buffer.byteLength(key);
  if (bytes > limits.keyBytesMax) throw new TooLargeError(what, bytes, limits.keyBytesMax);
  return key;
}

/** The query parameter (and stream/txn field) that confirms a delete of every key of the cell. */
export const deleteAllParameter = 'confirmDeleteAll';

/**
 * A delete of the root prefix removes every key of the cell (locks and elections included) in one
 * revision: it must say so explicitly, as etcdctl needs `--from-key ""`. Else 400 naming the flag.
 */
export function checkDeleteAll(request: { key: string; prefix: boolean; confirmed: boolean }, where: string): void {
  if (request.key !== '/' || !request.prefix || request.confirmed) return;
  throw new InvalidArgumentError(
    `deleting prefix "/" deletes every key of the cell: add ${where} to confirm`,
    { parameter: deleteAllParameter },
  );
}

export function validValue(value: Uint8Array, limits: ApiLimits): Uint8Array {
  if (value.byteLength > limits.valueBytesMax) throw new TooLargeError('value', value.byteLength, limits.valueBytesMax);
  return value;
}

const noParams = new URLSearchParams();

export class Query {
  /** Made on the first lookup: a request without parameters (most writes) costs none. */
  private used: Set<string> | null = null;
  constructor(private readonly params: URLSearchParams) {}

  /** The query of a request target's search part ('' or '?...'); read-only, so '' shares one. */
  static of(search: string): Query {
    return new Query(search === '' ? noParams : new URLSearchParams(search));
  }

  string(name: string): string | undefined {
    (this.used ??= new Set()).add(name);
    return this.params.get(name) ?? undefined;
  }

  /** Every value of a repeated parameter (`?exclude=/a/b/&exclude=/a/c/`), in order. */
  strings(name: string): string[] {
    (this.used ??= new Set()).add(name);
    return this.params.getAll(name);
  }

  flag(name: string): boolean {
    const value = this.string(name);
    if (value === undefined || value === 'false') return false;
    if (value === 'true' || value === '') return true;
    throw new InvalidArgumentError(`query parameter ${name} must be true or false, not "${value}"`);
  }

  integer(name: string, min = 0): number | undefined {
    const value = this.string(name);
    return value === undefined ? undefined : parseInteger(value, `query parameter ${name}`, min);
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    const value = this.string(name);
    if (value === undefined) return fallback;
    if (!(allowed as readonly string[]).includes(value)) {
      throw new InvalidArgumentError(`query parameter ${name} must be one of ${allowed.join(', ')}, not "${value}"`);
    }
    return value as T;
  }

  /** Unknown parameters are refused: a typo must not silently change what a request means. */
  rejectUnknown(): void {
    for (const name of this.params.keys()) {
      if (this.used?.has(name) !== true) throw new InvalidArgumentError(`unknown query parameter "${name}"`);
    }
  }
}

export function parseInteger(text: string, what: string, min = 0): number {
  if (!/^-?\d+$/.test(text.trim())) throw new InvalidArgumentError(`${what} must be an integer, not "${text}"`);
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < min) {
    throw new InvalidArgumentError(`${what} must be an integer >= ${min}, not "${text}"`);
  }
  return value;
}

export function headerInteger(headers: IncomingHttpHeaders, name: string, min: number): number | undefined {
  const value = headers[name];
  if (value === undefined) return undefined;
  if (Array.isArray(value)) throw new InvalidArgumentError(`header ${name} given more than once`);
  return parseInteger(value, `header ${name}`, min);
}

export function requestId(headers: IncomingHttpHeaders): string | undefined {
  const value = headers['request-id'];
  if (value === undefined) return undefined;
  if (Array.isArray(value)) throw new InvalidArgumentError('header Request-ID given more than once');
  const bytes = Buffer.byteLength(value);
  if (bytes === 0 || bytes > 128) throw new InvalidArgumentError('header Request-ID must be 1 to 128 bytes');
  return value;
}

export function decodeText(value: unknown, encoding: Encoding, what: string): Uint8Array {
  if (typeof value !== 'string') throw new InvalidArgumentError(`${what} must be a string`);
  if (encoding === 'utf8') return Buffer.from(value, 'utf8');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(value)) throw new InvalidArgumentError(`${what} is not valid base64`);
  return Buffer.from(value, 'base64');
}

export function decodeKey(value: unknown, encoding: Encoding, limits: ApiLimits, what = 'key'): string {
  const text = encoding === 'utf8' ? value : Buffer.from(decodeText(value, encoding, what)).toString('utf8');
  return validKey(text, limits, what);
}

const targets: readonly CompareTarget[] = ['version', 'createRevision', 'modRevision', 'value', 'lease'];
const ops: readonly CompareOp[] = ['==', '!=', '<', '>'];

function object(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidArgumentError(`${what} must be a JSON object`);
  }
  return value as Record<string, unknown>;
}

function list(value: unknown, what: string): unknown[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new InvalidArgumentError(`${what} must be a JSON array`);
  return value;
}

function optionalInteger(value: unknown, what: string, min = 0): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
    throw new InvalidArgumentError(`${what} must be an integer >= ${min}`);
  }
  return value;
}

function optionalBoolean(value: unknown, what: string): boolean | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'boolean') throw new InvalidArgumentError(`${what} must be true or false`);
  return value;
}

export function parseTxn(body: unknown, encoding: Encoding, limits: ApiLimits): TxnRequest {
  const root = object(body, 'the transaction');
  for (const field of Object.keys(root)) {
    if (field !== 'compare' && field !== 'success' && field !== 'failure') {
      throw new InvalidArgumentError(`unknown transaction field "${field}"`);
    }
  }
  const compareItems = list(root['compare'], 'compare');
  const successItems = list(root['success'], 'success');
  const failureItems = list(root['failure'], 'failure');
  const count = compareItems.length + successItems.length + failureItems.length;
  if (count > limits.txnOpsMax) {
    throw new TooLargeError('transaction operations and compares', count, limits.txnOpsMax, 'too_many_operations');
  }
  const compare = compareItems.map((item, i) => parseCompare(item, `compare[${i}]`, encoding, limits));
  const success = successItems.map((item, i) => parseTxnOp(item, `success[${i}]`, encoding, limits));
  const failure = failureItems.map((item, i) => parseTxnOp(item, `failure[${i}]`, encoding, limits));
  return { compare, success, failure };
}

function parseCompare(item: unknown, what: string, encoding: Encoding, limits: ApiLimits): Compare {
  const o = object(item, what);
  const key = decodeKey(o['key'], encoding, limits, `${what}.key`);
  const target = o['target'];
  if (!targets.includes(target as CompareTarget)) {
    throw new InvalidArgumentError(`${what}.target must be one of ${targets.join(', ')}`);
  }
  const op = o['op'];
  if (!ops.includes(op as CompareOp)) throw new InvalidArgumentError(`${what}.op must be one of ${ops.join(' ')}`);
  const value =
    target === 'value'
      ? validValue(decodeText(o['value'], encoding, `${what}.value`), limits)
      : (optionalInteger(o['value'], `${what}.value`) ?? missing(`${what}.value`));
  return { key, target: target as CompareTarget, op: op as CompareOp, value };
}

function parseTxnOp(item: unknown, what: string, encoding: Encoding, limits: ApiLimits): TxnOp {
  const o = object(item, what);
  const kinds = Object.keys(o);
  if (kinds.length !== 1) throw new InvalidArgumentError(`${what} must have exactly one of put, get, delete`);
  const kind = kinds[0] as string;
  const body = object(o[kind], `${what}.${kind}`);
  const key = decodeKey(body['key'], encoding, limits, `${what}.${kind}.key`);
  if (kind === 'put') {
    const value = validValue(decodeText(body['value'], encoding, `${what}.put.value`), limits);
    const lease = optionalInteger(body['lease'], `${what}.put.lease`);
    return { put: { key, value, ...(lease ? { lease } : {}) } };
  }
  if (kind === 'get') {
    const prefix = optionalBoolean(body['prefix'], `${what}.get.prefix`);
    const limit = optionalInteger(body['limit'], `${what}.get.limit`);
    return { get: { key, ...(prefix !== undefined ? { prefix } : {}), ...(limit !== undefined ? { limit } : {}) } };
  }
  if (kind === 'delete') {
    const prefix = optionalBoolean(body['prefix'], `${what}.delete.prefix`);
    const confirmed = optionalBoolean(body[deleteAllParameter], `${what}.delete.${deleteAllParameter}`) ?? false;
    checkDeleteAll({ key, prefix: prefix === true, confirmed }, `"${deleteAllParameter}": true to ${what}.delete`);
    return { delete: { key, ...(prefix !== undefined ? { prefix } : {}) } };
  }
  throw new InvalidArgumentError(`${what} must be one of put, get, delete, not "${kind}"`);
}

function missing(what: string): never {
  throw new InvalidArgumentError(`${what} is required`);
}
