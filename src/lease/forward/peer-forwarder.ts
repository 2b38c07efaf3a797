// Keepalive forwarding over the peer transport: a follower sends its clients' keepalives to the
// leader as `leases` frames on the Raft connection (src/transport/lease-frames.ts) and the
// leader answers the same way, so a forwarded renewal costs a few bytes in a frame that shares
// Raft's flush instead of an HTTP request. When the peer path cannot take a call right now (no
// connection to the leader yet, or it is backing off after a failure) the call goes over HTTP
// as before; time-to-live and list queries (rare, and answered with keys) always do.
import { BatonError, InvalidArgumentError, UnavailableError } from '../../base/errors.js';
import type { KeepaliveAnswer, KeepaliveItem, LeaseApi, LeaseForwarder, LeaseInfo, LeaseList } from '../api.js';
import type { MemberId } from '../../raft/index.js';
import { cellWork } from '../../mvcc/index.js';
import type { LeasePeerMessage } from '../../transport/index.js';
import { ForwardedError, HttpLeaseForwarder } from './http-forwarder.js';

/** What the forwarder needs from the transport (PeerTransport.sendLease). */
export interface LeaseFrameSender {
  sendLease(to: MemberId, message: LeasePeerMessage): boolean;
}

interface PendingCall {
  readonly resolve: (answer: KeepaliveAnswer) => void;
  readonly reject: (error: Error) => void;
  readonly timer: NodeJS.Timeout;
  readonly leader: MemberId;
}

export class PeerLeaseForwarder implements LeaseForwarder {
  private nextCallId = 1;
  private readonly pending = new Map<number, PendingCall>();
  private readonly http: HttpLeaseForwarder;
  /** Calls sent as frames and over HTTP (metrics and tests). */
  readonly counts = { frames: 0, http: 0, served: 0 };

  constructor(
    members: readonly { readonly id: MemberId; readonly clientUrl: string }[],
    private readonly transport: LeaseFrameSender,
  ) {
    this.http = new HttpLeaseForwarder(members);
  }

  keepalive(leader: MemberId, ids: readonly number[], timeoutMs: number): Promise<KeepaliveAnswer> {
    const transport = this.transport;
    // Call ids wrap within u32; one in flight per id at a time (keepalivesInFlightMax bounds it).
    const callId = this.nextCallId;
    this.nextCallId = this.nextCallId >= 0xffff_ffff ? 1 : this.nextCallId + 1;
    if (this.pending.has(callId) || !transport.sendLease(leader, { op: 'keepalive', callId, ids })) {
      this.counts.http++;
      return this.http.keepalive(leader, ids, timeoutMs);
    }
    this.counts.frames++;
    return new Promise<KeepaliveAnswer>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(callId);
        reject(new UnavailableError(`the leader ${leader} did not answer a keepalive in time`, { leader }));
      }, timeoutMs);
      this.pending.set(callId, { resolve, reject, timer, leader });
    });
  }

  timeToLive(leader: MemberId, id: number, timeoutMs: number): Promise<LeaseInfo> {
    return this.http.timeToLive(leader, id, timeoutMs);
  }

  list(leader: MemberId, request: { after: number; limit: number }, timeoutMs: number): Promise<LeaseList> {
    return this.http.list(leader, request, timeoutMs);
  }

  /** A lease frame from member `from` (the transport's onLeaseMessage); `leases` answers requests. */
  receive(from: MemberId, message: LeasePeerMessage, server: LeaseApi): void {
    if (message.op === 'keepalive') {
      this.serve(from, message.callId, message.ids, server);
      return;
    }
    const call = this.pending.get(message.callId);
    // A late answer (the caller timed out) or one from a member we did not ask is dropped.
    if (call === undefined || call.leader !== from) return;
    this.pending.delete(message.callId);
    clearTimeout(call.timer);
    if (message.op === 'error') {
      call.reject(new ForwardedError(message.code, message.message, { leader: from }));
      return;
    }
    const leases: KeepaliveItem[] = message.leases.map((lease) =>
      lease.ttlMs === null ? { id: lease.id, error: 'lease_not_found' } : { id: lease.id, ttl: lease.ttlMs / 1000 },
    );
    call.resolve({ revision: message.revision, leases });
  }

  /** Fails every waiting call (the node is stopping). */
  stop(): void {
    for (const call of this.pending.values()) {
      clearTimeout(call.timer);
      call.reject(new UnavailableError('the node is stopping'));
    }
    this.pending.clear();
  }

  /** The leader's side: renew and answer on our own connection to the caller. */
  private serve(from: MemberId, callId: number, ids: readonly number[], leases: LeaseApi): void {
    const transport = this.transport;
    this.counts.served++;
    const answer = (message: LeasePeerMessage): void => void transport.sendLease(from, message);
    if (ids.length === 0 || ids.length > leases.keepaliveIdsMax || !ids.every((id) => id >= 1)) {
      const error = new InvalidArgumentError(`1 to ${leases.keepaliveIdsMax} lease IDs >= 1 per keepalive`);
      answer({ op: 'error', callId, code: error.code, message: error.message });
      return;
    }
    leases.keepalive(ids, true, cellWork).then(
      (result) =>
        answer({
          op: 'answer',
          callId,
          revision: result.revision,
          leases: result.leases.map((item) => ({ id: item.id, ttlMs: 'ttl' in item ? Math.round(item.ttl * 1000) : null })),
        }),
      (error: unknown) => {
        const code = error instanceof BatonError ? error.code : 'unavailable';
        answer({ op: 'error', callId, code, message: error instanceof Error ? error.message : String(error) });
      },
    );
  }
}
