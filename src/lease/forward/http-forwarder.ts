// Followers pass keepalives and time-to-live queries to the leader (renewals never go through
// the log, and only the leader holds deadlines). The leader's answer, or its error, is passed
// back unchanged. LeaseForwarder is the door; HttpLeaseForwarder uses the leader's client HTTP
// API (member client URLs come from the initial cluster).
import { BatonError, UnavailableError, wireCode, type ErrorCode, type UnknownCode } from '../../base/errors.js';
import { forwardedHeader, type KeepaliveAnswer, type LeaseForwarder, type LeaseInfo, type LeaseList } from '../api.js';
import type { MemberId } from '../../raft/index.js';


export class HttpLeaseForwarder implements LeaseForwarder {
  constructor(private readonly members: readonly { readonly id: MemberId; readonly clientUrl: string }[]) {}

  async keepalive(leader: MemberId, ids: readonly number[], timeoutMs: number): Promise<KeepaliveAnswer> {
    const request = { method: 'POST' as const, path: '/v1/leases/keepalive', body: { ids }, timeoutMs };
    return (await forwardToLeader(this.urlOf(leader), request)) as KeepaliveAnswer;
  }

  async timeToLive(leader: MemberId, id: number, timeoutMs: number): Promise<LeaseInfo> {
    return (await forwardToLeader(this.urlOf(leader), { method: 'GET', path: `/v1/leases/${id}`, timeoutMs })) as LeaseInfo;
  }

  async list(leader: MemberId, request: { after: number; limit: number }, timeoutMs: number): Promise<LeaseList> {
    const path = `/v1/leases?after=${request.after}&limit=${request.limit}`;
    return (await forwardToLeader(this.urlOf(leader), { method: 'GET', path, timeoutMs })) as LeaseList;
  }

  private urlOf(leader: MemberId): string {
    const member = this.members.find((m) => m.id === leader);
    if (member === undefined) throw new UnavailableError(`leader ${leader} has no known client URL`);
    return member.clientUrl;
  }
}

/** An error answered by the leader, passed on with its code (the table maps it to a status). */
export class ForwardedError extends BatonError {
  readonly code: ErrorCode | UnknownCode;
  override readonly retryable: boolean;
  constructor(code: string, message: string, details: Record<string, unknown>) {
    super(message, details);
    this.code = wireCode(code);
    this.retryable = ['overloaded', 'unavailable', 'timeout', 'quota_exceeded'].includes(code);
  }
}

export async function forwardToLeader(
  leaderUrl: string,
  request: { method: 'GET' | 'POST'; path: string; body?: unknown; timeoutMs: number },
): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(new URL(request.path, leaderUrl), {
      method: request.method,
      headers: { 'content-type': 'application/json', [forwardedHeader]: '1' },
      ...(request.body !== undefined ? { body: JSON.stringify(request.body) } : {}),
      signal: AbortSignal.timeout(request.timeoutMs),
    });
  } catch (error) {
    throw new UnavailableError(`the leader at ${leaderUrl} did not answer: ${(error as Error).message}`);
  }
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new UnavailableError(`the leader at ${leaderUrl} answered ${res.status} without JSON`);
  }
  if (res.ok) return body;
  const error = (body as { error?: { code?: unknown; message?: unknown } }).error;
  const { code, message, ...details } = (error ?? {}) as Record<string, unknown>;
  if (typeof code !== 'string') throw new UnavailableError(`the leader answered ${res.status}`);
  throw new ForwardedError(code, typeof message === 'string' ? message : code, details);
}
