// Watches of a namespace that leaves the cell (docs/design/cells.md, moves): the hub ends them
// with wrong_cell only after each has delivered everything up to the fence (queued live batches,
// and history still to be read by one catching up), with lastRevision = the fence, so a client
// resuming on the destination from lastRevision + 1 sees no gap and no duplicate. Watches of
// other namespaces go on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WrongCellError } from '../../../src/base/errors.js';
import { MemoryEngine, MvccStore, utf8 } from '../../../src/mvcc/index.js';
import { WatchHub, defaultWatchLimits, type WatchOutput, type WatchSpec } from '../../../src/watch/index.js';
import { commandEntry } from './model.js';
import { drain, revisionsOf } from './hub-outputs.js';

const spec = (key: string, more: Partial<WatchSpec> = {}): WatchSpec => ({
  key, prefix: true, startRevision: 0, prevKv: false, filter: 'all', encoding: 'utf8', ...more,
});

const endOf = (outputs: WatchOutput<string>[], tag: string) => outputs.find((o) => o.type === 'end' && o.tag === tag);

const moved = new WrongCellError({ namespace: '/mv/', cell: 'cell-2', epoch: 7, endpoints: ['http://127.0.0.1:1'] });
const judge = (s: WatchSpec) => (s.key.startsWith('/mv/') ? moved : null);

test('a moved namespace\'s watchers deliver everything up to the fence, then end with wrong_cell; others go on', () => {
  const store = new MvccStore(new MemoryEngine());
  const hub = new WatchHub<string>(store, defaultWatchLimits);
  let index = 0;
  const put = (key: string): void => {
    store.applyBatch([commandEntry(++index, { type: 'put', key, value: utf8('v') })]);
    hub.onApplied();
  };
  put('/mv/a'); // revision 1
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
  assert.equal(hub.endMoved(judge, fence), 3, 'the three /mv/ watchers are closing');
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
  assert.equal(hub.endMoved(judge, store.revision), 0);
  put('/other/z');
  assert.deepEqual(revisionsOf(drain(c), 'other'), [7]);
});
