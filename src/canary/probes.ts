// The canary's probes: each exercises one promise of the cell through the client library, once
// per call, and says what it saw. A probe throws a ProbeFailure when the cell did not serve it
// (unavailable, timed out: an availability failure) and returns a violation when the cell served
// an answer that breaks a promise (a stale owner accepted, a watch that skipped an event).
import { MemoryFencingGuard, type FencingGuard } from '../fencing/index.js';
import type { BatonClient, OwnerSession, Session, Watch, WatchBatch } from '../client/index.js';

/** What a probe run found: nothing wrong, or a broken promise described with what it saw. */
export type ProbeResult = { readonly violation: null } | { readonly violation: string; readonly saw: Readonly<Record<string, unknown>> };
const held: ProbeResult = { violation: null };

/** The resource the canary writes to with its tokens: in-process, or a real one over HTTP. */
export interface FencedResource {
  write(resource: string, token: number): Promise<boolean>;
}

export function memoryResource(guard: FencingGuard = new MemoryFencingGuard()): FencedResource {
  return { write: (resource, token) => Promise.resolve(guard.check(resource, token).accepted) };
}

/** A resource behind HTTP: POST {resource, token} answers {accepted: boolean}. */
export function httpResource(url: string): FencedResource {
  return {
    async write(resource, token) {
      const res = await fetch(url, {
        method: 'POST', body: JSON.stringify({ resource, token }), headers: { 'content-type': 'application/json' },
        signal: AbortSignal.timeout(5000),
      });
      const body = await res.json() as { accepted?: unknown };
      if (typeof body.accepted !== 'boolean') throw new Error(`the resource at ${url} answered ${JSON.stringify(body)}`);
      return body.accepted;
    },
  };
}

export interface ProbeContext {
  readonly client: BatonClient;
  /** The canary's long-lived session (renewed by the client library). */
  readonly session: Session;
  readonly resource: FencedResource;
  /** Names unique to this canary run (several canaries may share a cell). */
  readonly prefix: string;
}

/** Acquire a lock, write through the fencing guard with its token (tokens only grow), release. */
export function lockProbe(): (context: ProbeContext) => Promise<ProbeResult> {
  let lastToken = 0;
  return async ({ client, session, resource, prefix }) => {
    const lock = await client.locks(session).acquire(`${prefix}-lock`, { waitMs: 2000, followKey: false });
    try {
      if (lock.token <= lastToken) return { violation: 'a fencing token did not grow', saw: { token: lock.token, previous: lastToken } };
      lastToken = lock.token;
      if (!(await resource.write(`${prefix}-lock`, lock.token))) {
        return { violation: 'the holder\'s current token was rejected by the guard', saw: { token: lock.token } };
      }
      return held;
    } finally {
      await lock.release().catch(() => undefined);
    }
  };
}

/** Campaign, then observe the election: its leader must be us, with our term. */
export function electionProbe(): (context: ProbeContext) => Promise<ProbeResult> {
  let round = 0;
  return async ({ client, session, prefix }) => {
    const election = client.election(session, `${prefix}-election`);
    const value = `canary-${process.pid}-${++round}`;
    const leadership = await election.campaign(value, { waitMs: 2000 });
    try {
      const seen = await election.leader();
      if (seen.leader?.value !== value) {
        return { violation: 'the observed leader is not the one just elected', saw: { elected: value, observed: seen.leader?.value ?? null } };
      }
      return held;
    } finally {
      await leadership.resign().catch(() => undefined);
    }
  };
}

/**
 * Renew a lease every run; every `lapseEvery` runs grant a short one with a key and never renew
 * it: once its TTL plus `graceMs` passed, the key must be gone (a lease lapsed on purpose).
 */
export function leaseProbe(options: { ttlSeconds: number; graceMs: number }): (context: ProbeContext) => Promise<ProbeResult> {
  let renewed: number | null = null;
  const lapsing: { id: number; key: string; expiresAtMs: number }[] = [];
  return async ({ client, prefix }) => {
    renewed ??= (await client.leaseGrant(options.ttlSeconds * 4)).id;
    const answer = await client.leaseKeepalive([renewed]);
    const item = answer.leases[0];
    if (item === undefined || 'error' in item) {
      const id = renewed;
      renewed = null; // granted again next run
      throw new ProbeFailure(`renewal of lease ${id} failed: ${item === undefined ? 'no answer' : item.error}`);
    }
    if (lapsing.length === 0) {
      const grant = await client.leaseGrant(options.ttlSeconds);
      const key = `/${prefix}/lapse/${grant.id}`;
      await client.put(key, 'lapses', { lease: grant.id });
      lapsing.push({ id: grant.id, key, expiresAtMs: Date.now() + options.ttlSeconds * 1000 });
    }
    const due = lapsing[0];
    if (due !== undefined && Date.now() > due.expiresAtMs + options.graceMs) {
      lapsing.shift();
      const still = await client.getValue(due.key);
      if (still !== null) throw new ProbeFailure(`lease ${due.id} outlived its TTL by ${options.graceMs} ms (key ${due.key} still there)`);
    }
    return held;
  };
}

/**
 * A watch over the canary's prefix: each run writes the next number and reads the watch up to
 * it; every `reconnectEvery` runs the watch is cut and resumed from its last revision. Every
 * number must arrive once, in order: a gap or a repeat after a resume is a violation.
 */
export function watchProbe(options: { reconnectEvery: number; timeoutMs: number }): (context: ProbeContext) => Promise<ProbeResult> {
  let watch: Watch | null = null;
  let batches: AsyncIterator<WatchBatch> | null = null;
  /** The last number the watch delivered, the last one written, the revision to resume after. */
  let seen = 0;
  let written = 0;
  let lastRevision = 0;
  let runs = 0;
  /** Numbers whose write failed without a definite outcome: skipping them is no gap. */
  const maybe = new Set<number>();
  const open = (client: BatonClient, key: string): void => {
    watch?.cancel();
    watch = client.watch(key, { startRevision: lastRevision + 1 });
    batches = watch[Symbol.asyncIterator]();
  };
  return async ({ client, prefix }) => {
    const key = `/${prefix}/watch`;
    if (watch === null) {
      lastRevision = (await client.put(key, String(written))).revision;
      seen = written;
      open(client, key);
    } else if (++runs % options.reconnectEvery === 0) {
      open(client, key); // a forced disconnect, resumed from the last revision seen
    }
    const value = ++written;
    try {
      await client.put(key, String(value));
    } catch (error) {
      maybe.add(value); // the outcome is unknown: the watch may or may not deliver it
      throw error;
    }
    const deadline = Date.now() + options.timeoutMs;
    while (seen < written) {
      let timer: NodeJS.Timeout | undefined;
      const next = await Promise.race([
        (batches as AsyncIterator<WatchBatch>).next(),
        new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), Math.max(1, deadline - Date.now())))),
      ]).finally(() => clearTimeout(timer));
      if (next === null) {
        open(client, key); // the pending next() belongs to the old watch: start over from the last revision
        throw new ProbeFailure(`the watch delivered ${seen} of ${written} writes within ${options.timeoutMs} ms`);
      }
      if (next.done === true) {
        watch = null;
        throw new ProbeFailure('the watch ended');
      }
      for (const event of next.value.events) {
        const value = Number(event.kv.value);
        while (maybe.has(seen + 1) && value > seen + 1) maybe.delete(++seen); // never written
        maybe.delete(value);
        if (value !== seen + 1) {
          const what = value > seen + 1 ? 'skipped an event' : 'delivered an event twice';
          const saw = { expected: seen + 1, got: value, revision: event.kv.modRevision };
          seen = Math.max(seen, value);
          lastRevision = Math.max(lastRevision, event.kv.modRevision);
          return { violation: `the watch ${what}`, saw };
        }
        seen = value;
        lastRevision = event.kv.modRevision;
      }
    }
    return held;
  };
}

/**
 * A stale owner: take a lock with a lease that is never renewed (the paused holder that believes
 * it is still safe), let the lease expire, let a new owner take the lock and write, then write
 * with the old token: the guard must reject it and the cell's fencing check must call it stale.
 */
export function staleOwnerProbe(options: { ttlSeconds: number; waitMs: number }): (context: ProbeContext) => Promise<ProbeResult> {
  let pending: { token: number; leaseId: number; expiresAtMs: number } | null = null;
  return async ({ client, session, resource, prefix }) => {
    const name = `${prefix}-stale`;
    if (pending === null) {
      const grant = await client.leaseGrant(options.ttlSeconds);
      const frozen: OwnerSession = { leaseId: grant.id, signal: new AbortController().signal, safeUntil: Number.POSITIVE_INFINITY, isSafe: () => true };
      const lock = await client.locks(frozen).acquire(name, { waitMs: options.waitMs, followKey: false });
      if (!(await resource.write(name, lock.token))) return { violation: 'a fresh holder\'s token was rejected', saw: { token: lock.token } };
      pending = { token: lock.token, leaseId: grant.id, expiresAtMs: Date.now() + options.ttlSeconds * 1000 };
      return held;
    }
    if (Date.now() < pending.expiresAtMs) return held; // not expired yet: nothing to check this run
    const stale = pending;
    // The new owner: the lock is free only once the old lease expired (the cell revokes it).
    const lock = await client.locks(session).acquire(name, { waitMs: options.waitMs, followKey: false });
    pending = null;
    try {
      if (lock.token <= stale.token) return { violation: 'the new owner got a token no higher than the expired one', saw: { stale: stale.token, current: lock.token } };
      if (!(await resource.write(name, lock.token))) return { violation: 'the new owner\'s token was rejected', saw: { token: lock.token } };
      if (await resource.write(name, stale.token)) {
        return { violation: 'the guard accepted a stale owner\'s write', saw: { staleToken: stale.token, currentToken: lock.token } };
      }
      const check = await client.locks(session).check(name, stale.token);
      if (check.valid) return { violation: '/v1/fencing/check called an expired owner\'s token valid', saw: { staleToken: stale.token, check } };
      return held;
    } finally {
      await lock.release().catch(() => undefined);
    }
  };
}

/** The cell did not serve a probe (as opposed to breaking a promise). */
export class ProbeFailure extends Error {}
