// etcd's Cluster.MemberAdd/Promote/Remove/Update over Baton's membership (src/membership): the
// same changes as `baton member add|promote|remove` (POST/DELETE /v1/cluster/members). Changes
// are made by the leader; a follower passes the request to the leader's member routes, as those
// routes do themselves, then reads linearizably so the members it answers include the change.
// Errors carry etcd's words (rpctypes) where etcd clients match them.
import { status } from '@grpc/grpc-js';
import { BatonError, InvalidArgumentError, UnavailableError, wireCode, type ErrorCode, type UnknownCode } from '../../base/errors.js';
import type { Membership, MemberView, NewMember } from '../../membership/membership.js';
import { memberNamePattern, memberUrlBytesMax } from '../../membership/member-directory.js';
import { etcdMember, type EtcdMember } from './cluster-service.js';
import { GrpcStatusError } from './errors.js';
import type { HeaderSource, ResponseHeader } from './header.js';

export type MemberChanges = Pick<Membership, 'members' | 'leaderClientUrl' | 'add' | 'promote' | 'remove' | 'isSelf' | 'handOffLeadership'>;

export interface MemberAccess {
  readonly membership: MemberChanges;
  linearizableRead(): Promise<void>;
}

/** etcd's rpctypes strings for membership (etcd 3.4 api/v3rpc/rpctypes/error.go). */
export const etcdMemberMessages = {
  notFound: 'etcdserver: member not found',
  peerUrlExists: 'etcdserver: Peer URLs already exists',
  badUrls: 'etcdserver: given member URLs are invalid',
  notLearner: 'etcdserver: can only promote a learner member',
  learnerNotReady: 'etcdserver: can only promote a learner member which is in sync with leader',
  tooManyLearners: 'etcdserver: too many learner members in cluster',
  notEnoughStarted: 'etcdserver: re-configuration failed due to not enough started members',
} as const;

const membersPath = '/v1/cluster/members';
const forwardedHeader = 'baton-forwarded';
const forwardTimeoutMs = 30_000;
const leaderWaitMs = 5_000;

interface Answer {
  header: ResponseHeader;
  members: EtcdMember[];
}

export class MemberFacade {
  constructor(
    private readonly access: MemberAccess,
    private readonly headers: HeaderSource,
    private readonly grpcUrls: ReadonlyMap<string, string>,
  ) {}

  async add(request: { peerURLs?: string[]; isLearner?: boolean }): Promise<Answer & { member: EtcdMember }> {
    if (request.isLearner !== true) {
      // Baton's only way in is as a learner (a voter that has not caught up would weaken the quorum).
      throw new GrpcStatusError(status.FAILED_PRECONDITION,
        'etcdserver: Baton adds members as learners only: use `member add --learner`, then `member promote` once it has caught up');
    }
    const peerUrl = onePeerUrl(request.peerURLs);
    // etcd's MemberAdd names neither the member nor its client URL (the member publishes both when
    // it starts); Baton names it after its peer URL, and its client URL stays unknown ('').
    const input: NewMember = { name: nameFor(peerUrl), peerUrl, clientUrl: '' };
    const added = await this.change(
      () => this.access.membership.add(input).then((answer) => answer.member),
      { method: 'POST', path: membersPath, body: JSON.stringify(input) },
    );
    return { ...(await this.members()), member: this.view(added) };
  }

  async promote(request: { ID?: string }): Promise<Answer> {
    const id = memberId(request.ID);
    await this.change(() => this.access.membership.promote(id), { method: 'POST', path: `${membersPath}/${id}/promote` });
    return this.members();
  }

  async remove(request: { ID?: string }): Promise<Answer> {
    const id = memberId(request.ID);
    const { membership } = this.access;
    const forward = { method: 'DELETE' as const, path: `${membersPath}/${id}` };
    if (membership.isSelf(id)) {
      // This member leaves: it cannot read linearizably any more (it stops once it applies the
      // removal), so the answer is the members it knows less itself. As the leader it hands
      // leadership over first, then the new leader makes the change (as the member route does).
      if (membership.leaderClientUrl() === '') await this.translated(() => membership.handOffLeadership());
      await this.translated(() => this.viaLeader(forward));
      const rest = membership.members().filter((m) => m.id !== id);
      return { header: this.headers.header(), members: rest.map((m) => this.view(m)) };
    } else {
      try {
        await this.change(() => membership.remove(id), forward);
      } catch (error) {
        // The leader removing itself hands leadership over and asks for a retry: the new leader takes it.
        if (!(error instanceof LeaderMemberError) || error.code !== 'unavailable') throw error;
        await this.leaderKnown();
        await this.change(() => membership.remove(id), forward);
      }
    }
    return this.members();
  }

  /**
   * Baton keeps one peer URL per member and has no change that moves it: the same URL is answered
   * as done, another is refused (remove the member and add it again).
   */
  async update(request: { ID?: string; peerURLs?: string[] }): Promise<Answer> {
    const id = memberId(request.ID);
    const peerUrl = onePeerUrl(request.peerURLs);
    await this.access.linearizableRead();
    const members = this.access.membership.members();
    const member = members.find((m) => m.id === id);
    if (member === undefined) throw new GrpcStatusError(status.NOT_FOUND, etcdMemberMessages.notFound);
    if (member.peerUrl !== peerUrl) {
      if (members.some((m) => m.peerUrl === peerUrl)) throw new GrpcStatusError(status.FAILED_PRECONDITION, etcdMemberMessages.peerUrlExists);
      throw new GrpcStatusError(status.FAILED_PRECONDITION,
        `etcdserver: Baton does not move a member to another peer URL (member ${id} keeps ${member.peerUrl}): remove it and add it again`);
    }
    return this.members();
  }

  /** Waits (a few election timeouts at most) until some leader is known, after a hand-over. */
  private async leaderKnown(): Promise<void> {
    const deadline = performance.now() + leaderWaitMs;
    while (this.access.membership.leaderClientUrl() === null && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  private async members(): Promise<Answer> {
    await this.access.linearizableRead();
    return { header: this.headers.header(), members: this.access.membership.members().map((m) => this.view(m)) };
  }

  private view(member: MemberView): EtcdMember {
    return etcdMember(member, this.grpcUrls.get(member.name));
  }

  /** On the leader: the change itself; elsewhere: the leader's member route. */
  private async change<T>(onLeader: () => Promise<T>, forward: ForwardRequest): Promise<T> {
    if (this.access.membership.leaderClientUrl() === '') return this.translated(onLeader);
    const answer = await this.translated(() => this.viaLeader(forward));
    return (answer as { member: T }).member;
  }

  private async translated<T>(body: () => Promise<T>): Promise<T> {
    try {
      return await body();
    } catch (error) {
      if (error instanceof LeaderMemberError && error.code === 'unavailable') throw error; // retried by remove()
      throw etcdMemberError(error);
    }
  }

  private async viaLeader(request: ForwardRequest): Promise<unknown> {
    const leaderUrl = this.access.membership.leaderClientUrl();
    if (leaderUrl === null || leaderUrl === '') throw new UnavailableError('no leader known to take the membership change; retry shortly');
    let res: Response;
    try {
      res = await fetch(`${leaderUrl}${request.path}`, {
        method: request.method,
        headers: { [forwardedHeader]: '1', ...(request.body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(request.body === undefined ? {} : { body: request.body }),
        signal: AbortSignal.timeout(forwardTimeoutMs),
      });
    } catch (error) {
      throw new UnavailableError(`could not reach the leader at ${leaderUrl}: ${(error as Error).message}`);
    }
    let body: unknown;
    try {
      body = await res.json();
    } catch {
      throw new UnavailableError(`the leader at ${leaderUrl} answered ${res.status} without JSON`);
    }
    if (res.ok) return body;
    const { code, message, ...details } = ((body as { error?: unknown }).error ?? {}) as Record<string, unknown>;
    if (typeof code !== 'string') throw new UnavailableError(`the leader answered ${res.status}`);
    throw new LeaderMemberError(code, typeof message === 'string' ? message : code, details);
  }
}

interface ForwardRequest {
  readonly method: 'POST' | 'DELETE';
  readonly path: string;
  readonly body?: string;
}

/** The leader's refusal, passed on with its code and details (so it maps as the leader's own would). */
class LeaderMemberError extends BatonError {
  readonly code: ErrorCode | UnknownCode;
  constructor(code: string, message: string, details: Record<string, unknown>) {
    super(message, details);
    this.code = wireCode(code);
  }
}

/** Membership's refusals in etcd's words, by code and reason; anything else as the error table says. */
export function etcdMemberError(error: unknown): unknown {
  if (!(error instanceof BatonError)) return error;
  const reason = error.details['reason'];
  const fail = (code: status, text: string): GrpcStatusError => new GrpcStatusError(code, text);
  if (error.code === 'key_not_found' && error.details['member'] !== undefined) return fail(status.NOT_FOUND, etcdMemberMessages.notFound);
  if (reason === 'peer_url_exists') return fail(status.FAILED_PRECONDITION, etcdMemberMessages.peerUrlExists);
  if (reason === 'already_voter') return fail(status.FAILED_PRECONDITION, etcdMemberMessages.notLearner);
  if (reason === 'learner_not_in_sync') return fail(status.FAILED_PRECONDITION, etcdMemberMessages.learnerNotReady);
  if (reason === 'too_many_learners') return fail(status.FAILED_PRECONDITION, etcdMemberMessages.tooManyLearners);
  if (reason === 'unhealthy_cell') return fail(status.FAILED_PRECONDITION, `${etcdMemberMessages.notEnoughStarted} (${error.message})`);
  return error;
}

/** Baton members have one peer URL, http://HOST:PORT (the form the member table keeps). */
function onePeerUrl(urls: readonly string[] | undefined): string {
  if (urls === undefined || urls.length !== 1) {
    throw new GrpcStatusError(status.INVALID_ARGUMENT, `${etcdMemberMessages.badUrls} (a Baton member has exactly one peer URL)`);
  }
  const text = urls[0] as string;
  let url: URL | null = null;
  try {
    url = new URL(text);
  } catch {
    // answered below
  }
  if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.port === '' || (url.pathname !== '/' && url.pathname !== '') ||
    url.search !== '' || Buffer.byteLength(text) > memberUrlBytesMax) {
    throw new GrpcStatusError(status.INVALID_ARGUMENT, `${etcdMemberMessages.badUrls} (${text}: Baton takes http://HOST:PORT)`);
  }
  return `http://${url.host}`;
}

/** A member name from its peer URL (names are letters, digits, - and _). */
export function nameFor(peerUrl: string): string {
  const name = `member-${new URL(peerUrl).host.replace(/[^a-zA-Z0-9]+/g, '-')}`.slice(0, 64);
  if (!memberNamePattern.test(name)) throw new InvalidArgumentError(`no member name for ${peerUrl}`);
  return name;
}

function memberId(text: string | undefined): number {
  const id = Number(text ?? '0');
  if (!Number.isSafeInteger(id) || id < 1) throw new GrpcStatusError(status.NOT_FOUND, etcdMemberMessages.notFound);
  return id;
}
