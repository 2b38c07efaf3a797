// The key space's content hash at a revision (etcd's HashKV): every live key at `revision` (key,
// value, versions, lease) and every retained event after the compact revision up to it. It is a
// function of the replicated state only, so members at the same revision and compact revision
// agree, and a member whose store was damaged (a value or event read back differently) does not:
// the basis of a cross-member corruption check. Reads go through the store's own range and events
// (whatever store format wrote them), synchronously: one consistent view, no apply in between.
import { CompactedError, FutureRevisionError } from '../base/errors.js';
import { utf8 } from './bytes.js';
import { ContentHasher } from './content-hash.js';
import type { KeyValue, MvccEvent, RangeRequest, RangeResult } from './types.js';

export interface HashableStore {
  readonly revision: number;
  readonly compactRevision: number;
  range(request: RangeRequest): RangeResult;
  events(options: { startRevision: number; limit: number }): MvccEvent[];
}

export interface KvHash {
  /** uint32, as etcd's HashKVResponse.hash. */
  readonly hash: number;
  readonly revision: number;
  readonly compactRevision: number;
}

const keysPerPage = 1000;
/** Above a txn's largest revision (128 operations), so a page never ends inside its only revision. */
const eventsPerPage = 1024;
/** Every Baton key begins with '/': [/, 0) is the whole key space. */
const allKeysEnd = Uint8Array.of(0x30);

/** `revision` 0 is the current revision. All at once: for tests, tools and small stores. */
export function hashKeySpace(store: HashableStore, revision = 0): KvHash {
  const steps = hashKeySpaceSteps(store, revision);
  for (let step = steps.next(); ; step = steps.next()) if (step.done === true) return step.value;
}

/**
 * The same hash one page at a time: the caller may let other work run between steps (a node's
 * event loop must not stop for a whole key space). What is hashed is fixed at `revision` and does
 * not change meanwhile, unless compaction passes the compact revision it started from: then the
 * next step throws CompactedError (retry).
 */
export function* hashKeySpaceSteps(store: HashableStore, revision = 0): Generator<void, KvHash, undefined> {
  const current = store.revision;
  const at = revision === 0 ? current : revision;
  if (at > current) throw new FutureRevisionError(at, current);
  const compactRevision = store.compactRevision;
  if (at < compactRevision) throw new CompactedError(compactRevision);
  const unchanged = (): void => {
    if (store.compactRevision !== compactRevision) throw new CompactedError(store.compactRevision);
  };
  const hasher = new ContentHasher();
  hasher.updateNumber(at).updateNumber(compactRevision);
  let from = '/';
  for (;;) {
    const page = store.range({ type: 'get', key: from, rangeEnd: allKeysEnd, limit: keysPerPage, revision: at, skipCount: true });
    for (const kv of page.kvs) hashKv(hasher, kv);
    if (!page.more || page.kvs.length === 0) break;
    from = `${(page.kvs[page.kvs.length - 1] as KeyValue).key}\0`;
    yield;
    unchanged();
  }
  hasher.updateNumber(0); // separates the keys from the events
  let start = compactRevision + 1;
  while (start <= at) {
    const events = store.events({ startRevision: start, limit: eventsPerPage });
    const full = events.length === eventsPerPage;
    // A full page may end inside a revision: that revision is hashed with the next page.
    const last = full ? (events[events.length - 1] as MvccEvent).revision : Number.POSITIVE_INFINITY;
    let next = Number.POSITIVE_INFINITY;
    for (const event of events) {
      if (event.revision > at) break;
      if (full && event.revision === last && last > start) {
        next = last;
        break;
      }
      hasher.updateNumber(event.revision).updateNumber(event.type === 'put' ? 1 : 2);
      hashKv(hasher, event.kv);
    }
    if (!full) break;
    start = next === Number.POSITIVE_INFINITY ? last + 1 : next;
    yield;
    unchanged();
  }
  return { hash: hasher.digest32(), revision: at, compactRevision };
}

function hashKv(hasher: ContentHasher, kv: KeyValue): void {
  hasher.updateField(utf8(kv.key)).updateField(kv.value);
  hasher.updateNumber(kv.createRevision).updateNumber(kv.modRevision).updateNumber(kv.version).updateNumber(kv.lease);
}
