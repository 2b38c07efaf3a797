// Who is asking, as every edge (HTTP, the stream, the gRPC facade, the gateway) reads it: the
// common name of the client certificate the TLS handshake verified (etcd's --client-cert-auth
// reads the same), else '' (anonymous). Tokens (etcd's Authenticate) come next. A connection's
// certificate cannot change, so the name is read once per socket.
//
// A member of the cell itself (its certificate names `baton://<cell>/<member>`, the node identity
// the peer transport checks) calling a member's client port is the cell forwarding a request it
// has already decided (a lease lookup, a membership change sent on to the leader): it acts as root.
// A member of another cell (the control plane pushing ownership tables, counting keys, moving a
// namespace) is the principal `cell:<its cell>`, never its bare common name: member names repeat
// from cell to cell (n1 ...) and could be a user's name, and a policy binds the control plane by
// its cell (`"cell:control": ["root"]`; docs/security.md "The router"). A certificate without a
// member identity cannot claim that form: a common name `cell:...` alone names nobody.
import type { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';

export const anonymous = '';
/** The principal that may do everything (src/auth's rootName). */
const root = 'root';
/** A member certificate's URI, baton://<cell>/<member> (the peer identity); `principal` is a client's. */
const memberUri = /^URI:baton:\/\/([^/]+)\/[^/]+$/;
const cellPrincipalPrefix = 'cell:';

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
  const memberOf = memberCellOf(certificate?.subjectaltname ?? '');
  if (memberOf !== null) return memberOf === ownCell ? root : `${cellPrincipalPrefix}${memberOf}`;
  const subject = certificate?.subject as { CN?: string | string[] } | undefined;
  const cn = subject?.CN;
  const name = Array.isArray(cn) ? cn[0] : cn;
  if (typeof name !== 'string' || name.length === 0 || name.startsWith(cellPrincipalPrefix)) return anonymous;
  return name;
}

/** The cell a member certificate's identity URI names, or null (a client's certificate). */
function memberCellOf(subjectAltName: string): string | null {
  for (const entry of subjectAltName.split(',')) {
    const cell = memberUri.exec(entry.trim())?.[1];
    if (cell !== undefined && cell !== 'principal') return cell;
  }
  return null;
}
