// Creating a namespace on another cell than its parent's is a move of an empty range
// (src/control/namespace-create.ts): the answer comes once the move is released, the new cell
// takes writes, the parent's cell refuses them naming it; and writes racing the creation on the
// parent's cell are never stranded there: every acknowledged one is on the new cell afterwards.
// A namespace that already holds keys is refused (it is moved, not created).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { http, postJson as post, sleep, startTwoCells, type TestCell } from './harness.js';

let control: TestCell;
let cell1: TestCell;
let cell2: TestCell;

const controlUrl = (): string => control.cell.clientUrls()[0] as string;
const url1 = (): string => cell1.cell.clientUrls()[0] as string;
const url2 = (): string => cell2.cell.clientUrls()[0] as string;

before(async () => {
  [control, cell1, cell2] = await startTwoCells(); // the root namespace is cell-1's
}, { timeout: 120_000 });

after(async () => {
  await Promise.all([control, cell1, cell2].map((cell) => cell?.close()));
});

test('a namespace created on another cell arrives there by a move; the parent cell refuses it', { timeout: 60_000 }, async () => {
  const t0 = Date.now();
  const created = await http(`${controlUrl()}/v1/control/namespaces`, post({ prefix: '/fresh/', cell: 'cell-2' }));
  console.log(`created in ${Date.now() - t0} ms: ${JSON.stringify(created.body.move)}`);
  assert.equal(created.status, 200, JSON.stringify(created.body));
  assert.equal(created.body.cell, 'cell-2');
  assert.equal(created.body.state, 'active');
  assert.equal(created.body.move?.phase, 'released', 'answered once its move was released');
  assert.equal(created.body.move?.from, 'cell-1');
  const put = await http(`${url2()}/v1/kv/fresh/a`, { method: 'PUT', body: 'on cell-2' });
  assert.ok(put.status === 200 || put.status === 201, JSON.stringify(put.body));
  const refused = await http(`${url1()}/v1/kv/fresh/b`, { method: 'PUT', body: 'x' });
  assert.equal(refused.status, 421, JSON.stringify(refused.body));
  assert.equal(refused.body.error?.code, 'wrong_cell');
  assert.equal(refused.body.error?.cell, 'cell-2');
  // On its parent's cell: a plain change, no move.
  const local = await http(`${controlUrl()}/v1/control/namespaces`, post({ prefix: '/home/', cell: 'cell-1' }));
  assert.equal(local.status, 200, JSON.stringify(local.body));
  assert.equal(local.body.move, undefined);
});

test('a namespace with keys on the parent cell is refused, and nothing changes', { timeout: 60_000 }, async () => {
  await http(`${url1()}/v1/kv/busy/k`, { method: 'PUT', body: 'v' });
  const refused = await http(`${controlUrl()}/v1/control/namespaces`, post({ prefix: '/busy/', cell: 'cell-2' }));
  assert.equal(refused.status, 400, JSON.stringify(refused.body));
  assert.match(refused.body.error.message, /moved, not created/);
  const map = await http(`${controlUrl()}/v1/control/namespaces`);
  assert.ok(!map.body.namespaces.some((n: { prefix: string }) => n.prefix === '/busy/'));
  assert.equal((await http(`${url1()}/v1/kv/busy/k`)).status, 200, 'the key stays where it was');
});

test('writes racing a creation on the parent cell are carried to the new cell, none stranded', { timeout: 120_000 }, async () => {
  let raced = 0;
  for (const [round, delayMs] of [[0, 1], [1, 3], [2, 6], [3, 12], [4, 25]] as const) {
    const prefix = `/race${round}/`;
    const acked = new Map<string, string>();
    let creating = true;
    const answer = http(`${controlUrl()}/v1/control/namespaces`, post({ prefix, cell: 'cell-2' }))
      .finally(() => void (creating = false));
    const writer = (async () => {
      await sleep(delayMs);
      for (let n = 0; creating && n < 2_000; n++) {
        const key = `${prefix}k${n}`;
        const res = await http(`${url1()}/v1/kv${key}`, { method: 'PUT', body: `v${n}` });
        if (res.status === 200 || res.status === 201) acked.set(key, `v${n}`);
        else assert.equal(res.status, 421, `${key}: ${JSON.stringify(res.body)}`);
      }
    })();
    const created = await answer;
    await writer;
    if (created.status === 400) continue; // the writer's first key came before the check: refused, fine
    assert.equal(created.status, 200, JSON.stringify(created.body));
    assert.equal(created.body.cell, 'cell-2', JSON.stringify(created.body));
    if (acked.size > 0) raced++;
    console.log(`round ${round}: ${acked.size} writes acknowledged on cell-1 during the creation; move ${JSON.stringify(created.body.move)}`);
    for (const [key, value] of acked) {
      const got = await http(`${url2()}/v1/kv${key}`);
      assert.equal(got.status, 200, `${key}, acknowledged by cell-1 during the creation, is on cell-2: ${JSON.stringify(got.body)}`);
      assert.equal(got.body.kvs[0].value, value);
    }
  }
  assert.ok(raced > 0, 'at least one creation had writes acknowledged on the parent cell while it ran');
});
