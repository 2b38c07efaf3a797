// The TLS flags (etcd's names): --cert-file --key-file --trusted-ca-file --client-cert-auth for
// the client listeners (HTTP API and stream, the etcd gRPC facade and its JSON gateway), and
// --peer-cert-file --peer-key-file --peer-trusted-ca-file for the members' transport (always
// mutual, with node identity: docs/security.md). A listener's scheme says whether it is TLS, and
// must agree with the flags: a half-configured node refuses to start and says what is missing.
import { ConfigError } from '../base/config-error.js';

export interface ClientTlsConfig {
  readonly certFile: string;
  readonly keyFile: string;
  /** Client certificates must chain to it when clientCertAuth is on. */
  readonly caFile: string | undefined;
  /** --client-cert-auth: every client must present a certificate from the trusted CA. */
  readonly clientCertAuth: boolean;
  /** --client-crl-file: client certificates revoked by the CA (security/crl.ts). */
  readonly crlFile: string | undefined;
}

export interface PeerTlsConfig {
  readonly certFile: string;
  readonly keyFile: string;
  readonly caFile: string;
  /** --peer-crl-file: member certificates revoked by the peer CA. */
  readonly crlFile: string | undefined;
}

export interface TlsFlags {
  readonly 'cert-file'?: string | undefined;
  readonly 'key-file'?: string | undefined;
  readonly 'trusted-ca-file'?: string | undefined;
  readonly 'client-cert-auth'?: string | boolean | undefined;
  readonly 'peer-cert-file'?: string | undefined;
  readonly 'peer-key-file'?: string | undefined;
  readonly 'peer-trusted-ca-file'?: string | undefined;
  readonly 'client-crl-file'?: string | undefined;
  readonly 'peer-crl-file'?: string | undefined;
}

export interface Listeners {
  readonly listenClient: URL;
  readonly listenGrpc: URL | null;
  readonly listenPeer: URL;
  readonly peerUrls: readonly string[];
}

export function clientTlsConfig(raw: TlsFlags, listeners: Listeners): ClientTlsConfig | null {
  const certFile = raw['cert-file'];
  const keyFile = raw['key-file'];
  const caFile = raw['trusted-ca-file'];
  const clientCertAuth = flagOn(raw['client-cert-auth'], 'client-cert-auth');
  const crlFile = raw['client-crl-file'];
  if (crlFile !== undefined && caFile === undefined) throw new ConfigError('--client-crl-file needs --trusted-ca-file (the CA that signed the list)');
  const secure = [listeners.listenClient, listeners.listenGrpc].filter((u): u is URL => u !== null).map((u) => u.protocol === 'https:');
  if (certFile === undefined && keyFile === undefined) {
    if (secure.some((s) => s)) throw new ConfigError('an https:// client listener needs --cert-file and --key-file');
    if (clientCertAuth || caFile !== undefined) throw new ConfigError('--client-cert-auth and --trusted-ca-file need --cert-file and --key-file');
    return null;
  }
  if (certFile === undefined || keyFile === undefined) throw new ConfigError('--cert-file and --key-file go together');
  if (!secure.every((s) => s)) {
    throw new ConfigError('with --cert-file every client listener is TLS: write --listen-client (and --listen-grpc) as https://HOST:PORT');
  }
  if (clientCertAuth && caFile === undefined) throw new ConfigError('--client-cert-auth needs --trusted-ca-file (the CA client certificates chain to)');
  return { certFile, keyFile, caFile, clientCertAuth, crlFile };
}

export function peerTlsConfig(raw: TlsFlags, listeners: Listeners): PeerTlsConfig | null {
  const certFile = raw['peer-cert-file'];
  const keyFile = raw['peer-key-file'];
  const caFile = raw['peer-trusted-ca-file'];
  const crlFile = raw['peer-crl-file'];
  const peerSecure = [listeners.listenPeer.href, ...listeners.peerUrls].map((u) => u.startsWith('https:'));
  if (certFile === undefined && keyFile === undefined && caFile === undefined) {
    if (peerSecure.some((s) => s)) throw new ConfigError('https:// peer URLs need --peer-cert-file, --peer-key-file and --peer-trusted-ca-file');
    if (crlFile !== undefined) throw new ConfigError('--peer-crl-file needs peer TLS (--peer-cert-file, --peer-key-file, --peer-trusted-ca-file)');
    return null;
  }
  if (certFile === undefined || keyFile === undefined || caFile === undefined) {
    throw new ConfigError('peer TLS needs all of --peer-cert-file, --peer-key-file and --peer-trusted-ca-file (members always verify each other)');
  }
  if (!peerSecure.every((s) => s)) {
    throw new ConfigError('with peer TLS, --listen-peer and every peer URL of --initial-cluster are https://HOST:PORT');
  }
  return { certFile, keyFile, caFile, crlFile };
}

function flagOn(value: string | boolean | undefined, flag: string): boolean {
  if (value === undefined || value === false || value === 'false' || value === '0') return false;
  if (value === true || value === 'true' || value === '1' || value === '') return true;
  throw new ConfigError(`--${flag}: "${value}" is not true or false`);
}
