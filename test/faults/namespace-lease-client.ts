// The lock workload's client in a run across cells. A lock's lease must live on the cell that
// owns the lock's queue, and through a router a lease call goes where `Baton-Namespace` says
// (without it: the root's cell). The client library does not send that header on lease calls, so
// this client sends its lease grant, keepalive and revoke itself, to the router with the lock's
// namespace, retrying a lost answer with one Request-ID; everything else is the library's.
// After a move the keepalives follow the namespace to the new owner, where the lease exists when
// a key of it (the lock's queue entry) moved with the namespace, else it is answered as gone.
// Lease ids are per cell (each cell counts its own from 1), so the history names a lease by its
// id and the cell that granted it (`historyLeaseId`): the checkers key leases by that name.
import { randomUUID } from 'node:crypto';
import {
  BatonClient,
  errorFromHttp,
  type ClientOptions,
  type LeaseGrant,
  type LeaseKeepaliveResult,
  type LeaseRevokeResult,
  type MutationOptions,
} from '../../src/client/index.js';
import { http, sleep } from '../cluster/harness.js';

const attemptsMax = 4;

export class NamespaceLeaseClient extends BatonClient {
  constructor(
    private readonly routerUrl: string,
    private readonly namespace: string,
    options: ClientOptions,
  ) {
    super(options);
  }

  override async leaseGrant(ttlSeconds: number, options: MutationOptions & { id?: number } = {}): Promise<LeaseGrant> {
    const body = { ttl: ttlSeconds, ...(options.id !== undefined ? { id: options.id } : {}) };
    const answer = await this.call('POST', '/v1/leases', body, options.requestId ?? randomUUID());
    return { ...(answer.body as LeaseGrant), cell: answer.cell } as LeaseGrant;
  }

  override async leaseKeepalive(ids: readonly number[]): Promise<LeaseKeepaliveResult> {
    return (await this.call('POST', '/v1/leases/keepalive', { ids }, randomUUID())).body as LeaseKeepaliveResult;
  }

  override async leaseRevoke(id: number, options: MutationOptions = {}): Promise<LeaseRevokeResult> {
    return (await this.call('DELETE', `/v1/leases/${id}`, undefined, options.requestId ?? randomUUID())).body as LeaseRevokeResult;
  }

  /** One call, retried on no answer, 503 or 504 with the same Request-ID; else the answer's error. */
  private async call(method: string, path: string, body: unknown, requestId: string): Promise<{ body: unknown; cell: string }> {
    let last: Error = new Error('no attempt');
    for (let attempt = 0; attempt < attemptsMax; attempt++) {
      if (attempt > 0) await sleep(200);
      const headers: Record<string, string> = { 'baton-namespace': this.namespace, 'request-id': requestId };
      if (body !== undefined) headers['content-type'] = 'application/json';
      const answer = await http(`${this.routerUrl}${path}`, {
        method, headers, timeoutMs: 1_500, ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      }).catch((error: unknown) => error as Error);
      if (answer instanceof Error) {
        last = answer;
        continue;
      }
      if (answer.status >= 200 && answer.status < 300) return { body: answer.body, cell: answer.headers.get('baton-cell') ?? '?' };
      last = errorFromHttp(answer.status, JSON.stringify(answer.body));
      if (answer.status !== 503 && answer.status !== 504) break;
    }
    throw last;
  }
}

/** `45@cell-1`: a lease's name in the history of a run across cells (ids repeat across cells). */
export function historyLeaseId(grant: LeaseGrant): string {
  return `${grant.id}@${(grant as LeaseGrant & { cell?: string }).cell ?? '?'}`;
}
