// `baton router --control URL,... --listen URL`: a stateless router in front of the cells
// (docs/design/cells.md). Runs until SIGINT/SIGTERM. TLS (docs/security.md "The router"): the
// node's flags for the listener, and the router's own client certificate towards the cells.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ConfigError } from '../base/config-error.js';
import type { ReloadableTls, RouterListenerTls, RouterTls } from '../router/router-tls.js';
import { Router } from '../router/router.js';
import { RouterGrpc } from '../router-grpc/router-grpc.js';
import { TlsMaterial } from '../security/tls-files.js';

const usage = `usage: baton router --control URL,URL,... [--listen URL] [TLS flags]
  Serves the native HTTP API and forwards each request to the cell owning its namespace.
  --control URLS   the control plane's client URLs (or BATON_ROUTER_CONTROL); https:// for a TLS control plane
  --listen URL     where to serve, default http://127.0.0.1:7000 (or BATON_ROUTER_LISTEN); https:// with --cert-file
  --listen-grpc URL
                   also serve etcd's v3 gRPC API there (or BATON_ROUTER_LISTEN_GRPC), relayed to the
                   cells' facades (their members need --listen-grpc); https:// with --cert-file
  The WebSocket stream (/v1/stream) is routed frame by frame, etcd gRPC calls call by call.
TLS (each flag also BATON_ROUTER_<FLAG>, e.g. BATON_ROUTER_CERT_FILE; files reload on change or SIGHUP):
  --cert-file FILE, --key-file FILE   the listener's certificate: HTTPS and wss:// (TLS 1.2 minimum)
  --trusted-ca-file FILE              the CA client certificates chain to (asked for when given)
  --client-cert-auth                  every client must present a certificate from that CA
  --client-crl-file FILE              revoked client certificates (needs --trusted-ca-file)
  --client-cert-file FILE, --client-key-file FILE
                                      the certificate the router presents to https:// cells and the
                                      control plane (default: --cert-file/--key-file); a client
                                      certificate (baton certs client router), never a member's
  --upstream-ca-file FILE             the CA the cells' certificates must chain to (default:
                                      --trusted-ca-file, else the system's CAs)
  A cell sees the router's certificate, not the client's: send a user's token (Authorization:
  Bearer) through the router for the cell to authorize the user.`;

const stringFlags = ['control', 'listen', 'listen-grpc', 'cert-file', 'key-file', 'trusted-ca-file', 'client-crl-file', 'client-cert-file', 'client-key-file', 'upstream-ca-file'] as const;
type StringFlag = (typeof stringFlags)[number];

export interface RouterTlsFiles {
  readonly listener: { certFile: string; keyFile: string; caFile?: string; crlFile?: string; clientCertAuth: boolean } | null;
  readonly upstream: { certFile?: string; keyFile?: string; caFile?: string };
}

/** The TLS flags (flags over BATON_ROUTER_*) checked against the listener's scheme; a half-configured router does not start. */
export function routerTlsFiles(flag: (name: StringFlag) => string | undefined, clientCertAuth: boolean, listen: URL): RouterTlsFiles {
  const certFile = flag('cert-file');
  const keyFile = flag('key-file');
  const caFile = flag('trusted-ca-file');
  const crlFile = flag('client-crl-file');
  const secure = listen.protocol === 'https:';
  if ((certFile === undefined) !== (keyFile === undefined)) throw new ConfigError('--cert-file and --key-file go together');
  if (certFile === undefined) {
    if (secure) throw new ConfigError('an https:// --listen needs --cert-file and --key-file');
    if (clientCertAuth || caFile !== undefined || crlFile !== undefined) {
      throw new ConfigError('--client-cert-auth, --trusted-ca-file and --client-crl-file need --cert-file and --key-file (a TLS listener)');
    }
  } else if (!secure) {
    throw new ConfigError('with --cert-file the router serves TLS: write --listen as https://HOST:PORT');
  }
  if (clientCertAuth && caFile === undefined) throw new ConfigError('--client-cert-auth needs --trusted-ca-file (the CA client certificates chain to)');
  if (crlFile !== undefined && caFile === undefined) throw new ConfigError('--client-crl-file needs --trusted-ca-file (the CA that signed the list)');
  const clientCert = flag('client-cert-file') ?? certFile;
  const clientKey = flag('client-key-file') ?? keyFile;
  if ((flag('client-cert-file') === undefined) !== (flag('client-key-file') === undefined)) throw new ConfigError('--client-cert-file and --client-key-file go together');
  const upstreamCa = flag('upstream-ca-file') ?? caFile;
  return {
    listener: certFile === undefined || keyFile === undefined ? null : {
      certFile, keyFile, clientCertAuth, ...(caFile === undefined ? {} : { caFile }), ...(crlFile === undefined ? {} : { crlFile }),
    },
    upstream: {
      ...(clientCert === undefined || clientKey === undefined ? {} : { certFile: clientCert, keyFile: clientKey }),
      ...(upstreamCa === undefined ? {} : { caFile: upstreamCa }),
    },
  };
}

/** The material (security/tls-files.ts, as the node's), read now so a bad file stops the router; watched for reloads. */
export function loadRouterTls(files: RouterTlsFiles, log: (message: string) => void): { tls: RouterTls; close(): void } {
  const note = (message: string): void => log(message);
  const opened: TlsMaterial[] = [];
  let listener: RouterListenerTls | undefined;
  if (files.listener !== null) {
    const { clientCertAuth, ...tlsFiles } = files.listener;
    const material = new TlsMaterial(tlsFiles, note);
    opened.push(material);
    listener = {
      clientCertAuth,
      material: () => material.material(),
      onReload: (l) => material.onReload(l),
      admit: (socket) => material.admit(socket),
    };
  }
  let upstream: ReloadableTls | undefined;
  const { certFile, keyFile, caFile } = files.upstream;
  if (certFile !== undefined && keyFile !== undefined) {
    const same = files.listener !== null && files.listener.certFile === certFile && files.listener.keyFile === keyFile && files.listener.caFile === caFile;
    const material = same ? (opened[0] as TlsMaterial) : new TlsMaterial({ certFile, keyFile, ...(caFile === undefined ? {} : { caFile }) }, note);
    if (!same) opened.push(material);
    upstream = { material: () => material.material(), onReload: (l) => material.onReload(l) };
  } else if (caFile !== undefined) {
    // Only a CA to trust (no client certificate): read once.
    let ca: Buffer;
    try {
      ca = readFileSync(caFile);
    } catch (error) {
      throw new ConfigError(`upstream CA file ${caFile}: ${(error as Error).message}`);
    }
    upstream = { material: () => ({ ca, minVersion: 'TLSv1.2' }), onReload: () => {} };
  }
  for (const material of opened) material.watch();
  return {
    tls: { ...(listener === undefined ? {} : { listener }), ...(upstream === undefined ? {} : { upstream }) },
    close: () => {
      for (const material of opened) material.close();
    },
  };
}

export async function routerCommand(args: readonly string[]): Promise<number> {
  let values;
  try {
    const options = Object.fromEntries(stringFlags.map((name) => [name, { type: 'string' as const }]));
    values = parseArgs({ args: [...args], options: { ...options, 'client-cert-auth': { type: 'boolean' }, help: { type: 'boolean', short: 'h' } }, strict: true }).values as
      Partial<Record<StringFlag, string>> & { 'client-cert-auth'?: boolean; help?: boolean };
  } catch (error) {
    console.error(`baton router: ${(error as Error).message}\n\n${usage}`);
    return 2;
  }
  if (values.help === true) {
    console.log(usage);
    return 0;
  }
  const flag = (name: StringFlag): string | undefined => {
    const value = values[name] ?? process.env[`BATON_ROUTER_${name.toUpperCase().replaceAll('-', '_')}`];
    return value === undefined || value === '' ? undefined : value;
  };
  const control = (flag('control') ?? '').split(',').map((u) => u.trim()).filter((u) => u !== '');
  let listen: URL;
  try {
    listen = new URL(flag('listen') ?? 'http://127.0.0.1:7000');
  } catch {
    console.error(`baton router: --listen must be a URL like http://127.0.0.1:7000\n\n${usage}`);
    return 2;
  }
  if (control.length === 0 || (listen.protocol !== 'http:' && listen.protocol !== 'https:')) {
    console.error(`baton router: needs --control URL,... and an http:// (or https://) --listen\n\n${usage}`);
    return 2;
  }
  let listenGrpc: URL | null = null;
  try {
    listenGrpc = flag('listen-grpc') === undefined ? null : new URL(flag('listen-grpc') as string);
  } catch {
    console.error(`baton router: --listen-grpc must be a URL like http://127.0.0.1:7200\n\n${usage}`);
    return 2;
  }
  // One set of TLS flags for both listeners: both are TLS or neither is.
  if (listenGrpc !== null && listenGrpc.protocol !== listen.protocol) {
    console.error(`baton router: --listen-grpc must use the scheme of --listen (${listen.protocol}//)\n\n${usage}`);
    return 2;
  }
  const envAuth = process.env['BATON_ROUTER_CLIENT_CERT_AUTH'];
  const clientCertAuth = values['client-cert-auth'] ?? (envAuth === 'true' || envAuth === '1');
  const log = (m: string): void => console.error(`router: ${m}`);
  let tls: { tls: RouterTls; close(): void };
  try {
    tls = loadRouterTls(routerTlsFiles(flag, clientCertAuth, listen), log);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(`baton router: ${error.message}`);
    return 2;
  }
  const defaultPort = listen.protocol === 'https:' ? 443 : 80;
  const router = new Router({ control, host: listen.hostname, port: Number(listen.port || defaultPort), log, tls: tls.tls });
  const { url } = await router.start();
  if (listenGrpc !== null) {
    const grpc = await RouterGrpc.start(router, {
      host: listenGrpc.hostname, port: Number(listenGrpc.port || defaultPort), log,
      ...(tls.tls.listener === undefined ? {} : { tls: tls.tls.listener }),
    });
    console.log(`Baton router etcd gRPC: ${grpc.url}`);
  }
  console.log(`Baton router ready: ${url} (control ${control.join(',')})`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  await router.stop();
  tls.close();
  return 0;
}
