// Reading fields of a JSON request body: unknown fields are refused (a typo must not silently
// change what a request means) and each field is checked for its type with a message naming it.
import { InvalidArgumentError, UnavailableError } from '../../base/errors.js';
import { decodeText, type Encoding } from './parse.js';

export type JsonObject = Readonly<Record<string, unknown>>;

export function bodyObject(body: unknown, allowed: readonly string[]): JsonObject {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new InvalidArgumentError('the body must be a JSON object');
  }
  for (const name of Object.keys(body)) {
    if (!allowed.includes(name)) throw new InvalidArgumentError(`unknown field "${name}"`);
  }
  return body as JsonObject;
}

export function integerField(body: JsonObject, name: string, min: number, fallback?: number): number {
  const value = body[name];
  if (value === undefined && fallback !== undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
    throw new InvalidArgumentError(`${name} must be an integer >= ${min}`, { [name]: value ?? null });
  }
  return value;
}

export function stringField(body: JsonObject, name: string, fallback?: string): string {
  const value = body[name];
  if (value === undefined && fallback !== undefined) return fallback;
  if (typeof value !== 'string') throw new InvalidArgumentError(`${name} must be a string`, { [name]: value ?? null });
  return value;
}

/** A bytes field: UTF-8 text, or base64 with ?encoding=base64. */
export function bytesField(body: JsonObject, name: string, encoding: Encoding): Uint8Array {
  return new Uint8Array(decodeText(stringField(body, name), encoding, name));
}

/** One path segment after a route prefix, percent-decoded. */
export function pathSegment(segment: string, what: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new InvalidArgumentError(`the ${what} in the path is not valid percent-encoding`);
  }
}

/** Aborts when the client goes away before its answer is written (a waiting acquire, an SSE). */
export function abandonSignal(res: import('node:http').ServerResponse): AbortSignal {
  const controller = new AbortController();
  res.once('close', () => {
    if (!res.writableEnded) controller.abort(new UnavailableError('the client went away before the answer'));
  });
  return controller.signal;
}
