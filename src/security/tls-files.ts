// TLS material read from the files an operator names (--cert-file, --key-file,
// --trusted-ca-file; --peer-* for the peer transport): validated at start (a missing or bad file
// stops the node naming it), and read again on SIGHUP or when a file changes, so certificates
// rotate without a restart. A reload that fails keeps the old material and logs why.
import { readFileSync, unwatchFile, watchFile } from 'node:fs';
import { createSecureContext, type SecureContext, type SecureContextOptions } from 'node:tls';
import { ConfigError } from '../base/config-error.js';

export interface TlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
  /** The CA that client (or peer) certificates must chain to; absent: no client certificates checked. */
  readonly caFile?: string;
}

/** Files watched for changes are polled at this interval (fs.watchFile: works on every filesystem). */
const watchIntervalMs = 2_000;

export class TlsMaterial {
  private options: SecureContextOptions;
  private secure: SecureContext;
  private readonly listeners: (() => void)[] = [];
  private readonly onSignal = (): void => this.reload('SIGHUP');

  constructor(
    private readonly files: TlsFiles,
    private readonly log: (message: string) => void,
  ) {
    this.options = read(files);
    this.secure = createContext(this.options, files);
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

  /** Starts reloading on SIGHUP and on changes to the files. */
  watch(): void {
    process.on('SIGHUP', this.onSignal);
    for (const file of this.paths()) watchFile(file, { interval: watchIntervalMs, persistent: false }, () => this.reload(`${file} changed`));
  }

  close(): void {
    process.off('SIGHUP', this.onSignal);
    for (const file of this.paths()) unwatchFile(file);
  }

  reload(why: string): void {
    try {
      const options = read(this.files);
      const secure = createContext(options, this.files);
      this.options = options;
      this.secure = secure;
      for (const listener of this.listeners) listener();
      this.log(`tls: reloaded ${this.files.certFile} (${why})`);
    } catch (error) {
      this.log(`tls: reload of ${this.files.certFile} failed (${why}), keeping the current certificate: ${(error as Error).message}`);
    }
  }

  private paths(): string[] {
    return [this.files.certFile, this.files.keyFile, ...(this.files.caFile === undefined ? [] : [this.files.caFile])];
  }
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
