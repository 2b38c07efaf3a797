// The live fan-out's lookup structure. Watchers that ask for the same thing (key or prefix,
// filter, prevKv, encoding) form one group and share one batch per applied chunk. Groups are
// found per event by an exact-key map plus a prefix map probed once per distinct registered
// prefix length, so an event costs O(groups on its key + distinct prefix lengths), never a scan
// of every watcher. Groups of one key with different options are chained (rare, so short), which
// keeps an idle watcher on its own key to a few small objects (the seed's goal: <= 1 KiB each).
import { assert } from '../base/assert.js';
import type { MvccEvent } from '../mvcc/index.js';
import type { WatchFilter, WatchSpec } from './types.js';
import type { Watcher } from './watcher.js';

export class WatchGroup<Tag> {
  /** Swap-removed; each member's groupSlot is its position. */
  readonly members: Watcher<Tag>[] = [];
  /** Events collected for the chunk being fanned out (null between chunks). */
  pending: MvccEvent[] | null = null;
  pendingBytes = 0;
  /** The next group on the same key (other filter, prevKv or encoding). */
  next: WatchGroup<Tag> | null = null;

  constructor(
    readonly key: string,
    readonly prefix: boolean,
    readonly filter: WatchFilter,
    readonly prevKv: boolean,
    readonly encoding: string,
  ) {}

  matches(spec: WatchSpec): boolean {
    return (
      spec.prefix === this.prefix &&
      spec.filter === this.filter &&
      spec.prevKv === this.prevKv &&
      spec.encoding === this.encoding
    );
  }
}

export class WatchIndex<Tag> {
  /** Chain heads by key. */
  private readonly exact = new Map<string, WatchGroup<Tag>>();
  private readonly prefixes = new Map<string, WatchGroup<Tag>>();
  /** Registered prefix keys by UTF-16 length, and those lengths ascending (rebuilt on change). */
  private readonly prefixCountByLength = new Map<number, number>();
  private prefixLengths: number[] = [];
  private memberCount = 0;

  get size(): number {
    return this.memberCount;
  }

  add(watcher: Watcher<Tag>): void {
    assert(watcher.group === null, 'a watcher is in at most one group');
    const { spec } = watcher;
    const map = spec.prefix ? this.prefixes : this.exact;
    const head = map.get(spec.key);
    let group = head ?? null;
    while (group !== null && !group.matches(spec)) group = group.next;
    if (group === null) {
      group = new WatchGroup<Tag>(spec.key, spec.prefix, spec.filter, spec.prevKv, spec.encoding);
      group.next = head ?? null;
      map.set(spec.key, group);
      if (spec.prefix && head === undefined) this.countPrefixLength(spec.key.length, +1);
    }
    watcher.group = group;
    watcher.groupSlot = group.members.length;
    group.members.push(watcher);
    this.memberCount++;
  }

  remove(watcher: Watcher<Tag>): void {
    const group = watcher.group;
    assert(group !== null && group.members[watcher.groupSlot] === watcher, 'removing a member');
    const moved = group.members.pop() as Watcher<Tag>;
    if (moved !== watcher) {
      group.members[watcher.groupSlot] = moved;
      moved.groupSlot = watcher.groupSlot;
    }
    watcher.group = null;
    watcher.groupSlot = -1;
    this.memberCount--;
    if (group.members.length > 0) return;
    assert(group.pending === null, 'groups are not dropped mid fan-out');
    this.unlink(group);
  }

  /** Calls `visit` for every group whose key or prefix covers `key` (filters are the caller's). */
  forEachCovering(key: string, visit: (group: WatchGroup<Tag>) => void): void {
    for (let group = this.exact.get(key) ?? null; group !== null; group = group.next) visit(group);
    for (const length of this.prefixLengths) {
      if (length > key.length) break;
      const head = this.prefixes.get(length === key.length ? key : key.slice(0, length));
      for (let group = head ?? null; group !== null; group = group.next) visit(group);
    }
  }

  /** Every member of every group (for ending them all). */
  allMembers(): Watcher<Tag>[] {
    const all: Watcher<Tag>[] = [];
    for (const map of [this.exact, this.prefixes]) {
      for (const head of map.values()) {
        for (let group: WatchGroup<Tag> | null = head; group !== null; group = group.next) all.push(...group.members);
      }
    }
    return all;
  }

  private unlink(group: WatchGroup<Tag>): void {
    const map = group.prefix ? this.prefixes : this.exact;
    const head = map.get(group.key);
    assert(head !== undefined, 'an indexed group has its chain');
    if (head === group) {
      if (group.next === null) {
        map.delete(group.key);
        if (group.prefix) this.countPrefixLength(group.key.length, -1);
      } else map.set(group.key, group.next);
      return;
    }
    let before = head;
    while (before.next !== group) {
      assert(before.next !== null, 'the group is in its chain');
      before = before.next;
    }
    before.next = group.next;
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
