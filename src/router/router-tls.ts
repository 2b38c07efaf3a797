// TLS for the router (docs/security.md "The router"): the listener's certificate (HTTPS and wss://
// for clients) and the router's own client side towards TLS cells and a TLS control plane (HTTP
// forwarding, the leader refresh, the cell map's read and watch, the stream relay's upstream
// WebSockets). The material itself is the node's (security/tls-files.ts, built by the CLI): this
// file only names what the router asks of it, so the router does not depend on how it is read or
// reloaded.
import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { SecureContextOptions, TLSSocket } from 'node:tls';

/** Certificate material that may change (a reload): security/tls-files.ts's TlsMaterial fits. */
export interface ReloadableTls {
  /** cert and key (absent: no certificate presented), ca (absent: the system's CAs), minVersion. */
  material(): SecureContextOptions;
  onReload(listener: () => void): void;
}

/** The listener's side: as a node's client listener (--cert-file, --key-file, --trusted-ca-file). */
export interface RouterListenerTls extends ReloadableTls {
  /** --client-cert-auth: every client must present a certificate from the trusted CA. */
  readonly clientCertAuth: boolean;
  /** A new connection, before it is read: false (and destroyed) when its certificate is revoked. */
  admit(socket: TLSSocket): boolean;
}

export interface RouterTls {
  /** The router serves HTTPS and wss:// with this certificate; absent: plain HTTP. */
  readonly listener?: RouterListenerTls | undefined;
  /** What the router presents to and trusts of https:// cells and control plane; absent: no client certificate, the system's CAs. */
  readonly upstream?: ReloadableTls | undefined;
}

/** The options a TLS client connection to a cell takes: the client certificate and the CA. */
export type UpstreamTlsOptions = Pick<SecureContextOptions, 'cert' | 'key' | 'ca' | 'minVersion'>;

/**
 * The router's connections to cells and the control plane: a keep-alive agent per scheme (an
 * https one presenting the router's certificate, replaced when the material reloads), and the TLS
 * options for one-off requests and WebSockets.
 */
export class UpstreamClient {
  private readonly http = new HttpAgent({ keepAlive: true, maxSockets: 256 });
  private https: HttpsAgent;
  private readonly retired = new Set<HttpsAgent>();

  constructor(private readonly tls: ReloadableTls | undefined) {
    this.https = this.newHttpsAgent();
    tls?.onReload(() => {
      // New requests use the new certificate; requests under way finish on the old agent's sockets.
      const old = this.https;
      this.https = this.newHttpsAgent();
      this.retired.add(old);
      setTimeout(() => {
        old.destroy();
        this.retired.delete(old);
      }, 70_000).unref();
    });
  }

  /** The client certificate, key and CA for a TLS connection (e.g. a wss:// upstream). */
  tlsOptions(): UpstreamTlsOptions {
    const material = this.tls?.material() ?? {};
    return {
      minVersion: 'TLSv1.2',
      ...(material.cert === undefined ? {} : { cert: material.cert }),
      ...(material.key === undefined ? {} : { key: material.key }),
      ...(material.ca === undefined ? {} : { ca: material.ca }),
    };
  }

  /** A request over the pooled keep-alive agent of the URL's scheme (forwarding). */
  pooled(secure: boolean, options: RequestOptions, answer: (res: IncomingMessage) => void): ClientRequest {
    return secure ? httpsRequest({ ...options, agent: this.https }, answer) : httpRequest({ ...options, agent: this.http }, answer);
  }

  /** A request to a URL outside the pool (the control plane's read and watch), http or https by its scheme. */
  request(url: string, options: RequestOptions, answer: (res: IncomingMessage) => void): ClientRequest {
    return url.startsWith('https:') ? httpsRequest(url, { ...options, ...this.tlsOptions() }, answer) : httpRequest(url, options, answer);
  }

  destroy(): void {
    this.http.destroy();
    this.https.destroy();
    for (const agent of this.retired) agent.destroy();
    this.retired.clear();
  }

  private newHttpsAgent(): HttpsAgent {
    return new HttpsAgent({ keepAlive: true, maxSockets: 256, ...this.tlsOptions() });
  }
}
