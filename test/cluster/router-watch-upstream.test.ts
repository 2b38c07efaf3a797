// An SSE watch through a router whose upstream member dies mid-stream (kill -9): the router must
// cut the client's connection, so the client resumes elsewhere from its last revision. It piped
// the answer and left the client's connection open and silent for ever; a watcher that resumed
// only when its connection ended never did, and one with a silence timer resumed seconds late,
// past a move's fence, where the destination cannot serve what it missed (found by the fault run
// across cells: a watcher through the router silent for 5 s after a data cell's leader was killed).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { http, sleep, startRouter, startTwoCells, type TestCell } from './harness.js';
import type { Router } from '../../src/router/router.js';

let control: TestCell;
let cell1: TestCell;
let cell2: TestCell;
let router: Router;
let routerUrl: string;

before(async () => {
  [control, cell1, cell2] = await startTwoCells();
  ({ router, url: routerUrl } = await startRouter(control));
}, { timeout: 120_000 });

after(async () => {
  await router?.stop();
  await Promise.all([control, cell1, cell2].map((c) => c?.close()));
});

test('a watch through the router ends when its upstream member is killed', { timeout: 60_000 }, async () => {
  // The root namespace is cell-1's (the first cell added): a one-member cell, so the kill cuts it.
  assert.equal((await http(`${routerUrl}/v1/kv/w/a`, { method: 'PUT', body: '1' })).status, 201);
  const res = await fetch(`${routerUrl}/v1/watch?key=/w/&prefix=true&startRevision=1&progressMs=100`);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('baton-cell'), 'cell-1');
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const first = await reader.read();
  assert.ok(first.value !== undefined && Buffer.from(first.value).toString('utf8').includes('/w/a'), 'the event arrived');

  await cell1.cell.kill9(cell1.names[0] as string);
  const killedAt = Date.now();
  // Read until the stream ends or fails, or 5 s pass with it still open.
  const outcome = await Promise.race([
    (async () => {
      try {
        for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
          // progress from before the kill, or nothing
        }
        return 'ended';
      } catch {
        return 'cut';
      }
    })(),
    sleep(5_000).then(() => 'still open'),
  ]);
  assert.notEqual(outcome, 'still open', 'the client was left with an open, silent watch');
  assert.ok(Date.now() - killedAt < 5_000);
  await reader.cancel().catch(() => undefined);
  cell1.cell.start(cell1.names[0] as string);
  await cell1.cell.waitReady(30_000, cell1.names);
});
