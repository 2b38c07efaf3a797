// The hostile requests, drawn from a seed. Writes only ever target the sandbox prefix /fuzz/
// (or try to escape it: dot segments, encodings, the root prefix without its confirmation), so a
// request that lands on the known state under /known/ is a finding, not the fuzzer's own doing.
// Nothing here can legitimately delete outside /fuzz/, add or remove a member, or wait long.
import type { Draw } from './random.js';

/** Bytes to write, after a pause (a slow client); `repeat` sends the same bytes again. */
export interface Piece {
  readonly bytes: Buffer;
  readonly delayMs: number;
  readonly repeat?: number;
}

export type FuzzCase =
  | {
      readonly channel: 'http';
      readonly label: string;
      readonly pieces: readonly Piece[];
      /** answer: a documented answer must come; answer-or-close: or a close with nothing said. */
      readonly expect: 'answer' | 'answer-or-close';
      /** Half-close after the last piece (a client that stops sending). */
      readonly endAfter: boolean;
      /** A WebSocket handshake: 101 is a documented answer too. */
      readonly upgrade: boolean;
      readonly head: boolean;
    }
  | { readonly channel: 'stream'; readonly label: string; readonly frames: readonly (string | Buffer)[] }
  | { readonly channel: 'grpc'; readonly label: string; readonly service: GrpcServiceName; readonly method: string; readonly request: unknown };

export type GrpcServiceName = 'KV' | 'Lease' | 'Lock' | 'Election' | 'Cluster' | 'Maintenance';

export interface CaseContext {
  readonly knownKeys: readonly string[];
  readonly valueBytesMax: number;
  readonly requestBytesMax: number;
  readonly grpc: boolean;
}

const segments = [
  'a', 'k1', 'x.y', '.hidden', '..x', '...', '..', '.', '%2e%2e', '%2E.', '.%2e', '%2e', '%2F', '%2f..', '%00', '%ZZ', '%',
  '%e2%82', '%C3%A9', '%FF', '\\', '..\\..', '', '~', '*', ':', '@', 'a%20b', '..%2f', '%2e%2e%5c', ';x', '%3F', '%23', 'known',
];
const dotEscapes = ['..', '%2e%2e', '%2E%2E', '.%2e', '%2e.', '..%2F..', '.'];

function hostileSegment(d: Draw): string {
  if (d.chance(0.05)) return 'x'.repeat(d.int(1000, 5000));
  if (d.chance(0.1)) return encodeURIComponent(d.text(d.int(1, 12)));
  return d.pick(segments);
}

/** A /v1/kv target inside the sandbox, or one that tries to leave it. */
function kvTarget(d: Draw, context: CaseContext): string {
  const roll = d.int(0, 9);
  if (roll === 0) {
    const known = d.pick(context.knownKeys);
    return `/v1/kv/fuzz/${d.pick(dotEscapes)}${known}`;
  }
  if (roll === 1) return `/v1/kv/fuzz/x/${d.pick(dotEscapes)}/${d.pick(dotEscapes)}/v1/kv${d.pick(context.knownKeys)}`;
  if (roll === 2) return d.pick(['/v1/kv', '/v1/kv/', '/v1/kv//', '/v1/kv/fuzz', '/v1/kv/fuzz/']);
  const parts = Array.from({ length: d.int(1, 4) }, () => hostileSegment(d));
  return `/v1/kv/fuzz/${parts.join('/')}`;
}

const queryParts = [
  'prefix=true', 'prefix=yes', 'prefix', 'limit=-1', 'limit=abc', 'limit=99999999999999999999', 'limit=2', 'revision=0', 'revision=-5',
  'revision=1e3', 'revision=999999999', 'consistency=serializable', 'consistency=weird', 'encoding=base64', 'encoding=hex', 'keysOnly=true',
  'countOnly=1', 'unknown=1', 'confirmDeleteAll=false', 'confirmDeleteAll=maybe', 'prefix=true&prefix=false', '%zz=1', 'a=%zz', '&&', '=',
];

function query(d: Draw): string {
  const parts = d.some(queryParts, 3);
  // minRevision far ahead waits the node's whole request timeout: rare.
  if (d.chance(0.02)) parts.push('minRevision=999999999');
  return parts.length === 0 ? '' : `?${parts.join('&')}`;
}

function hostileNumber(d: Draw): string {
  return d.pick(['0', '1', '-1', 'abc', '1.5', '99999999999999999999', ' 7', '0x10', '', '1e3', String(d.int(2, 1000))]);
}

function headers(d: Draw): [string, string][] {
  const out: [string, string][] = [];
  if (d.chance(0.2)) out.push(['If-Version', hostileNumber(d)]);
  if (d.chance(0.2)) out.push(['If-Revision', hostileNumber(d)]);
  if (d.chance(0.15)) out.push(['Lease-ID', d.pick(['0', '-1', 'x', '123456789012', hostileNumber(d)])]);
  if (d.chance(0.25)) out.push(['Request-ID', d.pick([`rid-${d.int(1, 20)}`, '', 'r'.repeat(200), `rid-${d.int(1, 5)}`])]);
  if (d.chance(0.05)) out.push(['Request-ID', 'twice']);
  if (d.chance(0.1)) out.push(['Content-Type', d.pick(['application/json', 'text/plain', 'multipart/form-data; boundary=x', '\u00ff', ''])]);
  if (d.chance(0.04)) out.push(['Expect', d.pick(['100-continue', 'garbage'])]);
  if (d.chance(0.05)) out.push([d.pick(['X-Junk', 'X-\u00e9', 'Baton-Cell']), d.text(d.int(0, 40))]);
  if (d.chance(0.01)) out.push(['X-Huge', 'h'.repeat(d.int(17_000, 40_000))]);
  return out;
}

function hostileKeyString(d: Draw, context: CaseContext): unknown {
  return d.pick<unknown>([
    `/fuzz/${hostileSegment(d)}`, `/fuzz/${d.pick(dotEscapes)}${d.pick(context.knownKeys)}`, `/fuzz/a/../..${d.pick(context.knownKeys)}`,
    'fuzz/no-slash', '', '/fuzz/' + 'k'.repeat(5000), 5, null, ['/fuzz/a'], { key: '/fuzz/a' }, '/fuzz/\ud800', '/fuzz/./x', '/fuzz/a',
  ]);
}

function hostileJson(d: Draw, depth = 0): unknown {
  const roll = d.int(0, depth > 2 ? 5 : 8);
  switch (roll) {
    case 0: return null;
    case 1: return d.pick([0, -1, 1.5, 1e308, -0, 2 ** 53 + 1, 42]);
    case 2: return d.pick(['', 'x', '\u0000', 'é', 'z'.repeat(300)]);
    case 3: return d.chance(0.5);
    case 4: return hostileSegment(d);
    case 5: return `/fuzz/${hostileSegment(d)}`;
    case 6: return Array.from({ length: d.int(0, 4) }, () => hostileJson(d, depth + 1));
    default: {
      const out: Record<string, unknown> = {};
      for (const name of d.some(['key', 'value', 'prefix', 'lease', 'ttl', 'ids', 'compare', 'success', 'failure', 'put', 'get', 'delete', 'op', 'target', '__proto__', 'constructor'], 4)) {
        out[name] = hostileJson(d, depth + 1);
      }
      return out;
    }
  }
}

function txnBody(d: Draw, context: CaseContext): unknown {
  const op = (): unknown => {
    const kind = d.pick(['put', 'get', 'delete', 'bogus']);
    const body: Record<string, unknown> = { key: hostileKeyString(d, context) };
    if (kind === 'put') body['value'] = d.pick<unknown>(['v', '', 5, null, 'w'.repeat(d.int(0, 2000))]);
    if (kind !== 'put' && d.chance(0.5)) body['prefix'] = d.pick<unknown>([true, false, 'yes', 1]);
    if (kind === 'delete' && d.chance(0.15)) {
      body['key'] = '/';
      body['prefix'] = true; // the root prefix, unconfirmed: must be refused
    }
    if (d.chance(0.1)) body['lease'] = d.pick<unknown>([0, -1, 'x', 123456789012]);
    return { [kind]: body };
  };
  const compare = (): unknown => ({
    key: hostileKeyString(d, context),
    target: d.pick(['version', 'createRevision', 'modRevision', 'value', 'lease', 'bogus', 5]),
    op: d.pick(['==', '!=', '<', '>', '=>', '']),
    value: d.pick<unknown>([0, 1, -1, 'v', null, 1.5]),
  });
  const list = <T>(make: () => T): T[] => Array.from({ length: d.chance(0.03) ? d.int(120, 200) : d.int(0, 4) }, make);
  const out: Record<string, unknown> = { compare: list(compare), success: list(op), failure: list(op) };
  if (d.chance(0.1)) out['extra'] = 1;
  if (d.chance(0.1)) out['success'] = hostileJson(d);
  return out;
}

/** A JSON request body: structured garbage or broken text. */
function jsonText(d: Draw, value: () => unknown): Buffer {
  const roll = d.int(0, 9);
  if (roll === 0) return Buffer.from(d.pick(['{', '{"a":', '[1,', '"unterminated', 'nul', '{"a":1}}', '\u00ff\u00fe', '']));
  if (roll === 1) return Buffer.from('['.repeat(d.int(1000, 100_000)));
  if (roll === 2) return d.bytes(d.int(1, 300));
  return Buffer.from(JSON.stringify(value()));
}

const invalidLease = (d: Draw): unknown => d.pick<unknown>([0, -1, 'x', null, 1.5, 123456789012 + d.int(0, 1000), 2 ** 60]);
const lockName = (d: Draw): string => d.pick(['fuzz-lock', 'a', '..', '%2e%2e', '', 'x'.repeat(300), '%00', 'a/b', '\u00e9']);

/** A method, target and body for one endpoint (never a member change, never a long wait). */
function endpointRequest(d: Draw, context: CaseContext): { method: string; target: string; body: Buffer | null } {
  const roll = d.int(0, 19);
  if (roll < 7) {
    const method = d.pick(['PUT', 'PUT', 'GET', 'GET', 'DELETE', 'POST', 'PATCH', 'OPTIONS', 'HEAD']);
    const body = method === 'PUT' ? kvValue(d, context) : d.chance(0.1) ? d.bytes(d.int(1, 100)) : null;
    return { method, target: kvTarget(d, context) + query(d), body };
  }
  if (roll < 10) return { method: d.pick(['POST', 'POST', 'GET', 'PUT']), target: `/v1/txn${d.chance(0.2) ? '?encoding=base64' : query(d)}`, body: jsonText(d, () => txnBody(d, context)) };
  if (roll === 10) return { method: 'POST', target: '/v1/leases', body: jsonText(d, () => ({ ttl: d.pick<unknown>([10, -1, 0, 'x', 1e20, 3.5, null, 4, 5]) })) };
  if (roll === 11) return { method: 'POST', target: '/v1/leases/keepalive', body: jsonText(d, () => ({ ids: d.pick<unknown>([[1, 2], [-1], 'x', [invalidLease(d)], Array.from({ length: 2000 }, (_, i) => i)]) })) };
  if (roll === 12) return { method: d.pick(['GET', 'DELETE']), target: `/v1/leases/${d.pick(['abc', '-1', '0', '99999999999999999999', '123456789012', '%2e%2e', '1.5'])}`, body: null };
  if (roll === 13) {
    const action = d.pick(['acquire', 'release', '', 'bogus']);
    const body = jsonText(d, () => ({ lease: invalidLease(d), owner: hostileJson(d), waitMs: d.pick<unknown>([0, 100, -1, 'x', 1.5]), key: hostileKeyString(d, context) }));
    return { method: d.pick(['POST', 'GET']), target: `/v1/locks/${lockName(d)}${action === '' ? '' : `/${action}`}`, body };
  }
  if (roll === 14) {
    const action = d.pick(['campaign', 'proclaim', 'resign', 'leader', 'bogus']);
    const body = jsonText(d, () => ({ lease: invalidLease(d), value: hostileJson(d), key: hostileKeyString(d, context) }));
    return { method: d.pick(['POST', 'GET']), target: `/v1/elections/${lockName(d)}/${action}`, body };
  }
  if (roll === 15) return { method: 'POST', target: '/v1/fencing/check', body: jsonText(d, () => ({ lock: hostileJson(d), token: hostileJson(d) })) };
  if (roll === 16) {
    const params = d.some(['key=/fuzz/', 'key=/fuzz/../known/', 'key=%2Ffuzz%2F..%2Fx', 'prefix=true', 'startRevision=-1', 'startRevision=abc', 'filter=bogus', 'progressMs=-5', 'prevKv=maybe', 'x=1'], 3);
    return { method: 'GET', target: `/v1/watch${params.length > 0 ? `?${params.join('&')}` : ''}`, body: null };
  }
  if (roll === 17) return { method: 'POST', target: '/v1/maintenance/compact', body: jsonText(d, () => ({ revision: d.pick<unknown>([-1, 0, 'x', 1e15, 1.5, null]) })) };
  if (roll === 18) {
    // Member routes with bodies and ids that can never name a real member or a reachable peer.
    return d.chance(0.5)
      ? { method: 'POST', target: '/v1/cluster/members', body: jsonText(d, () => d.pick<unknown>([{}, { peerUrl: 5 }, { name: [] }, [], 'x', { peerUrl: 'not a url' }])) }
      : { method: d.pick(['DELETE', 'POST']), target: `/v1/cluster/members/${d.pick(['zzz', '-1', '%2e%2e', '1.5', 'x'.repeat(100)])}${d.chance(0.5) ? '/promote' : ''}`, body: null };
  }
  const target = d.pick(['/healthz', '/readyz', '/metrics', '/v1/cluster/status', '/v1/cluster/members', '/', '/v2/keys', '/v1', '*', 'http://127.0.0.1/v1/kv/fuzz/a', '/v1/kv/../healthz', '//v1/kv/a', '/v1/stream']);
  return { method: d.pick(['GET', 'GET', 'POST', 'DELETE', 'PUT']), target, body: d.chance(0.2) ? d.bytes(20) : null };
}

function kvValue(d: Draw, context: CaseContext): Buffer {
  if (d.chance(0.05)) return Buffer.alloc(context.valueBytesMax + 1, 0x76);
  return d.bytes(d.int(0, 2048));
}

/** One HTTP request as raw bytes: framing, slowness and lies are part of the draw. */
export function httpCase(d: Draw, context: CaseContext, label: string): FuzzCase {
  const request = endpointRequest(d, context);
  const method = d.chance(0.01) ? d.pick(['get', 'FOO', 'G ET', 'CONNECT']) : request.method;
  const version = d.chance(0.02) ? d.pick(['HTTP/1.0', 'HTTP/2.0', 'HTTP/1.1x', '']) : 'HTTP/1.1';
  const lines = [`${method} ${request.target} ${version}`.trimEnd()];
  if (!d.chance(0.02)) lines.push('Host: 127.0.0.1');
  for (const [name, value] of headers(d)) lines.push(`${name}: ${value}`);
  lines.push('Connection: close');
  let expect: 'answer' | 'answer-or-close' = 'answer';
  let endAfter = false;
  const body = request.body;
  const framing = body === null ? 'none' : d.pick(['length', 'length', 'length', 'chunked', 'lie-long', 'lie-short', 'huge-chunked']);
  const pieces: Piece[] = [];
  const headBytes = (): Buffer => Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
  if (framing === 'none' || body === null) {
    pieces.push({ bytes: headBytes(), delayMs: 0 });
  } else if (framing === 'length') {
    lines.push(`Content-Length: ${body.length}`);
    pieces.push({ bytes: Buffer.concat([headBytes(), body]), delayMs: 0 });
  } else if (framing === 'chunked') {
    lines.push('Transfer-Encoding: chunked');
    const chunk = Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n')]);
    const last = body.length === 0 ? Buffer.from('\r\n') : Buffer.from('0\r\n\r\n');
    pieces.push({ bytes: Buffer.concat([headBytes(), body.length === 0 ? Buffer.alloc(0) : chunk, last]), delayMs: 0 });
  } else if (framing === 'lie-long') {
    // Declares more than it sends, then stops sending: no answer is owed, but no hang either.
    lines.push(`Content-Length: ${body.length + d.int(1, 100_000)}`);
    pieces.push({ bytes: Buffer.concat([headBytes(), body]), delayMs: 0 });
    expect = 'answer-or-close';
    endAfter = true;
  } else if (framing === 'lie-short') {
    lines.push(`Content-Length: ${Math.max(0, body.length - d.int(1, 10))}`);
    pieces.push({ bytes: Buffer.concat([headBytes(), body]), delayMs: 0 });
  } else {
    // 1-10 MiB, chunked, over every body limit: 413 too_large, then the connection closes.
    lines.push('Transfer-Encoding: chunked');
    const size = 64 * 1024;
    const chunk = Buffer.concat([Buffer.from(`${size.toString(16)}\r\n`), Buffer.alloc(size, 0x7a), Buffer.from('\r\n')]);
    pieces.push({ bytes: headBytes(), delayMs: 0 }, { bytes: chunk, delayMs: 0, repeat: d.int(16, 160) }, { bytes: Buffer.from('0\r\n\r\n'), delayMs: 0 });
  }
  if (d.chance(0.05) && pieces.length === 1) {
    // A slow client: the same bytes in small pieces with pauses (at most ~1 s in all).
    const all = (pieces.pop() as Piece).bytes;
    const count = d.int(3, 20);
    const step = Math.ceil(all.length / count);
    for (let at = 0; at < all.length; at += step) pieces.push({ bytes: all.subarray(at, at + step), delayMs: d.int(1, 50) });
  }
  if (d.chance(0.03)) {
    // A client that gives up mid-request.
    const all = Buffer.concat(pieces.filter((p) => p.repeat === undefined).map((p) => p.bytes));
    pieces.length = 0;
    pieces.push({ bytes: all.subarray(0, d.int(0, all.length)), delayMs: 0 });
    expect = 'answer-or-close';
    endAfter = true;
  }
  return { channel: 'http', label, pieces, expect, endAfter, upgrade: false, head: method === 'HEAD' };
}

/** A broken (or, by chance, valid) WebSocket handshake on raw bytes. */
export function handshakeCase(d: Draw, label: string): FuzzCase {
  const lines = [`${d.pick(['GET', 'GET', 'POST'])} ${d.pick(['/v1/stream', '/v1/stream', '/v1/stream?x=1', '/v1/./stream', '/v1/kv/fuzz/a', '/nope'])} HTTP/1.1`, 'Host: 127.0.0.1'];
  lines.push(`Connection: ${d.pick(['Upgrade', 'upgrade, keep-alive', 'close'])}`);
  lines.push(`Upgrade: ${d.pick(['websocket', 'WebSocket', 'h2c', 'websocket, h2c', '', 'x'])}`);
  if (d.chance(0.7)) lines.push(`Sec-WebSocket-Key: ${d.pick(['dGhlIHNhbXBsZSBub25jZQ==', 'short', '', '!!!!!!!!!!!!!!!!!!!!!!==', d.bytes(16).toString('base64')])}`);
  if (d.chance(0.7)) lines.push(`Sec-WebSocket-Version: ${d.pick(['13', '8', '12', 'x', ''])}`);
  if (d.chance(0.2)) lines.push(`Sec-WebSocket-Protocol: ${d.pick(['a b', 'chat', ',,', ''])}`);
  if (d.chance(0.2)) lines.push('HTTP2-Settings: AAMAAABkAAQAAP__');
  const pieces = [{ bytes: Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), delayMs: 0 }];
  return { channel: 'http', label, pieces, expect: 'answer', endAfter: false, upgrade: true, head: false };
}

/** Frames for one WebSocket session: garbage text and binary, and frames with hostile fields. */
export function streamCase(d: Draw, context: CaseContext, label: string): FuzzCase {
  const frames: (string | Buffer)[] = [];
  for (let i = d.int(1, 5); i > 0; i--) {
    const roll = d.int(0, 9);
    if (roll === 0) frames.push(d.pick(['', 'not json', '{', '[]', 'null', '123', '"x"', '{"id":1}', '{"type":"put"}', '{"id":{},"type":"get"}']));
    else if (roll === 1) frames.push(d.bytes(d.int(1, 64)));
    else if (roll === 2 && d.chance(0.1)) frames.push(`{"id":1,"type":"put","key":"/fuzz/huge","value":"${'h'.repeat(context.requestBytesMax + 100_000)}"}`);
    else {
      const frame: Record<string, unknown> = {
        id: d.pick<unknown>([d.int(1, 1000), `s-${d.int(1, 100)}`, -1, 1.5, null]),
        type: d.pick(['put', 'get', 'delete', 'txn', 'watch', 'cancel', 'keepalive', 'acquire', 'release', 'bogus', '']),
        key: hostileKeyString(d, context),
      };
      for (const name of d.some(['value', 'prefix', 'lease', 'ifVersion', 'requestId', 'encoding', 'startRevision', 'ids', 'success', 'extra'], 3)) {
        frame[name] = hostileJson(d);
      }
      if (frame['type'] === 'delete' && d.chance(0.2)) Object.assign(frame, { key: '/', prefix: true });
      frames.push(JSON.stringify(frame));
    }
  }
  return { channel: 'stream', label, frames };
}

/** One unary etcd call with hostile fields, or garbage bytes as its message. */
export function grpcCase(d: Draw, context: CaseContext, label: string): FuzzCase {
  const etcdKey = (): unknown => d.pick<unknown>([
    Buffer.from(`fuzz/${hostileSegment(d)}`), Buffer.from(`fuzz/../${d.pick(context.knownKeys).slice(1)}`), Buffer.from('..'), Buffer.from('.'),
    Buffer.from([0xff, 0xfe]), Buffer.alloc(0), Buffer.from(`fuzz/${'k'.repeat(d.int(4000, 5000))}`), Buffer.from('fuzz/a/./b'), Buffer.from('fuzz/a'),
  ]);
  // Range ends that can never reach past the sandbox: empty, inside it, or below its keys.
  const safeEnd = (): unknown => d.pick<unknown>([Buffer.alloc(0), Buffer.from('fuzz0'), Buffer.from(`fuzz/${d.text(3)}`), Buffer.from('a')]);
  const int64 = (): unknown => d.pick<unknown>(['0', '-1', '1', '9223372036854775807', '-9223372036854775808', String(d.int(1, 1000))]);
  if (d.chance(0.1)) {
    const [service, method] = d.pick<[GrpcServiceName, string]>([['KV', 'Range'], ['KV', 'Put'], ['KV', 'Txn'], ['Lease', 'LeaseGrant'], ['KV', 'NoSuchMethod']]);
    return { channel: 'grpc', label, service, method, request: d.bytes(d.int(0, 200)) };
  }
  const roll = d.int(0, 8);
  if (roll <= 1) return { channel: 'grpc', label, service: 'KV', method: 'Range', request: { key: etcdKey(), range_end: d.chance(0.5) ? safeEnd() : d.pick([Buffer.from([0]), Buffer.from([0xff])]), limit: int64(), revision: int64(), sort_order: d.int(0, 5), sort_target: d.int(0, 6), serializable: d.chance(0.5), keys_only: d.chance(0.3), count_only: d.chance(0.2), min_mod_revision: int64(), max_create_revision: int64() } };
  if (roll === 2) return { channel: 'grpc', label, service: 'KV', method: 'Put', request: { key: etcdKey(), value: d.bytes(d.chance(0.05) ? context.valueBytesMax + 1 : d.int(0, 100)), lease: int64(), prev_kv: d.chance(0.5), ignore_value: d.chance(0.2), ignore_lease: d.chance(0.2) } };
  if (roll === 3) return { channel: 'grpc', label, service: 'KV', method: 'DeleteRange', request: { key: etcdKey(), range_end: safeEnd(), prev_kv: d.chance(0.5) } };
  if (roll === 4) {
    const op = (): unknown => d.pick<unknown>([
      { request_put: { key: etcdKey(), value: Buffer.from('v') } }, { request_range: { key: etcdKey(), range_end: safeEnd() } },
      { request_delete_range: { key: etcdKey(), range_end: safeEnd() } }, { request_txn: {} }, {},
    ]);
    const compare = (): unknown => ({ key: etcdKey(), range_end: d.chance(0.2) ? safeEnd() : Buffer.alloc(0), result: d.int(0, 5), target: d.int(0, 6), version: int64() });
    const count = d.chance(0.05) ? d.int(100, 200) : d.int(0, 4);
    return { channel: 'grpc', label, service: 'KV', method: 'Txn', request: { compare: Array.from({ length: d.int(0, 3) }, compare), success: Array.from({ length: count }, op), failure: Array.from({ length: d.int(0, 2) }, op) } };
  }
  if (roll === 5) return { channel: 'grpc', label, service: 'KV', method: 'Compact', request: { revision: int64(), physical: d.chance(0.5) } };
  if (roll === 6) return { channel: 'grpc', label, service: 'Lease', method: d.pick(['LeaseGrant', 'LeaseRevoke', 'LeaseTimeToLive']), request: { TTL: int64(), ID: d.pick<unknown>(['0', '-1', '777000000001', int64()]), keys: d.chance(0.5) } };
  // Leases no case ever grants (grants use other ids): a Lock fails at once, it never queues.
  if (roll === 7) return { channel: 'grpc', label, service: 'Lock', method: d.pick(['Lock', 'Unlock']), request: { name: etcdKey(), key: etcdKey(), lease: d.pick(['0', '-1', '123456789012']) } };
  const [service, method] = d.pick<[GrpcServiceName, string]>([['Cluster', 'MemberList'], ['Maintenance', 'Status'], ['Maintenance', 'Alarm'], ['Maintenance', 'Hash']]);
  return { channel: 'grpc', label, service, method, request: {} };
}

/** The case at `index` of a run: the channel is part of the draw. */
export function drawCase(d: Draw, context: CaseContext, index: number): FuzzCase {
  const roll = d.int(0, 99);
  if (roll < 60) return httpCase(d, context, `#${index} http`);
  if (roll < 68) return handshakeCase(d, `#${index} handshake`);
  if (roll < 84 || !context.grpc) return streamCase(d, context, `#${index} stream`);
  return grpcCase(d, context, `#${index} grpc`);
}
