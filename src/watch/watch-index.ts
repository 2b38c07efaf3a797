// The live fan-out's lookup structure. Watchers that ask for the same thing (key or prefix,
// filter, prevKv, encoding) form one group and share one batch per applied chunk. Groups are
// found per event by an exact-key map plus a prefix map probed once per distinct registered
// prefix length, so an event costs O(groups on its key + distinct prefix lengths), never a scan
// of every watcher.
import { assert } from '../base/assert.js';
import type { MvccEvent } from '../mvcc/index.js';
import type { WatchFilter, WatchSpec } from './types.js';
import type { Watcher } from './watcher.js';

export class WatchGroup<Tag> {
  /** Swap-removed; each member's groupSlot is its position. */
  readonly members: Watcher<Tag>[] = [];
  /** Events collected for the chunk being fanned out (empty between chunks). */
  pending: MvccEvent[] = [];
  pendingBytes = 0;

  constructor(
    readonly groupKey: string,
    readonly key: string,
    readonly prefix: boolean,
    readonly filter: WatchFilter,
    readonly prevKv: boolean,
  ) {}
}

export function groupKeyOf(spec: WatchSpec): string {
  return `${spec.prefix ? 'p' : 'k'}${spec.filter[0] as string}${spec.prevKv ? 1 : 0}${spec.encoding}\u0000${spec.key}`;
}

export class WatchIndex<Tag> {
  private readonly groups = new Map<string, WatchGroup<Tag>>();
  private readonly exact = new Map<string, WatchGroup<Tag>[]>();
  private readonly prefixes = new Map<string, WatchGroup<Tag>[]>();
  /** Registered prefix keys by UTF-16 length, and those lengths ascending (rebuilt on change). */
  private readonly prefixCountByLength = new Map<number, number>();
  private prefixLengths: number[] = [];
  private memberCount = 0;

  get size(): number {
    return this.memberCount;
  }

  add(watcher: Watcher<Tag>): void {
    assert(watcher.groupSlot === -1, 'a watcher is in at most one group');
    const groupKey = groupKeyOf(watcher.spec);
    let group = this.groups.get(groupKey);
    if (group === undefined) {
      const { key, prefix, filter, prevKv } = watcher.spec;
      group = new WatchGroup<Tag>(groupKey, key, prefix, filter, prevKv);
      this.groups.set(groupKey, group);
      this.listFor(group, true).push(group);
      if (prefix) this.countPrefixLength(key.length, +1);
    }
    watcher.groupKey = groupKey;
    watcher.groupSlot = group.members.length;
    group.members.push(watcher);
    this.memberCount++;
  }

  remove(watcher: Watcher<Tag>): void {
    const group = this.groups.get(watcher.groupKey);
    assert(group !== undefined && group.members[watcher.groupSlot] === watcher, 'removing a member');
    const moved = group.members.pop() as Watcher<Tag>;
    if (moved !== watcher) {
      group.members[watcher.groupSlot] = moved;
      moved.groupSlot = watcher.groupSlot;
    }
    watcher.groupSlot = -1;
    this.memberCount--;
    if (group.members.length > 0) return;
    assert(group.pending.length === 0, 'groups are not dropped mid fan-out');
    this.groups.delete(group.groupKey);
    const list = this.listFor(group, false);
    list.splice(list.indexOf(group), 1);
    if (list.length === 0) (group.prefix ? this.prefixes : this.exact).delete(group.key);
    if (group.prefix) this.countPrefixLength(group.key.length, -1);
  }

  /** Calls `visit` for every group whose key or prefix covers `key` (filters are the caller's). */
  forEachCovering(key: string, visit: (group: WatchGroup<Tag>) => void): void {
    const exact = this.exact.get(key);
    if (exact !== undefined) for (const group of exact) visit(group);
    for (const length of this.prefixLengths) {
      if (length > key.length) break;
      const list = this.prefixes.get(length === key.length ? key : key.slice(0, length));
      if (list !== undefined) for (const group of list) visit(group);
    }
  }

  /** Every member of every group (for ending them all). */
  allMembers(): Watcher<Tag>[] {
    const all: Watcher<Tag>[] = [];
    for (const group of this.groups.values()) all.push(...group.members);
    return all;
  }

  private listFor(group: WatchGroup<Tag>, create: boolean): WatchGroup<Tag>[] {
    const map = group.prefix ? this.prefixes : this.exact;
    let list = map.get(group.key);
    if (list === undefined) {
      assert(create, 'an indexed group has its list');
      list = [];
      map.set(group.key, list);
    }
    return list;
  }

  private countPrefixLength(length: number, delta: 1 | -1): void {
    const count = (this.prefixCountByLength.get(length) ?? 0) + delta;
    assert(count >= 0, 'prefix length counts stay non-negative');
    if (count === 0) this.prefixCountByLength.delete(length);
    else this.prefixCountByLength.set(length, count);
    if (count === 0 || (count === 1 && delta === 1)) {
      this.prefixLengths = [...this.prefixCountByLength.keys()].sort((a, b) => a - b);
    }
  }
}
