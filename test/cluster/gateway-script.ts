// One script of etcd JSON-gateway requests, run against a fresh etcd 3.4 to record its answers
// (gateway-record.ts writes test/fixtures/etcd-gateway/goldens.json) and against a fresh Baton
// cell to compare (etcd-gateway.test.ts). Every endpoint group is here: kv, txn, lease (with the
// /v3/kv/lease aliases and the keepalive stream), watch, cluster, maintenance, lock, election,
// /v3beta, /version and /health, and the errors clients branch on.
// Values that differ between any two clusters (ids, revisions, terms, sizes) are masked before
// the comparison; everything else must be JSON-equal, including which fields are present.

export type Vars = Record<string, string>;

export interface Step {
  readonly name: string;
  readonly path: string;
  readonly method?: 'GET' | 'POST';
  readonly body?: string | ((vars: Vars) => string);
  /** Remembers values of the answer for later steps. */
  readonly capture?: (answer: Json, vars: Vars) => void;
  /** A streamed answer: `lines` lines are read (each a {"result":...}), `during` runs after the first. */
  readonly stream?: { readonly lines: number; readonly during?: readonly Step[] };
  /** Further field names whose values differ between clusters, masked in this step only. */
  readonly loose?: readonly string[];
  /** A difference from etcd that Baton keeps on purpose or has not closed yet (docs/etcd-compat.md): masked. */
  readonly differs?: { readonly fields: readonly string[]; readonly why: string };
  /** Compare only the answer's shape: which fields, not their values (and arrays as one item). */
  readonly shape?: true;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

export interface Recorded {
  readonly name: string;
  readonly status: number;
  readonly contentType: string;
  /** The answer parsed as JSON, or its text. */
  readonly body?: Json;
  readonly lines?: readonly Json[];
  readonly during?: readonly Recorded[];
}

const b64 = (text: string): string => Buffer.from(text).toString('base64');
const put = (key: string, value: string, extra = ''): string => `{"key":"${b64(key)}","value":"${b64(value)}"${extra}}`;

export const gatewaySteps: readonly Step[] = [
  { name: 'put', path: '/v3/kv/put', body: put('foo', 'bar') },
  { name: 'put prev_kv', path: '/v3/kv/put', body: put('foo', 'baz', ',"prev_kv":true') },
  { name: 'range one key', path: '/v3/kv/range', body: `{"key":"${b64('foo')}"}` },
  { name: 'put a/1', path: '/v3/kv/put', body: put('a/1', 'x') },
  { name: 'put a/2', path: '/v3/kv/put', body: put('a/2', 'y') },
  { name: 'put a/3', path: '/v3/kv/put', body: put('a/3', 'z') },
  { name: 'range prefix', path: '/v3/kv/range', body: `{"key":"${b64('a/')}","range_end":"${b64('a0')}"}` },
  { name: 'range count_only', path: '/v3/kv/range', body: `{"key":"${b64('a/')}","range_end":"${b64('a0')}","count_only":true}` },
  { name: 'range keys_only limit', path: '/v3/kv/range', body: `{"key":"${b64('a/')}","range_end":"${b64('a0')}","keys_only":true,"limit":2}` },
  { name: 'range sorted by name', path: '/v3/kv/range', body: `{"key":"${b64('a/')}","range_end":"${b64('a0')}","sort_order":"DESCEND","sort_target":"KEY"}` },
  { name: 'range lowerCamel names', path: '/v3/kv/range', body: `{"key":"${b64('a/')}","rangeEnd":"${b64('a0')}","countOnly":true}` },
  { name: 'range unknown field ignored', path: '/v3/kv/range', body: `{"key":"${b64('foo')}","no_such_field":7}` },
  { name: 'range serializable', path: '/v3/kv/range', body: `{"key":"${b64('foo')}","serializable":true}` },
  { name: 'range missing key', path: '/v3/kv/range', body: `{"key":"${b64('nothing')}"}` },
  { name: 'range /v3beta', path: '/v3beta/kv/range', body: `{"key":"${b64('foo')}"}` },
  {
    name: 'txn succeeds',
    path: '/v3/kv/txn',
    body: `{"compare":[{"key":"${b64('foo')}","result":"EQUAL","target":"VALUE","value":"${b64('baz')}"}],`
      + `"success":[{"request_put":{"key":"${b64('foo')}","value":"${b64('qux')}"}},{"request_range":{"key":"${b64('foo')}"}}],`
      + `"failure":[{"request_range":{"key":"${b64('foo')}"}}]}`,
  },
  {
    name: 'txn fails',
    path: '/v3/kv/txn',
    body: `{"compare":[{"key":"${b64('foo')}","result":"GREATER","target":"VERSION","version":"100"}],`
      + `"success":[{"request_delete_range":{"key":"${b64('foo')}"}}],`
      + `"failure":[{"request_range":{"key":"${b64('foo')}"}}]}`,
  },
  { name: 'delete prefix prev_kv', path: '/v3/kv/deleterange', body: `{"key":"${b64('a/')}","range_end":"${b64('a0')}","prev_kv":true}` },
  { name: 'delete missing', path: '/v3/kv/deleterange', body: `{"key":"${b64('a/1')}"}` },
  { name: 'put ignore_value on a missing key', path: '/v3/kv/put', body: `{"key":"${b64('nothing')}","ignore_value":true}` },
  { name: 'range without a key', path: '/v3/kv/range', body: '{}' },
  { name: 'range of a future revision', path: '/v3/kv/range', body: `{"key":"${b64('foo')}","revision":"1000000"}` },
  { name: 'malformed JSON', path: '/v3/kv/range', body: '{"key":', loose: ['error', 'message'] },
  { name: 'a field of the wrong type', path: '/v3/kv/range', body: '{"key":5}', loose: ['error', 'message'] },
  { name: 'a body that is not an object', path: '/v3/kv/range', body: '[]', loose: ['error', 'message'] },
  {
    name: 'lease grant',
    path: '/v3/lease/grant',
    body: '{"TTL":60}',
    capture: (answer, vars) => (vars['lease'] = answer.ID),
  },
  { name: 'put with the lease', path: '/v3/kv/put', body: (v) => put('leased', 'v', `,"lease":"${v['lease']}"`) },
  { name: 'lease timetolive with keys', path: '/v3/lease/timetolive', body: (v) => `{"ID":"${v['lease']}","keys":true}`, loose: ['TTL'] },
  { name: 'lease timetolive (kv alias)', path: '/v3/kv/lease/timetolive', body: (v) => `{"ID":"${v['lease']}"}`, loose: ['TTL'] },
  { name: 'lease leases', path: '/v3/lease/leases', body: '{}' },
  { name: 'lease keepalive stream', path: '/v3/lease/keepalive', body: (v) => `{"ID":"${v['lease']}"}`, stream: { lines: 1 } },
  { name: 'lease revoke', path: '/v3/lease/revoke', body: (v) => `{"ID":"${v['lease']}"}` },
  { name: 'leased key gone', path: '/v3/kv/range', body: `{"key":"${b64('leased')}"}` },
  { name: 'lease timetolive after revoke', path: '/v3/lease/timetolive', body: (v) => `{"ID":"${v['lease']}"}` },
  { name: 'lease revoke again (kv alias)', path: '/v3/kv/lease/revoke', body: (v) => `{"ID":"${v['lease']}"}` },
  { name: 'lease keepalive of a revoked lease', path: '/v3/lease/keepalive', body: (v) => `{"ID":"${v['lease']}"}`, stream: { lines: 1 } },
  {
    name: 'watch a key',
    path: '/v3/watch',
    body: `{"create_request":{"key":"${b64('w')}","prev_kv":true}}`,
    stream: {
      lines: 3,
      during: [
        { name: 'put w', path: '/v3/kv/put', body: put('w', '1') },
        { name: 'delete w', path: '/v3/kv/deleterange', body: `{"key":"${b64('w')}"}` },
      ],
    },
  },
  {
    name: 'watch a prefix, puts only',
    path: '/v3/watch',
    body: `{"create_request":{"key":"${b64('p/')}","range_end":"${b64('p0')}","filters":["NODELETE"]}}`,
    stream: {
      lines: 2,
      during: [
        { name: 'put p/1', path: '/v3/kv/put', body: put('p/1', 'x') },
        { name: 'delete p/1', path: '/v3/kv/deleterange', body: `{"key":"${b64('p/1')}"}` },
        { name: 'put p/2', path: '/v3/kv/put', body: put('p/2', 'y'), capture: (answer, vars) => (vars['revision'] = answer.header.revision) },
      ],
    },
  },
  { name: 'compact', path: '/v3/kv/compaction', body: (v) => `{"revision":"${v['revision']}","physical":true}` },
  { name: 'range of a compacted revision', path: '/v3/kv/range', body: `{"key":"${b64('foo')}","revision":"1"}` },
  {
    name: 'lease for lock and election',
    path: '/v3/lease/grant',
    body: '{"TTL":60}',
    capture: (answer, vars) => (vars['owner'] = answer.ID),
  },
  {
    name: 'lock',
    path: '/v3/lock/lock',
    body: (v) => `{"name":"${b64('job')}","lease":"${v['owner']}"}`,
    capture: (answer, vars) => (vars['lockKey'] = answer.key),
    loose: ['key'],
  },
  { name: 'unlock', path: '/v3/lock/unlock', body: (v) => `{"key":"${v['lockKey']}"}` },
  {
    name: 'campaign',
    path: '/v3/election/campaign',
    body: (v) => `{"name":"${b64('chief')}","value":"${b64('one')}","lease":"${v['owner']}"}`,
    capture: (answer, vars) => (vars['leader'] = JSON.stringify(answer.leader)),
    loose: ['key', 'lease', 'rev'],
  },
  { name: 'election leader', path: '/v3/election/leader', body: `{"name":"${b64('chief')}"}`, loose: ['key', 'lease'] },
  { name: 'proclaim', path: '/v3/election/proclaim', body: (v) => `{"leader":${v['leader']},"value":"${b64('two')}"}` },
  {
    name: 'observe',
    path: '/v3/election/observe',
    body: `{"name":"${b64('chief')}"}`,
    stream: { lines: 1 },
    loose: ['key', 'lease'],
    differs: { fields: ['version'], why: "Baton's leader record carries no key version: a proclaimed leader reads as version 1" },
  },
  { name: 'resign', path: '/v3/election/resign', body: (v) => `{"leader":${v['leader']}}` },
  { name: 'proclaim after resign', path: '/v3/election/proclaim', body: (v) => `{"leader":${v['leader']},"value":"${b64('three')}"}` },
  { name: 'election leader after resign', path: '/v3/election/leader', body: `{"name":"${b64('chief')}"}` },
  { name: 'member list', path: '/v3/cluster/member/list', body: '{}', shape: true },
  { name: 'status', path: '/v3/maintenance/status', body: '{}', shape: true },
  { name: 'alarm list', path: '/v3/maintenance/alarm', body: '{"action":"GET"}' },
  { name: 'version', path: '/version', method: 'GET', shape: true },
  { name: 'health', path: '/health', method: 'GET' },
  { name: 'GET on an RPC path', path: '/v3/kv/range', method: 'GET' },
  { name: 'an unknown RPC path', path: '/v3/kv/nothing', body: '{}' },
];

/** Field names whose values belong to one cluster: masked everywhere. */
export const volatileFields: ReadonlySet<string> = new Set([
  'cluster_id', 'member_id', 'revision', 'raft_term', 'create_revision', 'mod_revision', 'compact_revision', 'ID', 'lease',
]);

/** Runs the script against `base` (http://host:port) and records each answer. */
export async function runGatewayScript(base: string, steps: readonly Step[] = gatewaySteps): Promise<Recorded[]> {
  const vars: Vars = {};
  const out: Recorded[] = [];
  for (const step of steps) out.push(await runStep(base, step, vars));
  return out;
}

async function runStep(base: string, step: Step, vars: Vars): Promise<Recorded> {
  const body = typeof step.body === 'function' ? step.body(vars) : step.body;
  const method = step.method ?? 'POST';
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), 10_000);
  try {
    const response = await fetch(`${base}${step.path}`, { method, body: method === 'POST' ? body ?? '' : undefined, signal: abort.signal });
    const contentType = response.headers.get('content-type') ?? '';
    if (step.stream === undefined) {
      const text = await response.text();
      const parsed = contentType.startsWith('application/json') ? JSON.parse(text) : text;
      if (step.capture !== undefined && response.status === 200) step.capture(parsed, vars);
      return { name: step.name, status: response.status, contentType, body: parsed };
    }
    const lines = await readLines(response, step.stream, base, vars);
    return { name: step.name, status: response.status, contentType, lines: lines.lines, during: lines.during };
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
}

async function readLines(
  response: Response,
  stream: NonNullable<Step['stream']>,
  base: string,
  vars: Vars,
): Promise<{ lines: Json[]; during: Recorded[] }> {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const lines: Json[] = [];
  const during: Recorded[] = [];
  let pending = '';
  while (lines.length < stream.lines) {
    const chunk = await reader.read().catch(() => ({ done: true as const, value: undefined }));
    if (chunk.done) break;
    pending += Buffer.from(chunk.value).toString('utf8');
    let newline: number;
    while (lines.length < stream.lines && (newline = pending.indexOf('\n')) >= 0) {
      lines.push(JSON.parse(pending.slice(0, newline)));
      pending = pending.slice(newline + 1);
      if (lines.length === 1) for (const step of stream.during ?? []) during.push(await runStep(base, step, vars));
    }
  }
  await reader.cancel().catch(() => undefined);
  return { lines, during };
}

/** The recorded answer with what may differ between clusters masked, for a JSON-equal comparison. */
export function comparable(recorded: Recorded, step: Step): Json {
  const loose = new Set([...volatileFields, ...(step.loose ?? []), ...(step.differs?.fields ?? [])]);
  const mask = (value: Json, key: string | null): Json => {
    if (step.shape === true && (value === null || typeof value !== 'object')) return '<value>';
    if (key !== null && loose.has(key)) return '<value>';
    if (Array.isArray(value)) return (step.shape === true ? value.slice(0, 1) : value).map((v) => mask(v, null));
    if (value !== null && typeof value === 'object') {
      return Object.fromEntries(Object.keys(value).sort().map((k) => [k, mask(value[k], k)]));
    }
    return value;
  };
  const during = (stepsDuring: readonly Step[] | undefined, answers: readonly Recorded[] | undefined): Json =>
    (answers ?? []).map((answer, i) => comparable(answer, stepsDuring?.[i] ?? { name: answer.name, path: '' }));
  return {
    status: recorded.status,
    contentType: recorded.contentType.split(';')[0],
    ...(recorded.body !== undefined ? { body: mask(recorded.body, null) } : {}),
    ...(recorded.lines !== undefined ? { lines: recorded.lines.map((line) => mask(line, null)) } : {}),
    ...(recorded.during !== undefined && recorded.during.length > 0 ? { during: during(step.stream?.during, recorded.during) } : {}),
  };
}
