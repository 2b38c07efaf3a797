// The WebSocket handshake of GET /v1/stream, checked before `ws` sees it: every refusal is a
// JSON error with the headers every answer carries (Baton-Revision, Baton-Cell), never the
// library's text/html. The checks are the ones `ws` makes (RFC 6455 section 4.2.1), so a request
// that passes them is never refused by it; its own refusals (wsClientError) still answer JSON.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { InvalidArgumentError, type BatonError } from '../../base/errors.js';
import { answerOnSocket, type ServerHookContext } from '../http/server-hooks.js';

/** 16 random bytes, base64: what RFC 6455 requires of Sec-WebSocket-Key. */
const keyPattern = /^[+/0-9A-Za-z]{22}==$/;
/** A comma-separated list of RFC 7230 tokens (Sec-WebSocket-Protocol). */
const protocolsPattern = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+(?:[ \t]*,[ \t]*[!#$%&'*+\-.^_`|~0-9A-Za-z]+)*$/;

export const supportedVersions = ['13', '8'] as const;

/** The reason the handshake is refused (an error to answer), or null when `ws` may take it. */
export function handshakeProblem(req: IncomingMessage): InvalidArgumentError | null {
  if (req.method !== 'GET') return new InvalidArgumentError(`the stream handshake is a GET, not ${req.method ?? '?'}`);
  const upgrade = req.headers.upgrade;
  if (upgrade === undefined || upgrade.toLowerCase() !== 'websocket') {
    return new InvalidArgumentError(`/v1/stream upgrades to websocket only, not "${String(upgrade).slice(0, 64)}"`, {
      header: 'Upgrade',
    });
  }
  const key = req.headers['sec-websocket-key'];
  if (key === undefined || !keyPattern.test(key)) {
    return new InvalidArgumentError('missing or invalid Sec-WebSocket-Key header (16 bytes, base64)', {
      header: 'Sec-WebSocket-Key',
    });
  }
  const version = req.headers['sec-websocket-version'];
  if (!(supportedVersions as readonly (string | undefined)[]).includes(version)) {
    return new InvalidArgumentError(`unsupported Sec-WebSocket-Version "${String(version).slice(0, 16)}" (13 or 8)`, {
      header: 'Sec-WebSocket-Version',
      supported: [...supportedVersions],
    });
  }
  const protocols = req.headers['sec-websocket-protocol'];
  if (protocols !== undefined && !protocolsPattern.test(protocols)) {
    return new InvalidArgumentError('invalid Sec-WebSocket-Protocol header', { header: 'Sec-WebSocket-Protocol' });
  }
  return null;
}

/** Answers an upgrade request with a JSON error and closes the connection once it is written. */
export function refuseUpgrade(socket: Duplex, context: ServerHookContext, error: BatonError): void {
  const versions: Record<string, string> = error.details['header'] === 'Sec-WebSocket-Version' ? { 'sec-websocket-version': supportedVersions.join(', ') } : {};
  answerOnSocket(socket, context, error, versions);
}
