// The bench's HTTP/1.1 client: node:http over keep-alive Agents (one per endpoint, as many sockets
// as clients on it), so a closed-loop client reuses one connection for its whole run.
import { Agent, request } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { Agent as UndiciAgent, setGlobalDispatcher } from 'undici';
import type { RequestSpec } from './protocols.js';

export interface Endpoint {
  readonly url: URL;
  readonly agent: Agent;
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
  return urls.map((url) => {
    if (url.protocol !== 'https:') return { url, agent: new Agent({ keepAlive: true, maxSockets: perEndpoint }) };
    if (benchTls === null) throw new Error(`${url.href}: an https endpoint needs useBenchTls() first`);
    return { url, agent: new HttpsAgent({ keepAlive: true, maxSockets: perEndpoint, ...benchTls }) };
  });
}

export function closeEndpoints(endpoints: readonly Endpoint[]): void {
  for (const endpoint of endpoints) endpoint.agent.destroy();
}

export function send(
  endpoint: Endpoint,
  spec: RequestSpec,
  keepBody: boolean,
  timeoutMs: number,
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = {};
    if (spec.body !== undefined) headers['content-length'] = spec.body.length;
    if (spec.contentType !== undefined) headers['content-type'] = spec.contentType;
    const req = (endpoint.url.protocol === 'https:' ? httpsRequest : request)(
      {
        agent: endpoint.agent,
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

const empty = Buffer.alloc(0);
