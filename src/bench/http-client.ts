// The bench's HTTP/1.1 client: one connection pool per endpoint (as many keep-alive connections as
// clients on it), so a closed-loop client reuses one connection for its whole run. The pool is
// undici's by default: on this 2-core machine the load client shares the cores with the servers,
// and node:http's client costs about twice undici's CPU per request (over TLS 59-65 vs 27-32 us,
// docs/security.md "What the client costs"), which capped both systems and hid the servers' own
// difference. `useHttpClient('node')` keeps the old client for comparisons with older figures.
import { Agent, request } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { Agent as UndiciAgent, Pool, setGlobalDispatcher } from 'undici';
import type { RequestSpec } from './protocols.js';

export type Endpoint =
  | { readonly url: URL; readonly kind: 'node'; readonly agent: Agent }
  | { readonly url: URL; readonly kind: 'undici'; readonly pool: Pool };

export type HttpClientKind = Endpoint['kind'];

let clientKind: HttpClientKind = 'undici';

/** Which client openEndpoints builds from now on. */
export function useHttpClient(kind: HttpClientKind): void {
  clientKind = kind;
}

/** The CA to trust and the client certificate to present on https:// endpoints (one TLS cell per run). */
export interface BenchTls {
  readonly ca: Buffer;
  readonly cert: Buffer;
  readonly key: Buffer;
}

let benchTls: BenchTls | null = null;

/** Also makes the process's fetch (status and metrics probes) trust that CA and present that certificate. */
export function useBenchTls(tls: BenchTls): void {
  benchTls = tls;
  setGlobalDispatcher(new UndiciAgent({ connect: { ca: tls.ca, cert: tls.cert, key: tls.key } }));
}

export interface HttpAnswer {
  readonly status: number;
  /** Only collected when asked for; otherwise the body is drained and dropped. */
  readonly body: Buffer;
}

const loopbackHosts = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/** Parses a comma-separated endpoint list; refuses anything that is not loopback HTTP. */
export function parseEndpoints(list: string): URL[] {
  const urls = list.split(',').map((s) => s.trim()).filter((s) => s !== '').map((s) => new URL(s));
  if (urls.length === 0) throw new Error('no endpoints given');
  for (const url of urls) {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new Error(`${url.href}: only http:// and https:// endpoints are supported`);
    }
    if (!loopbackHosts.has(url.hostname)) {
      throw new Error(`${url.href}: the bench drives loopback endpoints only`);
    }
  }
  return urls;
}

export function openEndpoints(urls: readonly URL[], clients: number): Endpoint[] {
  const perEndpoint = Math.max(1, Math.ceil(clients / urls.length));
  return urls.map((url): Endpoint => {
    const secure = url.protocol === 'https:';
    if (secure && benchTls === null) throw new Error(`${url.href}: an https endpoint needs useBenchTls() first`);
    if (clientKind === 'undici') {
      const connect = secure ? { ca: benchTls?.ca, cert: benchTls?.cert, key: benchTls?.key } : undefined;
      return { url, kind: 'undici', pool: new Pool(url.origin, { connections: perEndpoint, pipelining: 1, connect }) };
    }
    if (!secure) return { url, kind: 'node', agent: new Agent({ keepAlive: true, maxSockets: perEndpoint }) };
    return { url, kind: 'node', agent: new HttpsAgent({ keepAlive: true, maxSockets: perEndpoint, ...benchTls }) };
  });
}

export function closeEndpoints(endpoints: readonly Endpoint[]): void {
  for (const endpoint of endpoints) {
    if (endpoint.kind === 'node') endpoint.agent.destroy();
    else void endpoint.pool.destroy();
  }
}

export function send(
  endpoint: Endpoint,
  spec: RequestSpec,
  keepBody: boolean,
  timeoutMs: number,
): Promise<HttpAnswer> {
  if (endpoint.kind === 'undici') return sendUndici(endpoint.pool, spec, keepBody, timeoutMs);
  const agent = endpoint.agent;
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = {};
    if (spec.body !== undefined) headers['content-length'] = spec.body.length;
    if (spec.contentType !== undefined) headers['content-type'] = spec.contentType;
    const req = (endpoint.url.protocol === 'https:' ? httpsRequest : request)(
      {
        agent,
        host: endpoint.url.hostname.replace(/^\[|\]$/g, ''),
        port: endpoint.url.port,
        method: spec.method,
        path: spec.path,
        headers,
      },
      (res) => {
        const chunks: Buffer[] = [];
        if (keepBody) res.on('data', (chunk: Buffer) => chunks.push(chunk));
        else res.resume();
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, body: keepBody ? Buffer.concat(chunks) : empty });
        });
        res.on('error', reject);
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(spec.body);
  });
}

async function sendUndici(pool: Pool, spec: RequestSpec, keepBody: boolean, timeoutMs: number): Promise<HttpAnswer> {
  const headers: Record<string, string> = {};
  if (spec.contentType !== undefined) headers['content-type'] = spec.contentType;
  const answer = await pool.request({
    method: spec.method,
    path: spec.path,
    headers,
    body: spec.body,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });
  if (!keepBody) {
    await answer.body.dump();
    return { status: answer.statusCode, body: empty };
  }
  return { status: answer.statusCode, body: Buffer.from(await answer.body.arrayBuffer()) };
}

const empty = Buffer.alloc(0);
