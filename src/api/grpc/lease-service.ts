// etcd's Lease service over the node's LeaseApi. TTLs are whole seconds on etcd's wire. Like
// etcd, a TTL below the cell's minimum is raised to it and the answer says the TTL granted; a
// keepalive or time-to-live of an unknown lease answers TTL 0 / -1 (etcd's way), not an error.
import { status } from '@grpc/grpc-js';
import { LeaseNotFoundError } from '../../base/errors.js';
import type { LeaseApi } from '../../lease/api.js';
import { GrpcStatusError, etcdMessages, hasCode } from './errors.js';
import type { HeaderSource, ResponseHeader } from './header.js';
import { etcdKey } from './keys.js';
import { int } from './wire.js';

export interface LeaseBounds {
  readonly ttlMsMin: number;
  readonly ttlMsMax: number;
}

/** LeaseLeases lists at most this many leases (etcd has no bound; a big answer is refused). */
export const leaseListMax = 100_000;
const listPage = 1_000;

export class LeaseFacade {
  constructor(
    private readonly leases: LeaseApi,
    private readonly headers: HeaderSource,
    private readonly bounds: LeaseBounds,
  ) {}

  async grant(request: { TTL: string; ID: string }, principal: string): Promise<{ header: ResponseHeader; ID: string; TTL: string; error: string }> {
    const ttlSeconds = Number(request.TTL ?? 0);
    if (!Number.isSafeInteger(ttlSeconds)) throw new GrpcStatusError(status.OUT_OF_RANGE, etcdMessages.leaseTtlTooLarge);
    const ttlMs = Math.max(ttlSeconds * 1000, this.bounds.ttlMsMin);
    if (ttlMs > this.bounds.ttlMsMax) throw new GrpcStatusError(status.OUT_OF_RANGE, etcdMessages.leaseTtlTooLarge);
    const id = int(request.ID, 'lease ID');
    const granted = await this.leases.grant({ ttlMs, ...(id !== 0 ? { id } : {}) }, undefined, principal);
    return { header: this.headers.header(granted.revision), ID: String(granted.id), TTL: String(Math.ceil(granted.ttl)), error: '' };
  }

  async revoke(request: { ID: string }, principal: string): Promise<{ header: ResponseHeader }> {
    const id = leaseId(request.ID);
    const revoked = await this.leases.revoke(id, undefined, principal);
    return { header: this.headers.header(revoked.revision) };
  }

  /** One keepalive; TTL 0 when the lease is gone (etcd clients treat that as expired). */
  async keepalive(request: { ID: string }, principal: string): Promise<{ header: ResponseHeader; ID: string; TTL: string }> {
    const id = leaseIdOrZero(request.ID);
    if (id === 0) return { header: this.headers.header(), ID: String(request.ID ?? '0'), TTL: '0' };
    const answer = await this.leases.keepalive([id], false, principal);
    const item = answer.leases[0];
    const ttl = item !== undefined && 'ttl' in item ? Math.ceil(item.ttl) : 0;
    return { header: this.headers.header(answer.revision), ID: String(id), TTL: String(ttl) };
  }

  async timeToLive(request: { ID: string; keys: boolean }, principal: string): Promise<{
    header: ResponseHeader;
    ID: string;
    TTL: string;
    grantedTTL: string;
    keys: Buffer[];
  }> {
    const id = leaseIdOrZero(request.ID);
    try {
      if (id === 0) throw new LeaseNotFoundError('no such lease');
      const info = await this.leases.timeToLive(id, false, principal, request.keys === true);
      return {
        header: this.headers.header(info.revision),
        ID: String(id),
        TTL: String(info.ttl),
        grantedTTL: String(Math.ceil(info.grantedTtl)),
        keys: request.keys ? info.keys.map(etcdKey) : [],
      };
    } catch (error) {
      if (!hasCode(error, 'lease_not_found')) throw error;
      return { header: this.headers.header(), ID: String(request.ID ?? '0'), TTL: '-1', grantedTTL: '0', keys: [] };
    }
  }

  async list(principal: string): Promise<{ header: ResponseHeader; leases: { ID: string }[] }> {
    const ids: { ID: string }[] = [];
    let after = 0;
    let revision = 0;
    for (;;) {
      const page = await this.leases.list({ after, limit: listPage }, false, principal);
      revision = page.revision;
      for (const lease of page.leases) ids.push({ ID: String(lease.id) });
      if (ids.length > leaseListMax) throw new GrpcStatusError(status.INVALID_ARGUMENT, `${etcdMessages.tooLarge} (over ${leaseListMax} leases)`);
      const last = page.leases.at(-1);
      if (!page.more || last === undefined) break;
      after = last.id;
    }
    return { header: this.headers.header(revision), leases: ids };
  }
}

function leaseIdOrZero(value: string | undefined): number {
  const id = Number(value ?? 0);
  return Number.isSafeInteger(id) && id > 0 ? id : 0;
}

function leaseId(value: string | undefined): number {
  const id = leaseIdOrZero(value);
  if (id === 0) throw new GrpcStatusError(status.NOT_FOUND, etcdMessages.leaseNotFound);
  return id;
}
