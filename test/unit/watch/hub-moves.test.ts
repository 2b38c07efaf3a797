// Watches of a namespace that leaves the cell (docs/design/cells.md, moves): the hub ends them
// with wrong_cell only after each has delivered everything up to the fence (queued live batches,
// and history still to be read by one catching up), with lastRevision = the fence, so a client
// resuming on the destination from lastRevision + 1 sees no gap and no duplicate. Watches of
// other namespaces go on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { utf8, type Command, type MvccStore } from '../../../src/mvcc/index.js';
import { encodeImportRecord } from '../../../src/mvcc/import-keys.js';
import type { WatchHub, WatchOutput, WatchSpec } from '../../../src/watch/index.js';
import { WatchService } from '../../../src/api/stream/watch-service.js';
import { AccessGuard } from '../../../src/auth/index.js';
import { batchCell } from '../mvcc/store-cells.js';
import { drain, revisionsOf } from './hub-outputs.js';

const spec = (key: string, more: Partial<WatchSpec> = {}): WatchSpec => ({
  key, prefix: true, startRevision: 0, prevKv: false, filter: 'all', encoding: 'utf8', ...more,
});

const endOf = (outputs: WatchOutput<string>[], tag: string) => outputs.find((o) => o.type === 'end' && o.tag === tag);

/** cell-1's table at `epoch`: /mv/ as given (owned, fenced towards cell-2, moved to cell-2, landing). */
export function tableOf(epoch: number, mv: Record<string, unknown>): Command {
  const json = JSON.stringify({
    epoch, cell: 'cell-1',
    namespaces: [{ prefix: '/', cell: 'cell-1', epoch: 1 }, { prefix: '/mv/', epoch: 6, ...mv }],
    cells: [{ id: 'cell-1', endpoints: ['http://127.0.0.1:1'] }, { id: 'cell-2', endpoints: ['http://127.0.0.1:2'] }],
  });
  return { type: 'ownershipSet', record: utf8(json) };
}
export const owned = { cell: 'cell-1' };
export const fenced = { cell: 'cell-1', fencedTo: 'cell-2' };

/** A real store with cell-1's table owning /mv/, and the node's watch service on it, wired as src/node/node.ts does. */
export function cellWithHub(): { store: MvccStore; hub: WatchHub<string>; apply(...ops: Command[]): void; put(key: string): void } {
  const { store, apply: applyBatch } = batchCell();
  const service = new WatchService(store, new AccessGuard(store), {}, null, null, {
    lastChange: () => store.lastOwnershipChange(),
    bounds: (s) => store.watchBounds(s),
  });
  const apply = (...ops: Command[]): void => {
    for (const outcome of applyBatch(...ops)) assert.equal(outcome.type, 'applied', JSON.stringify(outcome));
    service.onApplied();
  };
  apply(tableOf(5, owned));
  // The hub never reads its tags: these tests tag watches with strings.
  const hub = service.hub as unknown as WatchHub<string>;
  return { store, hub, apply, put: (key) => apply({ type: 'put', key, value: utf8('v') }) };
}

test('a moved namespace\'s watchers deliver everything up to the fence, then end with wrong_cell; others go on', () => {
  const { store, hub, apply, put } = cellWithHub();
  put('/mv/a'); // revision 1 (the table moves no revision)
  const c = hub.openConnection(() => {}, () => true);
  hub.create(c, 'synced', spec('/mv/'));
  hub.create(c, 'history', spec('/mv/', { startRevision: 1 }));
  hub.create(c, 'future', spec('/mv/', { startRevision: 50 }));
  hub.create(c, 'other', spec('/other/'));
  put('/mv/b'); // 2
  put('/other/x'); // 3
  put('/mv/c'); // 4: the last write of /mv/ before the fence; nothing delivered yet
  put('/other/w'); // 5: the fence applies after it
  const fence = store.revision;
  apply(tableOf(6, fenced));
  assert.equal(hub.ended.wrong_cell + [...c.watchers].filter((w) => w.closing !== null).length, 3, 'the three /mv/ watchers are closing');
  hub.progress([...c.watchers].find((w) => w.tag === 'synced')!);
  put('/other/y'); // 6: after the fence, other namespaces go on
  const out = drain(c);
  assert.deepEqual(revisionsOf(out, 'synced'), [2, 4], 'the queued live events first');
  assert.deepEqual(revisionsOf(out, 'history'), [1, 2, 4], 'the catching-up one reads history to the fence');
  assert.deepEqual(revisionsOf(out, 'future'), []);
  assert.deepEqual(revisionsOf(out, 'other'), [3, 5, 6]);
  for (const tag of ['synced', 'history']) {
    const end = endOf(out, tag);
    assert.ok(end?.type === 'end' && end.reason === 'wrong_cell', `${tag} ended with wrong_cell`);
    assert.equal(end.lastRevision, fence, `${tag}: resume from the fence + 1`);
    assert.equal(end.error?.details['cell'], 'cell-2');
    // The end comes after every event it had to deliver, and no progress past the fence before it.
    const position = out.indexOf(end);
    assert.ok(out.slice(position + 1).every((o) => o.tag !== tag));
    assert.ok(out.slice(0, position).every((o) => o.tag !== tag || o.type !== 'batch' || o.batch.revision <= fence));
  }
  const future = endOf(out, 'future');
  assert.ok(future?.type === 'end' && future.reason === 'wrong_cell');
  assert.equal(future.lastRevision, 49, 'a watch starting after the fence resumes at its own start');
  assert.equal(endOf(out, 'other'), undefined);
  assert.equal(hub.size, 1);
  assert.equal(hub.ended.wrong_cell, 3);
  // A second ownership change does not end them twice; the other watcher is still live.
  apply(tableOf(7, { cell: 'cell-2' }));
  assert.equal(hub.endMoved(), 0);
  put('/other/z');
  assert.deepEqual(revisionsOf(drain(c), 'other'), [7]);
});

test('a watch created on a fenced namespace, from now or from history, ends at the fence: not at a later table\'s revision', () => {
  const { store, hub, apply, put } = cellWithHub();
  put('/mv/a'); // 1
  put('/other/x'); // 2: the fence applies after it
  apply(tableOf(6, fenced));
  const fence = store.revision;
  put('/other/y'); // 3: reads, and so watches, go on at the fenced source
  put('/other/z'); // 4
  const c = hub.openConnection(() => {}, () => true);
  const late = hub.create(c, 'late', spec('/mv/'));
  assert.equal(late.startRevision, fence + 1, '"now" of a namespace that left is its fence: this cell\'s revision is not the namespace\'s');
  hub.create(c, 'history', spec('/mv/', { startRevision: 1 }));
  hub.create(c, 'ahead', spec('/mv/', { startRevision: 40 }));
  // The flip's table (still fenced here) applies later, at a higher revision.
  put('/other/w'); // 5
  apply(tableOf(7, { ...fenced, epoch: 7 }));
  const out = drain(c);
  assert.deepEqual(revisionsOf(out, 'history'), [1]);
  for (const tag of ['late', 'history']) {
    const end = endOf(out, tag);
    assert.ok(end?.type === 'end' && end.reason === 'wrong_cell', `${tag} ended with wrong_cell`);
    assert.equal(end.lastRevision, fence, `${tag}: resume on the destination right after the fence`);
  }
  const ahead = endOf(out, 'ahead');
  assert.ok(ahead?.type === 'end' && ahead.reason === 'wrong_cell');
  assert.equal(ahead.lastRevision, 39, 'an explicit start above the fence is the client\'s own: resumed there');
  assert.equal(hub.size, 0);
});

test('a member that applies the fence with later entries in one batch ends watches at the fence', () => {
  const { store, hub, apply } = cellWithHub();
  const put = (key: string): Command => ({ type: 'put', key, value: utf8('v') });
  apply(put('/mv/a')); // 1
  const c = hub.openConnection(() => {}, () => true);
  hub.create(c, 'synced', spec('/mv/'));
  // One applied batch: a write of /mv/ (2), the fence, a write elsewhere (3), the flip's table (at 3).
  const fence = 2;
  apply(put('/mv/b'), tableOf(6, fenced), put('/other/x'), tableOf(7, { ...fenced, epoch: 7 }));
  assert.equal(store.revision, fence + 1);
  const out = drain(c);
  assert.deepEqual(revisionsOf(out, 'synced'), [2]);
  assert.ok(out.every((o) => o.tag !== 'synced' || o.type !== 'batch' || o.batch.revision <= fence), 'no batch claims a revision past the fence');
  const end = endOf(out, 'synced');
  assert.ok(end?.type === 'end' && end.reason === 'wrong_cell');
  assert.equal(end.lastRevision, fence, 'the fence, not the revision of the batch\'s last table');
  assert.equal(end.error?.details['cell'], 'cell-2');
});

test('a watch waiting for a start a catching-up member reaches in the fence\'s batch delivers its start..fence, then ends', () => {
  // A member behind its cell takes a watch from revision 3 (a move's feed, from after its copy)
  // while it stands at 1; one applied batch then brings 2..5 and the fence. The watch must
  // deliver 3..4 (its namespace's writes up to the fence) before it ends at the fence: before the
  // fix it ended at once claiming the fence, and the feed that took it lost those writes.
  const { store, hub, apply } = cellWithHub();
  const put = (key: string): Command => ({ type: 'put', key, value: utf8('v') });
  apply(put('/mv/a')); // 1
  const c = hub.openConnection(() => {}, () => true);
  hub.create(c, 'feed', spec('/mv/', { startRevision: 3 }));
  hub.create(c, 'after', spec('/mv/', { startRevision: 9 }));
  apply(put('/mv/b'), put('/mv/c'), put('/other/x'), put('/mv/d'), tableOf(6, fenced), put('/other/y')); // 2, 3, 4, 5, fence at 5, 6
  const fence = 5;
  assert.equal(store.revision, fence + 1);
  const out = drain(c);
  assert.deepEqual(revisionsOf(out, 'feed'), [3, 5], 'its start up to the fence, nothing after it');
  const end = endOf(out, 'feed');
  assert.ok(end?.type === 'end' && end.reason === 'wrong_cell');
  assert.equal(end.lastRevision, fence);
  assert.ok(out.indexOf(end) > out.findIndex((o) => o.tag === 'feed' && o.type === 'batch'), 'the end after its events');
  const after = endOf(out, 'after');
  assert.ok(after?.type === 'end' && after.reason === 'wrong_cell', 'a start past the fence ends at once');
  assert.equal(after.lastRevision, 8, 'resume from its own start');
  assert.deepEqual(revisionsOf(out, 'after'), []);
});

test('a namespace that landed here: a watch from at or below the source\'s fence is refused compacted, from above it is served', () => {
  const { store, hub, apply, put } = cellWithHub();
  for (let i = 0; i < 20; i++) put(`/other/${i}`); // this cell's own revisions: 1..20
  // /mv/ moves here from cell-2: imported while landing, then the landing (floor 120, the source's fence 100).
  apply(tableOf(6, { cell: 'cell-2' }));
  apply(tableOf(7, { cell: 'cell-1', epoch: 7, landingFrom: 'cell-2' }));
  const landed = JSON.parse(new TextDecoder().decode((tableOf(7, { cell: 'cell-1', epoch: 7 }) as { record: Uint8Array }).record)) as unknown;
  apply({ type: 'importKeys', record: encodeImportRecord({
    prefix: '/mv/', clear: true, floor: 120, fence: 100, epoch: 7, deletes: [], leases: [],
    puts: [{ key: '/mv/a', value: utf8('A'), createRevision: 90, modRevision: 95, version: 2, lease: 0 }], own: JSON.stringify(landed),
  }) });
  assert.equal(store.revision, 120);
  put('/mv/b'); // 121: the destination's first event of /mv/
  const c = hub.openConnection(() => {}, () => true);
  hub.create(c, 'resumed', spec('/mv/', { startRevision: 101 }));
  hub.create(c, 'crossed', spec('/mv/', { startRevision: 96 }));
  hub.create(c, 'old', spec('/mv/', { startRevision: 1 }));
  hub.create(c, 'other', spec('/other/', { startRevision: 1 }));
  const out = drain(c);
  assert.deepEqual(revisionsOf(out, 'resumed'), [121], 'from the source\'s fence + 1: everything after the move');
  for (const tag of ['crossed', 'old']) {
    const end = endOf(out, tag);
    assert.ok(end?.type === 'end' && end.reason === 'compacted', `${tag}: refused, not served with the source's last events missing`);
    assert.equal(end.error?.details['compactRevision'], 100);
    assert.equal(revisionsOf(out, tag).length, 0);
  }
  assert.equal(revisionsOf(out, 'other').length, 20, 'namespaces that never moved are served from their start');
});
