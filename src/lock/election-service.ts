// Elections (api.md): a campaign is a lock under `/elections/{name}/` whose holder publishes a
// value; the term is the leader key's creation revision, so it doubles as the fencing token.
// Observers get the current leadership and then every change of leader or value, in order.
import { LockNotHeldError } from '../base/errors.js';
import { cellWork, type KeyValue } from '../mvcc/index.js';
import { electionAccesses, permissionDenied, type AccessGuard } from '../auth/index.js';
import {
  electionKeyPrefix,
  type CampaignResult,
  type ElectionApi,
  type LeaderInfo,
  type LeadershipChange,
} from './api.js';
import type { ChangeFeed } from './change-feed.js';
import { validateName, type LockLimits } from './lock-service.js';
import type { QueueCell, QueueContender } from './queue.js';

export class ElectionService implements ElectionApi {
  constructor(
    private readonly cell: QueueCell,
    private readonly contender: QueueContender,
    private readonly feed: ChangeFeed,
    /** Decides the reads (leader, observe) and proclaim; campaigns and resigns are decided at apply. */
    private readonly guard: AccessGuard,
    private readonly limits: LockLimits,
  ) {}

  async campaign(
    name: string,
    request: { lease: number; value: Uint8Array; waitMs: number; signal?: AbortSignal },
    requestId: string | undefined,
    principal: string,
  ): Promise<CampaignResult> {
    const prefix = electionKeyPrefix(validateName(name, 'election'));
    const waitMs = Math.min(request.waitMs, this.limits.waitMsMax);
    const grant = await this.contender.contend(
      { prefix, value: request.value, lease: request.lease, waitMs, signal: request.signal, origin: principal },
      requestId,
    );
    return { key: grant.kv.key, term: grant.kv.createRevision, revision: grant.revision };
  }

  async proclaim(name: string, key: string, value: Uint8Array, requestId: string | undefined, principal: string): Promise<{ revision: number; term: number }> {
    const prefix = electionKeyPrefix(validateName(name, 'election'));
    // Decided here as an election operation: the txn below only rewrites the caller's own leader
    // key (its compares pin that incarnation), which the caller created with election rights.
    this.guard.check(principal, () => electionAccesses(name));
    const current = await this.currentLeader(prefix);
    if (current === null || current.key !== key) {
      throw new LockNotHeldError(`${key} does not lead ${name}`, { leader: current?.key ?? null });
    }
    // Once the lowest key, it stays the leader while it exists: the compare pins this incarnation.
    const { result } = await this.cell.propose(
      {
        type: 'txn',
        compare: [
          { key, target: 'createRevision', op: '==', value: current.createRevision },
          { key, target: 'lease', op: '==', value: current.lease },
        ],
        success: [{ type: 'put', key, value, lease: current.lease }],
        failure: [],
      },
      requestId,
      cellWork,
    );
    if (!result.succeeded) throw new LockNotHeldError(`${key} no longer leads ${name}`, { leader: null });
    return { revision: result.revision, term: current.createRevision };
  }

  async resign(name: string, key: string, requestId: string | undefined, principal: string): Promise<{ revision: number }> {
    const prefix = electionKeyPrefix(validateName(name, 'election'));
    const { result } = await this.cell.propose({ type: 'seqRelease', prefix, key }, requestId, principal);
    return { revision: result.revision };
  }

  async leader(name: string, principal: string): Promise<{ revision: number; leader: LeaderInfo | null }> {
    const prefix = electionKeyPrefix(validateName(name, 'election'));
    this.guard.check(principal, () => electionAccesses(name));
    const result = await this.cell.linearizableRange({ type: 'get', key: prefix, prefix: true, limit: 1, skipCount: true });
    const kv = result.kvs[0];
    return { revision: result.revision, leader: kv === undefined ? null : leaderInfo(kv) };
  }

  observe(name: string, onChange: (change: LeadershipChange) => void, signal: AbortSignal, principal: string): Promise<void> {
    const prefix = electionKeyPrefix(validateName(name, 'election'));
    const allowed = (): boolean => this.guard.allows(principal, () => electionAccesses(name));
    if (!allowed()) return Promise.reject(permissionDenied());
    return new Promise((resolve, reject) => {
      let last: { key: string; modRevision: number } | null | undefined;
      let lastRevision = 0;
      let started = false;
      const emit = (revision: number, kv: KeyValue | undefined): void => {
        const now = kv === undefined ? null : { key: kv.key, modRevision: kv.modRevision };
        if (revision <= lastRevision && last !== undefined) return;
        const same = last !== undefined && (last === null ? now === null : now !== null && now.key === last.key && now.modRevision === last.modRevision);
        lastRevision = revision;
        if (same) return;
        // Each change is decided again: a permission removed while observing ends the observation.
        if (!allowed()) return stop(permissionDenied());
        last = now;
        onChange({ revision, leader: kv === undefined ? null : leaderInfo(kv) });
      };
      // Subscribed before the first read, so nothing between the read and the feed is missed.
      const subscription = this.feed.watchPrefix(prefix, () => {
        if (!started) return;
        const result = this.cell.localRange({ type: 'get', key: prefix, prefix: true, limit: 1, skipCount: true });
        emit(result.revision, result.kvs[0]);
      });
      const stop = (error?: unknown): void => {
        subscription.cancel();
        signal.removeEventListener('abort', onAbort);
        if (error === undefined) resolve();
        else reject(error);
      };
      const onAbort = (): void => stop();
      signal.addEventListener('abort', onAbort, { once: true });
      if (signal.aborted) return stop();
      this.cell
        .linearizableRange({ type: 'get', key: prefix, prefix: true, limit: 1, skipCount: true })
        .then((result) => {
          if (signal.aborted) return;
          started = true;
          emit(result.revision, result.kvs[0]);
          // Changes applied while the read was confirmed.
          const local = this.cell.localRange({ type: 'get', key: prefix, prefix: true, limit: 1, skipCount: true });
          if (local.revision > result.revision) emit(local.revision, local.kvs[0]);
        })
        .catch((error: unknown) => stop(error));
    });
  }

  private async currentLeader(prefix: string): Promise<KeyValue | null> {
    const result = await this.cell.linearizableRange({ type: 'get', key: prefix, prefix: true, limit: 1, skipCount: true });
    return result.kvs[0] ?? null;
  }
}

function leaderInfo(kv: KeyValue): LeaderInfo {
  return { key: kv.key, value: kv.value, term: kv.createRevision, lease: kv.lease };
}
