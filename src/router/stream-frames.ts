// The router's stream relay (stream-relay.ts): what a frame is. Parsing and checking a client
// frame as the node does, the keys it names (for routing), the head of a node's answer, and the
// answers to an upgrade that is refused.
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { BatonError, httpStatusOf } from '../base/errors.js';
import { spanOf, type KeySpan } from '../base/namespaces.js';
import { electionKeyPrefix, lockKeyPrefix } from '../base/queue-prefixes.js';
import { txnSpansOf } from './route-keys.js';

// A client frame is checked as the node checks it.
export { parseFrame, salvageId } from '../base/stream-frame.js';

/** How long a client told to close (a refused frame, the router stopping) keeps its socket. */
export const closeGraceMs = 2_000;

export type Id = string | number;

/** Frame types sent to the cell owning their keys, and what each one is on the relay. */
export const keyedTypes = new Map<string, 'request' | 'watch' | 'observe'>([
  ['put', 'request'], ['get', 'request'], ['delete', 'request'], ['txn', 'request'], ['keepalive', 'request'],
  ['lockAcquire', 'request'], ['lockRelease', 'request'], ['lockState', 'request'], ['fencingCheck', 'request'],
  ['campaign', 'request'], ['proclaim', 'request'], ['resign', 'request'], ['leader', 'request'],
  ['watch', 'watch'], ['observe', 'observe'],
]);
/** Frame types naming an open watch or observation by their id (no other field). */
export const controlTypes = new Map<string, 'watch' | 'observe'>([['cancel', 'watch'], ['progress', 'watch'], ['observeCancel', 'observe']]);
export const knownTypes = [...keyedTypes.keys(), ...controlTypes.keys()];

/** `{"id":N,"type":"T"`: the head of every frame a node writes. */
export const framePrefix = /^\{"id":(\d+),"type":"([A-Za-z]+)"/;
/** After the head of an events frame: its revision (the batch's JSON starts with it). */
export const eventsRevision = /^,"type":"events","revision":(\d+)/;

export function refusalOf(status: number, body: string, retryAfter: string | string[] | undefined): Record<string, unknown> {
  let error: Record<string, unknown> | undefined;
  try {
    error = (JSON.parse(body) as { error?: Record<string, unknown> }).error;
  } catch {
    // not JSON: described below
  }
  const refusal: Record<string, unknown> = error !== undefined && typeof error['code'] === 'string'
    ? { ...error }
    : { code: status === 429 ? 'overloaded' : 'unavailable', message: `the cell refused the router's stream (HTTP ${status})` };
  const seconds = Number(typeof retryAfter === 'string' ? retryAfter : NaN);
  if (refusal['retryAfterSeconds'] === undefined && Number.isFinite(seconds)) refusal['retryAfterSeconds'] = seconds;
  return refusal;
}

/** The keys a frame names, by the rules of routeTarget (route-keys.ts) for its HTTP twin. */
export function spansOf(type: string, fields: Readonly<Record<string, unknown>>, namespace: string): KeySpan[] {
  const base64 = fields['encoding'] === 'base64';
  // A frame without a readable key goes to the root's cell, which refuses it as a node does.
  const keyOf = (value: unknown): string => (typeof value !== 'string' ? '/' : base64 ? Buffer.from(value, 'base64').toString('utf8') : value);
  const nameOf = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : null);
  switch (type) {
    case 'put':
    case 'get':
    case 'delete':
    case 'watch':
      return [spanOf({ key: keyOf(fields['key']), prefix: fields['prefix'] === true })];
    case 'txn':
      return txnSpansOf(fields, base64);
    case 'keepalive':
      return [{ start: namespace, end: null }];
    case 'lockAcquire':
    case 'lockRelease':
    case 'lockState':
    case 'fencingCheck': {
      const name = nameOf(fields[type === 'fencingCheck' ? 'lock' : 'name']);
      return [name === null ? { start: '/', end: null } : spanOf({ key: lockKeyPrefix(name), prefix: true })];
    }
    default: {
      // campaign, proclaim, resign, leader, observe
      const name = nameOf(fields['name']);
      return [name === null ? { start: '/', end: null } : spanOf({ key: electionKeyPrefix(name), prefix: true })];
    }
  }
}

/** A refused upgrade: one JSON error answer, then the connection closes. */
export function refuse(socket: Duplex, error: BatonError, epoch: number): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const status = httpStatusOf(error.code) ?? 500;
  const body = JSON.stringify({ error: { code: error.code, message: error.message, ...error.details } });
  const head = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}`,
    'content-type: application/json',
    `content-length: ${Buffer.byteLength(body)}`,
    `baton-routing-epoch: ${epoch}`,
    'connection: close',
  ];
  if (error.retryable) head.push('retry-after: 1');
  socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
  setTimeout(() => socket.destroy(), closeGraceMs).unref();
}
