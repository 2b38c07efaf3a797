// How each workload's request is spelled for each system. Both are driven over HTTP/1.1 JSON by
// the same client: Baton through its native API (api.md), etcd 3.4 through its v3 JSON gateway
// (grpc-gateway: bytes as base64, int64 as strings, field names in snake_case).

export const workloadNames = ['put', 'get-lin', 'get-ser', 'txn'] as const;
export type WorkloadName = (typeof workloadNames)[number];

export const systemNames = ['baton', 'etcd'] as const;
export type SystemName = (typeof systemNames)[number];

export interface RequestSpec {
  readonly method: 'GET' | 'PUT' | 'POST';
  readonly path: string;
  readonly body: Buffer | undefined;
  readonly contentType: string | undefined;
}

export interface CasOutcome {
  readonly succeeded: boolean;
  /** The key's version after the request: the new one on success, the current one on failure. */
  readonly version: number;
}

export interface Protocol {
  readonly system: SystemName;
  put(key: string, value: Buffer): RequestSpec;
  get(key: string, serializable: boolean): RequestSpec;
  /** A compare-and-swap: put `value` only if the key's version is `expectedVersion`. */
  cas(key: string, expectedVersion: number, value: Buffer): RequestSpec;
  casOutcome(expectedVersion: number, body: Buffer): CasOutcome;
}

const json = 'application/json';

export const batonProtocol: Protocol = {
  system: 'baton',
  put: (key, value) => ({
    method: 'PUT',
    path: `/v1/kv${encodeKey(key)}`,
    body: value,
    contentType: 'application/octet-stream',
  }),
  get: (key, serializable) => ({
    method: 'GET',
    path: `/v1/kv${encodeKey(key)}?consistency=${serializable ? 'serializable' : 'linearizable'}`,
    body: undefined,
    contentType: undefined,
  }),
  cas: (key, expectedVersion, value) => ({
    method: 'POST',
    path: '/v1/txn',
    contentType: json,
    // Bench values are ASCII, so the default utf8 encoding carries them unchanged.
    body: Buffer.from(JSON.stringify({
      compare: [{ key, target: 'version', op: '==', value: expectedVersion }],
      success: [{ put: { key, value: value.toString('latin1') } }],
      failure: [{ get: { key } }],
    })),
  }),
  casOutcome: (expectedVersion, body) => {
    const answer = JSON.parse(body.toString('utf8')) as {
      succeeded?: boolean;
      results?: { version?: number; kvs?: { version?: number }[] }[];
    };
    if (answer.succeeded === true) return { succeeded: true, version: expectedVersion + 1 };
    return { succeeded: false, version: answer.results?.[0]?.kvs?.[0]?.version ?? 0 };
  },
};

export const etcdProtocol: Protocol = {
  system: 'etcd',
  put: (key, value) => jsonPost('/v3/kv/put', { key: b64(key), value: value.toString('base64') }),
  get: (key, serializable) => jsonPost('/v3/kv/range', { key: b64(key), serializable }),
  cas: (key, expectedVersion, value) =>
    jsonPost('/v3/kv/txn', {
      compare: [
        { key: b64(key), target: 'VERSION', result: 'EQUAL', version: String(expectedVersion) },
      ],
      success: [{ request_put: { key: b64(key), value: value.toString('base64') } }],
      failure: [{ request_range: { key: b64(key) } }],
    }),
  casOutcome: (expectedVersion, body) => {
    type Range = { kvs?: { version?: string | number }[] };
    const answer = JSON.parse(body.toString('utf8')) as {
      succeeded?: boolean;
      responses?: { response_range?: Range; responseRange?: Range }[];
    };
    // The gateway omits false booleans: a missing `succeeded` means the compare failed.
    if (answer.succeeded === true) return { succeeded: true, version: expectedVersion + 1 };
    const first = answer.responses?.[0];
    const range = first?.response_range ?? first?.responseRange;
    return { succeeded: false, version: Number(range?.kvs?.[0]?.version ?? 0) };
  },
};

export function protocolFor(system: SystemName): Protocol {
  return system === 'baton' ? batonProtocol : etcdProtocol;
}

function jsonPost(path: string, body: unknown): RequestSpec {
  return { method: 'POST', path, body: Buffer.from(JSON.stringify(body)), contentType: json };
}

function b64(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64');
}

function encodeKey(key: string): string {
  return key.split('/').map(encodeURIComponent).join('/');
}
