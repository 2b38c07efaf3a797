// TLS material read from the files an operator names (--cert-file, --key-file,
// --trusted-ca-file; --peer-* for the peer transport): validated at start (a missing or bad file
// stops the node naming it), and read again on SIGHUP or when a file changes, so certificates
// rotate without a restart. A reload that fails keeps the old material and logs why.
//
// A revocation list (--client-crl-file, --peer-crl-file; security/crl.ts) is checked by Baton on
// every connection the listeners take (`admit`) and on the peer certificates it dials; when a
// reloaded list names a certificate, every open connection that presented it is cut at once, so a
// revoked certificate loses access within the list's poll interval (250 ms) or on SIGHUP.
import { X509Certificate } from 'node:crypto';
import { readFileSync, unwatchFile, watchFile } from 'node:fs';
import { createSecureContext, type SecureContext, type SecureContextOptions, type TLSSocket } from 'node:tls';
import { ConfigError } from '../base/config-error.js';
import { certificatesOf, readRevocationLists, revocationOf, type RevocationList } from './crl.js';

export interface TlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
  /** The CA that client (or peer) certificates must chain to; absent: no client certificates checked. */
  readonly caFile?: string;
  /** Revoked certificates (PEM or DER CRLs signed by the CA); needs caFile. */
  readonly crlFile?: string;
}

/** Files watched for changes are polled at this interval (fs.watchFile: works on every filesystem). */
const watchIntervalMs = 2_000;
/** The revocation list is polled faster: a revoked certificate must lose access within a second. */
const crlWatchIntervalMs = 250;

export class TlsMaterial {
  private options: SecureContextOptions;
  private secure: SecureContext;
  private revocations: readonly RevocationList[];
  private readonly listeners: (() => void)[] = [];
  /** Connections that presented a certificate, cut when a reloaded list revokes it. */
  private readonly open = new Map<TLSSocket, X509Certificate>();
  private readonly onSignal = (): void => this.reload('SIGHUP');

  constructor(
    private readonly files: TlsFiles,
    private readonly log: (message: string, level: 'info' | 'warn') => void,
  ) {
    if (files.crlFile !== undefined && files.caFile === undefined) throw new ConfigError(`a revocation list (${files.crlFile}) needs the trusted CA file that signed it`);
    this.options = read(files);
    this.secure = createContext(this.options, files);
    this.revocations = readRevocations(files, this.options);
    this.warnIfStale();
  }

  material(): SecureContextOptions {
    return this.options;
  }

  context(): SecureContext {
    return this.secure;
  }

  onReload(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** Why a certificate (DER) is revoked, or null: the dialler's check of the peer it reached. */
  revocationOfRaw(raw: Buffer | undefined): string | null {
    if (raw === undefined || this.revocations.length === 0) return null;
    return revocationOf(this.revocations, new X509Certificate(raw));
  }

  /**
   * A listener's new TLS connection, before anything is read from it: false (and the socket
   * destroyed) when its certificate is revoked; otherwise it is cut later if a reloaded list
   * revokes it. Listeners call it first on 'secureConnection' (prependListener).
   */
  admit(socket: TLSSocket): boolean {
    const certificate = socket.getPeerX509Certificate();
    if (certificate === undefined) return true;
    const refusal = revocationOf(this.revocations, certificate);
    if (refusal !== null) {
      this.cut(socket, refusal);
      return false;
    }
    this.open.set(socket, certificate);
    socket.once('close', () => this.open.delete(socket));
    return true;
  }

  /** Starts reloading on SIGHUP and on changes to the files. */
  watch(): void {
    process.on('SIGHUP', this.onSignal);
    for (const file of this.paths()) {
      const interval = file === this.files.crlFile ? crlWatchIntervalMs : watchIntervalMs;
      watchFile(file, { interval, persistent: false }, () => this.reload(`${file} changed`));
    }
  }

  close(): void {
    process.off('SIGHUP', this.onSignal);
    for (const file of this.paths()) unwatchFile(file);
  }

  reload(why: string): void {
    try {
      const options = read(this.files);
      const secure = createContext(options, this.files);
      const revocations = readRevocations(this.files, options);
      this.options = options;
      this.secure = secure;
      this.revocations = revocations;
      for (const listener of this.listeners) listener();
      this.log(`tls: reloaded ${this.files.certFile} (${why})`, 'info');
      this.warnIfStale();
      for (const [socket, certificate] of this.open) {
        const refusal = revocationOf(revocations, certificate);
        if (refusal !== null) this.cut(socket, refusal);
      }
    } catch (error) {
      this.log(`tls: reload of ${this.files.certFile} failed (${why}), keeping the current certificate: ${(error as Error).message}`, 'warn');
    }
  }

  private paths(): string[] {
    const optional = [this.files.caFile, this.files.crlFile].filter((file): file is string => file !== undefined);
    return [this.files.certFile, this.files.keyFile, ...optional];
  }

  private cut(socket: TLSSocket, why: string): void {
    this.open.delete(socket);
    this.log(`tls: connection from ${socket.remoteAddress}:${socket.remotePort} refused: ${why}`, 'warn');
    socket.destroy();
  }

  /** A list past its nextUpdate still revokes what it names (it never grants); the operator should renew it. */
  private warnIfStale(): void {
    const now = Date.now() / 1000;
    if (this.revocations.some((list) => list.nextUpdate !== null && list.nextUpdate < now)) {
      this.log(`tls: the revocation list ${this.files.crlFile} is past its nextUpdate: renew it (it is still enforced)`, 'warn');
    }
  }
}

function readRevocations(files: TlsFiles, options: SecureContextOptions): readonly RevocationList[] {
  if (files.crlFile === undefined || files.caFile === undefined) return [];
  let contents: Buffer;
  try {
    contents = readFileSync(files.crlFile);
  } catch (error) {
    throw new ConfigError(`revocation list file ${files.crlFile}: ${(error as Error).message}`);
  }
  return readRevocationLists(files.crlFile, contents, certificatesOf(files.caFile, options.ca as Buffer));
}

function read(files: TlsFiles): SecureContextOptions {
  const file = (path: string, what: string): Buffer => {
    try {
      return readFileSync(path);
    } catch (error) {
      throw new ConfigError(`${what} ${path}: ${(error as Error).message}`);
    }
  };
  return {
    cert: file(files.certFile, 'certificate file'),
    key: file(files.keyFile, 'key file'),
    ...(files.caFile === undefined ? {} : { ca: file(files.caFile, 'trusted CA file') }),
    minVersion: 'TLSv1.2',
  };
}

function createContext(options: SecureContextOptions, files: TlsFiles): SecureContext {
  try {
    return createSecureContext(options);
  } catch (error) {
    throw new ConfigError(`TLS files ${files.certFile} / ${files.keyFile}: ${(error as Error).message}`);
  }
}
