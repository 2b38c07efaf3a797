// Who is asking, as every edge (HTTP, the stream, the gRPC facade, the gateway) reads it: the
// common name of the client certificate the TLS handshake verified (etcd's --client-cert-auth
// reads the same), else '' (anonymous). Tokens (etcd's Authenticate) come next. A connection's
// certificate cannot change, so the name is read once per socket.
//
// A member of the cell itself (its certificate names `baton://<cell>/<member>`, the node identity
// the peer transport checks) calling a member's client port is the cell forwarding a request it
// has already decided (a lease lookup, a membership change sent on to the leader): it acts as root.
import type { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';

export const anonymous = '';
/** The principal that may do everything (src/auth's rootName). */
const root = 'root';

const bySocket = new WeakMap<Socket, string>();

/** `ownCell`: the cell whose members act as root here (the native API's port, where members forward). */
export function principalOfSocket(socket: Socket, ownCell?: string): string {
  const known = bySocket.get(socket);
  if (known !== undefined) return known;
  const principal = certificateName(socket, ownCell);
  bySocket.set(socket, principal);
  return principal;
}

function certificateName(socket: Socket, ownCell: string | undefined): string {
  // Only a certificate the handshake verified against the trusted CA names anyone.
  if (!(socket instanceof TLSSocket) || !socket.authorized) return anonymous;
  const certificate = socket.getPeerCertificate();
  if (ownCell !== undefined && ownCell !== 'principal') {
    const uris = (certificate?.subjectaltname ?? '').split(',').map((name) => name.trim());
    if (uris.some((name) => name.startsWith(`URI:baton://${ownCell}/`))) return root;
  }
  const subject = certificate?.subject as { CN?: string | string[] } | undefined;
  const cn = subject?.CN;
  const name = Array.isArray(cn) ? cn[0] : cn;
  return typeof name === 'string' && name.length > 0 ? name : anonymous;
}
