// The node's TLS material (tls-config.ts flags → security/tls-files.ts), read once at start so a
// bad file stops the node before it listens, then reloaded on SIGHUP or file change.
import { createRequire } from 'node:module';
import type { MemberId } from '../raft/index.js';
import { TlsMaterial } from '../security/tls-files.js';
import { peerIdentity, type PeerTls } from '../transport/index.js';
import type { NodeConfig } from './config.js';

export interface NodeTls {
  readonly client: TlsMaterial | null;
  /** --client-cert-auth: the client listeners require a certificate from the trusted CA. */
  readonly clientCertAuth: boolean;
  readonly peer: TlsMaterial | null;
  close(): void;
}

export function loadNodeTls(config: NodeConfig, log: { info(message: string): void; warn(message: string): void }): NodeTls {
  const note = (message: string, level: 'info' | 'warn'): void => (level === 'warn' ? log.warn(message) : log.info(message));
  const client = config.clientTls === null ? null
    : new TlsMaterial({
      certFile: config.clientTls.certFile, keyFile: config.clientTls.keyFile,
      ...(config.clientTls.caFile === undefined ? {} : { caFile: config.clientTls.caFile }),
      ...(config.clientTls.crlFile === undefined ? {} : { crlFile: config.clientTls.crlFile }),
    }, note);
  const peer = config.peerTls === null ? null
    : new TlsMaterial({
      certFile: config.peerTls.certFile, keyFile: config.peerTls.keyFile, caFile: config.peerTls.caFile,
      ...(config.peerTls.crlFile === undefined ? {} : { crlFile: config.peerTls.crlFile }),
    }, note);
  client?.watch();
  peer?.watch();
  if (client !== null) {
    // A member calls others' client APIs (leader forwarding of membership changes and lease
    // keepalives, the corruption check, a joiner's discovery) with fetch: over TLS it trusts the
    // client CA and presents its own certificate, which --client-cert-auth requires.
    // undici is loaded here, only on a TLS member: it is a sixth of a plain node's start-up.
    const { Agent, setGlobalDispatcher } = createRequire(import.meta.url)('undici') as typeof import('undici');
    const dispatch = (): void => {
      const { cert, key, ca } = client.material();
      setGlobalDispatcher(new Agent({ connect: { cert, key, ...(ca === undefined ? {} : { ca }) } as never }));
    };
    dispatch();
    client.onReload(dispatch);
  }
  return {
    client,
    clientCertAuth: config.clientTls?.clientCertAuth === true,
    peer,
    close() {
      client?.close();
      peer?.close();
    },
  };
}

/** The transport's view of the peer material: a member must present baton://<cell>/<its name>. */
export function peerTlsOf(material: TlsMaterial, cell: string, nameOf: (id: MemberId) => string | undefined): PeerTls {
  return {
    context: () => material.context(),
    material: () => material.material(),
    onReload: (listener) => material.onReload(listener),
    admit: (socket) => material.admit(socket),
    revocationOf: (raw) => material.revocationOfRaw(raw),
    identityOf: (id) => {
      const name = nameOf(id);
      return name === undefined ? null : peerIdentity(cell, name);
    },
  };
}
