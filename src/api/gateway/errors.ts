// etcd's gateway errors as grpc-gateway v1 (the version etcd 3.4 ships) writes them: the gRPC
// status code picks the HTTP status, a unary call answers {"error","message","code"}, a stream
// that fails after it started writes one {"error":{"grpc_code","http_code","message",
// "http_status"}} line. etcd clients over HTTP branch on `code` and on etcd's message text.
import { STATUS_CODES } from 'node:http';
import { status } from '@grpc/grpc-js';

/** A request the gateway cannot turn into a message (bad JSON, a field of the wrong type). */
export class GatewayInputError extends Error {}

/** grpc-gateway v1's HTTPStatusFromCode. */
export function httpStatusOf(code: number): number {
  switch (code) {
    case status.OK: return 200;
    case status.CANCELLED: return 408;
    case status.UNKNOWN: return 500;
    case status.INVALID_ARGUMENT: return 400;
    case status.DEADLINE_EXCEEDED: return 504;
    case status.NOT_FOUND: return 404;
    case status.ALREADY_EXISTS: return 409;
    case status.PERMISSION_DENIED: return 403;
    case status.UNAUTHENTICATED: return 401;
    case status.RESOURCE_EXHAUSTED: return 429;
    case status.FAILED_PRECONDITION: return 400;
    case status.ABORTED: return 409;
    case status.OUT_OF_RANGE: return 400;
    case status.UNIMPLEMENTED: return 501;
    case status.INTERNAL: return 500;
    case status.UNAVAILABLE: return 503;
    case status.DATA_LOSS: return 500;
    default: return 500;
  }
}

export interface GatewayStatus {
  readonly code: number;
  readonly details: string;
  /** The node's Retry-After, when it gave one (#28): the answer's Retry-After header. */
  readonly retryAfterSeconds?: number;
}

/** The body of a failed unary call. */
export function unaryErrorBody(failure: GatewayStatus): string {
  return JSON.stringify({ error: failure.details, message: failure.details, code: failure.code });
}

/** The line a stream ends with when it fails. */
export function streamErrorLine(failure: GatewayStatus): string {
  const httpCode = httpStatusOf(failure.code);
  return `${JSON.stringify({
    error: { grpc_code: failure.code, http_code: httpCode, message: failure.details, http_status: STATUS_CODES[httpCode] ?? '' },
  })}\n`;
}
