// Mutual TLS between members, and node identity before replication (issue 25): every peer
// connection is TLS with certificates from the peer CA on both sides, and a certificate must name
// the member it speaks for, as a URI SAN `baton://<cell>/<member-name>` (docs/security.md). The
// listener checks the caller's certificate against the member its handshake claims before any
// Raft message or snapshot byte is taken; the dialler checks the listener's certificate against
// the member it meant to reach before anything is sent. Without PeerTls the transport is plain TCP.
import { connect as connectTcp, type Socket } from 'node:net';
import { connect as connectTls, type PeerCertificate, type SecureContext, type SecureContextOptions, type TLSSocket } from 'node:tls';
import type { MemberId } from '../raft/index.js';
import type { PeerAddress } from './types.js';

export interface PeerTls {
  /** The current key, certificate and peer CA (replaced on reload: new connections use them). */
  context(): SecureContext;
  material(): SecureContextOptions;
  /** Called after a reload replaced the material (the listener takes it for new connections). */
  onReload(listener: () => void): void;
  /** A listener's new connection, before any frame: false (socket destroyed) when its certificate is revoked. */
  admit?(socket: TLSSocket): boolean;
  /** Why a certificate (DER) is revoked by the peer CA's list, or null. */
  revocationOf?(raw: Buffer | undefined): string | null;
  /** The identity member `id` must present, or null when this node knows no such member. */
  identityOf(id: MemberId): string | null;
}

/** The URI SAN that names member `name` of cell `cell`. */
export function peerIdentity(cell: string, name: string): string {
  return `baton://${cell}/${name}`;
}

/** The URI SANs of a certificate (`subjectaltname` "URI:a, DNS:b, ..."). */
export function certificateUris(cert: PeerCertificate | null | undefined): string[] {
  const names = cert?.subjectaltname ?? '';
  return names.split(/,\s*/).filter((entry) => entry.startsWith('URI:')).map((entry) => entry.slice(4));
}

/** Why the certificate does not prove it speaks for member `id`, or null when it does. */
export function identityRefusal(tls: PeerTls, id: MemberId, cert: PeerCertificate | null | undefined): string | null {
  const expected = tls.identityOf(id);
  if (expected === null) return `no identity is known for member ${id}`;
  const uris = certificateUris(cert);
  if (uris.includes(expected)) return null;
  return `the peer certificate names ${uris.length === 0 ? 'no baton:// identity' : uris.join(', ')}, not ${expected} (member ${id})`;
}

/** A connection to a peer: the socket, and the event after which it may be written to. */
export interface Dialled {
  readonly socket: Socket;
  readonly readyEvent: 'connect' | 'secureConnect';
}

/**
 * Dials member `to`. With TLS the listener's certificate must chain to the peer CA and name `to`;
 * otherwise the handshake fails (the socket errors) before a byte of ours is written.
 */
export function dialPeer(address: PeerAddress, to: MemberId, tls: PeerTls | undefined): Dialled {
  if (tls === undefined) return { socket: connectTcp({ ...address, noDelay: true }), readyEvent: 'connect' };
  const socket: TLSSocket = connectTls({
    host: address.host,
    port: address.port,
    secureContext: tls.context(),
    minVersion: 'TLSv1.2',
    rejectUnauthorized: true,
    // Members are named by their certificate's baton:// URI, not by host name.
    checkServerIdentity: (_host, cert) => {
      const refusal = identityRefusal(tls, to, cert) ?? tls.revocationOf?.(cert.raw) ?? null;
      return refusal === null ? undefined : new Error(refusal);
    },
  });
  // Cut later too, should a reloaded revocation list name the listener's certificate.
  socket.once('secureConnect', () => tls.admit?.(socket));
  socket.setNoDelay(true);
  return { socket, readyEvent: 'secureConnect' };
}
