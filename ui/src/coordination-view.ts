// Leases (remaining TTL counting down, their keys), locks (holder, queue, fencing tokens) and
// elections (leader, term). Locks and elections are found from their queue keys (/locks/{name}/,
// /elections/{name}/) and read through their own endpoints; the watch feed says when to read
// them again. Leases change without key events (grants, renewals), so their list is re-read
// every few seconds and the countdown runs in the page between reads.
import { ApiError, describe, getJson, kvPath, type Range, type WatchEvent } from './api.js';
import { byId, el, row, short, showError, table } from './dom.js';

interface LeaseInfo { id: number; ttlMs: number; grantedTtl: number; keys: string[] }
interface LockEntry { key: string; owner: string; fencingToken: number; lease: number; waitingSinceMs: number }
interface LockState { holder: LockEntry | null; queue: LockEntry[] }
interface Leader { key: string; value: string; term: number; lease: number }

const leasesShown = 100;
const leasesDetailed = 25;
const queuesShown = 100;

/** The distinct names below `root` (`/locks/` → lock names), from the queue keys, and the revision read at. */
async function queueNames(root: string): Promise<{ names: string[]; revision: number }> {
  const range = await getJson<Range>(`${kvPath(root)}?prefix=true&keysOnly=true&limit=5000`);
  const names = new Set<string>();
  for (const kv of range.kvs) {
    const name = kv.key.slice(root.length).split('/')[0];
    if (name !== undefined && name !== '') names.add(name);
  }
  return { names: [...names].sort().slice(0, queuesShown), revision: range.revision };
}

export class LeasesView {
  private leases: { id: number; ttlMs: number; grantedTtl: number; keys: string[] | null; readAt: number }[] = [];
  private more = false;

  async load(): Promise<void> {
    try {
      const list = await getJson<{ leases: { id: number; ttl: number; grantedTtl: number }[]; more: boolean }>(`/v1/leases?limit=${leasesShown}`);
      // Exact TTLs and keys for the first few (one call each); whole seconds for the rest.
      // A lease that ended between the list and its own read (404) is gone: left out, not an error.
      const detailed = await Promise.all(list.leases.slice(0, leasesDetailed).map((lease) =>
        getJson<LeaseInfo>(`/v1/leases/${lease.id}`).catch((error: unknown) => {
          if (error instanceof ApiError && error.status === 404) return null;
          throw error;
        })));
      const readAt = performance.now();
      this.leases = list.leases.flatMap((lease, i) => {
        const info = detailed[i];
        if (info === null) return [];
        return [info === undefined
          ? { id: lease.id, ttlMs: lease.ttl * 1000, grantedTtl: lease.grantedTtl, keys: null, readAt }
          : { id: info.id, ttlMs: info.ttlMs, grantedTtl: info.grantedTtl, keys: info.keys, readAt }];
      });
      this.more = list.more;
      this.render();
    } catch (error) {
      showError(byId('leases'), describe(error));
    }
  }

  private render(): void {
    const rows = this.leases.map((lease) =>
      row({ 'data-lease': String(lease.id) }, String(lease.id), el('span', { class: 'ttl' }, ''), `${lease.grantedTtl} s`,
        lease.keys === null ? el('span', { class: 'note' }, `(keys read for the first ${leasesDetailed} leases only)`) : lease.keys.join(', ')));
    byId('leases').replaceChildren(
      table(['lease', 'remaining TTL', 'granted TTL', 'keys'], rows, 'no lease'),
      this.more ? el('p', { class: 'note' }, `showing the first ${leasesShown} leases`) : '',
    );
    this.tick();
  }

  /** Counts every shown TTL down from its last read. */
  tick(): void {
    const now = performance.now();
    for (const lease of this.leases) {
      const cell = document.querySelector(`tr[data-lease="${lease.id}"] .ttl`);
      if (cell !== null) cell.textContent = `${(Math.max(0, lease.ttlMs - (now - lease.readAt)) / 1000).toFixed(1)} s`;
    }
  }
}

export class LocksView {
  /** Returns the revision the lock names were read at (the feed continues from it); null when refused. */
  async load(): Promise<number | null> {
    const target = byId('locks');
    try {
      const { names, revision } = await queueNames('/locks/');
      const states = await Promise.all(names.map(async (name) => [name, await getJson<LockState>(`/v1/locks/${encodeURIComponent(name)}`)] as const));
      const rows = states.map(([name, state]) => row(
        { 'data-lock': name },
        name,
        state.holder === null ? 'free' : state.holder.owner === '' ? '(no owner name)' : state.holder.owner,
        state.holder === null ? '' : el('span', { class: 'token' }, String(state.holder.fencingToken)),
        state.holder === null ? '' : String(state.holder.lease),
        state.queue.map((entry) => `${entry.owner || '(unnamed)'} #${entry.fencingToken}`).join(', '),
      ));
      target.replaceChildren(table(['lock', 'holder', 'fencing token', 'lease', 'queue (waiters, in grant order)'], rows, 'no lock is held or waited for'));
      return revision;
    } catch (error) {
      showError(target, describe(error));
      return null;
    }
  }
}

export class ElectionsView {
  /** Returns the revision the election names were read at (the feed continues from it); null when refused. */
  async load(): Promise<number | null> {
    const target = byId('elections');
    try {
      const { names, revision } = await queueNames('/elections/');
      const leaders = await Promise.all(names.map(async (name) => [name, (await getJson<{ leader: Leader | null }>(`/v1/elections/${encodeURIComponent(name)}/leader`)).leader] as const));
      const rows = leaders.map(([name, leader]) => row(
        { 'data-election': name },
        name,
        leader === null ? 'none' : el('code', {}, short(leader.value)),
        leader === null ? '' : String(leader.term),
        leader === null ? '' : String(leader.lease),
      ));
      target.replaceChildren(table(['election', 'leader (value)', 'term', 'lease'], rows, 'no election has a candidate'));
      return revision;
    } catch (error) {
      showError(target, describe(error));
      return null;
    }
  }
}

/** Whether a batch of key events touches the leases view (a key with a lease, or a delete). */
export function touched(events: readonly WatchEvent[]): { leases: boolean } {
  return { leases: events.some((event) => event.kv.lease !== 0 || event.type === 'delete') };
}
