// The HTTP door for a cell with TLS (docs/security.md): Node's https with the cell's CA and, for
// --client-cert-auth, the client's certificate. Node's fetch takes neither, so the client speaks
// https itself here; one keep-alive agent per client.
import { Agent, request } from 'node:https';
import type { HttpAnswer, HttpRequest, HttpTransport } from './types.js';

/** PEM contents (not paths): the CA to trust, and the client certificate and key to present. */
export interface ClientTls {
  readonly ca?: string | Uint8Array;
  readonly cert?: string | Uint8Array;
  readonly key?: string | Uint8Array;
}

export function httpsTransport(tls: ClientTls): { transport: HttpTransport; close(): void } {
  const agent = new Agent({ keepAlive: true, ...tlsOptions(tls) });
  const transport: HttpTransport = (req: HttpRequest) => new Promise<HttpAnswer>((resolve, reject) => {
    const body = req.body === undefined ? undefined : typeof req.body === 'string' ? Buffer.from(req.body) : Buffer.from(req.body);
    const headers: Record<string, string> = { ...req.headers, ...(body === undefined ? {} : { 'content-length': String(body.length) }) };
    const outgoing = request(req.url, { method: req.method, headers, agent, timeout: req.timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, header: (name) => headerText(res.headers[name.toLowerCase()]), text });
      });
      res.on('error', reject);
    });
    outgoing.on('timeout', () => outgoing.destroy(new Error(`no answer within ${req.timeoutMs} ms`)));
    outgoing.on('error', reject);
    const abort = (): void => void outgoing.destroy(new Error('aborted'));
    req.signal?.addEventListener('abort', abort, { once: true });
    outgoing.end(body);
  });
  return { transport, close: () => agent.destroy() };
}

/** The options node:https, node:tls and ws take for these files. */
export function tlsOptions(tls: ClientTls): { ca?: string | Buffer; cert?: string | Buffer; key?: string | Buffer } {
  const pem = (value: string | Uint8Array): string | Buffer => (typeof value === 'string' ? value : Buffer.from(value));
  return {
    ...(tls.ca === undefined ? {} : { ca: pem(tls.ca) }),
    ...(tls.cert === undefined ? {} : { cert: pem(tls.cert) }),
    ...(tls.key === undefined ? {} : { key: pem(tls.key) }),
  };
}

function headerText(value: string | string[] | undefined): string | null {
  if (value === undefined) return null;
  return Array.isArray(value) ? value.join(', ') : value;
}
