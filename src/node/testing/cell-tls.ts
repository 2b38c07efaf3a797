// TLS for a process cell (`baton dev --secure`, the secure cluster tests): one throwaway CA in
// `dir`, a certificate per member (its baton://cell-1/<name> identity for peers, 127.0.0.1 and
// localhost for clients), client-root.pem for the root principal and crl.pem, the CA's revocation
// list every member reads (`baton certs revoke FILE --dir DIR` revokes); and an HTTPS GET that
// trusts that CA and presents the root certificate, for probes and tests.
import { existsSync, readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { ensureCa, issueClientCert, issueMemberCert, writeCrl, type CertAuthority, type CertFiles } from '../../security/certs.js';

export class CellTls {
  readonly ca: CertAuthority;
  readonly root: CertFiles;
  /** The revocation list the members read (--client-crl-file, --peer-crl-file). */
  readonly crl: string;
  private readonly members = new Map<string, CertFiles>();

  /**
   * `filesByCell`: member files are `<cell>-<member>.pem`, so several cells can share one CA
   * directory (`baton dev --cells N --secure`: one CA, one revocation list, n1 in every cell).
   */
  constructor(readonly dir: string, private readonly cell = 'cell-1', private readonly filesByCell = false) {
    this.ca = ensureCa(dir);
    this.root = issueClientCert(this.ca, 'root');
    this.crl = join(dir, 'crl.pem');
    if (!existsSync(this.crl)) writeCrl(this.ca, this.crl);
  }

  /** The member's certificate, made the first time it is asked for. */
  member(name: string): CertFiles {
    let files = this.members.get(name);
    if (files === undefined) this.members.set(name, (files = this.issue(name)));
    return files;
  }

  /** A new key and certificate for the member in the same files (a rotation). */
  reissueMember(name: string): CertFiles {
    const files = this.issue(name);
    this.members.set(name, files);
    return files;
  }

  private issue(name: string): CertFiles {
    const fileName = this.filesByCell ? `${this.cell}-${name}` : name;
    return issueMemberCert(this.ca, this.cell, name, undefined, fileName);
  }

  /** The node flags: TLS on every listener, client certificates required, mutual TLS between members. */
  flags(name: string): string[] {
    const own = this.member(name);
    return [
      '--cert-file', own.cert, '--key-file', own.key, '--trusted-ca-file', this.ca.cert, '--client-cert-auth',
      '--peer-cert-file', own.cert, '--peer-key-file', own.key, '--peer-trusted-ca-file', this.ca.cert,
      '--client-crl-file', this.crl, '--peer-crl-file', this.crl,
    ];
  }

  /** curl's flags for the root principal. */
  curlFlags(): string {
    return `--cacert ${this.ca.cert} --cert ${this.root.cert} --key ${this.root.key}`;
  }
}

export interface HttpsAnswer {
  readonly status: number;
  readonly body: string;
}

/** A request over TLS trusting `ca`, with the client certificate `client` (none when absent). */
export function httpsRequest(
  url: string,
  options: { ca: string; client?: CertFiles; method?: string; body?: string; timeoutMs?: number; headers?: Record<string, string> },
): Promise<HttpsAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: options.method ?? 'GET',
      ...(options.headers === undefined ? {} : { headers: options.headers }),
      ca: readFileSync(options.ca),
      ...(options.client === undefined ? {} : { cert: readFileSync(options.client.cert), key: readFileSync(options.client.key) }),
      timeout: options.timeoutMs ?? 5_000,
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${url}: no answer in time`)));
    req.on('error', reject);
    req.end(options.body);
  });
}

export function caPath(dir: string): string {
  return join(dir, 'ca.pem');
}
