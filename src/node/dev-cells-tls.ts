// TLS for `baton dev --cells N --secure` (docs/security.md "The router"): one throwaway CA in
// DIR/certs for the control plane, every data cell and the router, made as `baton dev --secure`
// makes it (security/certs.ts, openssl), with one revocation list that every member and the
// router read. The members' files are `<cell>-<name>.pem` there (ProcessCell's tlsFilesByCell).
// The router gets a listener certificate (the loopback names) and a client certificate
// (`client-router.pem`, principal "router") to present to the cells: never a member's, which
// would act as root on its cell.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { RouterTls } from '../router/router-tls.js';
import { ensureCa, issueCert, issueClientCert, writeCrl, type CertAuthority, type CertFiles } from '../security/certs.js';
import { TlsMaterial } from '../security/tls-files.js';

export interface DevCellsTls {
  readonly dir: string;
  readonly ca: CertAuthority;
  /** The revocation list (`baton certs revoke FILE --dir DIR` rewrites it; everyone reloads it). */
  readonly crl: string;
  /** What the router presents to the cells (its principal on them: "router"). */
  readonly routerClient: CertFiles;
  /** The router's listener (HTTPS, wss://, gRPC: client certificates required) and upstream side. */
  readonly router: RouterTls;
  /** Stops watching the router's files for reloads. */
  close(): void;
}

export function devCellsTls(dir: string, log: (message: string) => void): DevCellsTls {
  const ca = ensureCa(dir);
  const crl = join(dir, 'crl.pem');
  if (!existsSync(crl)) writeCrl(ca, crl);
  const serving = issueCert(ca, { name: 'router-listener', commonName: 'router', altNames: ['IP:127.0.0.1', 'DNS:localhost'], usage: 'server+client' });
  const routerClient = issueClientCert(ca, 'router');
  const listener = new TlsMaterial({ certFile: serving.cert, keyFile: serving.key, caFile: ca.cert, crlFile: crl }, log);
  const upstream = new TlsMaterial({ certFile: routerClient.cert, keyFile: routerClient.key, caFile: ca.cert }, log);
  listener.watch();
  upstream.watch();
  return {
    dir,
    ca,
    crl,
    routerClient,
    router: {
      // As the members' client listeners (CellTls.flags): a certificate from the CA is required.
      listener: {
        clientCertAuth: true,
        material: () => listener.material(),
        onReload: (reloaded) => listener.onReload(reloaded),
        admit: (socket) => listener.admit(socket),
      },
      upstream: { material: () => upstream.material(), onReload: (reloaded) => upstream.onReload(reloaded) },
    },
    close: () => {
      listener.close();
      upstream.close();
    },
  };
}
