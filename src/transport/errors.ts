// Typed errors of the transport. Bytes from the network are input, not invariants: anything
// malformed is a TransportError (the connection is dropped and the peer reconnects), never an
// AssertionError and never a half-decoded message.
export const TransportErrorReason = {
  /** A length, count or offset points past the end of the frame or exceeds a limit. */
  truncated: 'truncated',
  tooLarge: 'tooLarge',
  /** The frame's CRC-32 does not match its body. */
  checksum: 'checksum',
  /** A field holds a value no encoder produces (unknown type tag, boolean not 0/1, ...). */
  invalidValue: 'invalidValue',
  /** The frame decoded but bytes were left over. */
  trailingBytes: 'trailingBytes',
  /** Handshake refused: another cluster, an unknown member, a wrong version or addressee. */
  rejected: 'rejected',
  /** A frame arrived that this connection's state does not allow (protocol violation). */
  unexpectedFrame: 'unexpectedFrame',
  /** The connection closed or timed out before the exchange completed. */
  disconnected: 'disconnected',
} as const;
export type TransportErrorReason = (typeof TransportErrorReason)[keyof typeof TransportErrorReason];

export class TransportError extends Error {
  override name = 'TransportError';
  constructor(
    readonly reason: TransportErrorReason,
    message: string,
    readonly offset = -1,
  ) {
    super(offset >= 0 ? `${reason} at byte ${offset}: ${message}` : `${reason}: ${message}`);
  }
}
