// A member behind its cell must not refuse a linearizable read for a namespace its cell now
// owns. Real processes: a control plane, two cells; `/x/` on cell-2; one follower of cell-1 cut
// off from its peers; `/x/` moved to cell-1. The cut-off member still applies the older table
// (cell-2 owns `/x/`): it used to answer a linearizable read with a definite 421 wrong_cell naming
// cell-2 before its ReadIndex, which the mover takes as a source's refusal (a move aborted in the
// fault run across cells, seed 3). Now it cannot confirm the read and answers unavailable or
// times out, while cell-1's connected members serve the read.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { findLeader, http, registerCells, sleep, startTestCell, type TestCell } from './harness.js';

const started: TestCell[] = [];
after(async () => {
  await Promise.all(started.map((cell) => cell.close()));
});

const json = (body: unknown): RequestInit => ({ method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

test('a cut-off member does not answer wrong_cell from its older table to a linearizable read', { timeout: 120_000 }, async () => {
  const [control, cell1, cell2] = await Promise.all([
    startTestCell({ size: 1, extraArgs: ['--cell', 'control', '--control-plane'] }),
    startTestCell({ size: 3, proxies: true, extraArgs: ['--cell', 'cell-1'] }),
    startTestCell({ size: 3, extraArgs: ['--cell', 'cell-2'] }),
  ]);
  started.push(control, cell1, cell2);
  const controlUrl = control.cell.clientUrls()[0] as string;
  await registerCells(controlUrl, [['cell-1', cell1], ['cell-2', cell2]]);
  assert.equal((await http(`${controlUrl}/v1/control/namespaces`, json({ prefix: '/x/', cell: 'cell-2' }))).status, 200);
  const leader = await findLeader(cell1);
  const cutOff = cell1.names.find((name) => name !== leader) as string;
  // Every member of cell-1 applied the table naming cell-2 before the cut.
  for (let i = 0; i < 50; i++) {
    const read = await http(`${cell1.cell.clientUrl(cutOff)}/v1/kv/x/?prefix=true`, { timeoutMs: 3_000 });
    if (read.status === 421) break;
    await sleep(100);
  }
  cell1.isolate(cutOff);
  assert.equal((await http(`${controlUrl}/v1/control/moves`, json({ prefix: '/x/', to: 'cell-1' }))).status, 200);
  let phase = '';
  for (let i = 0; i < 300 && phase !== 'released' && phase !== 'aborted'; i++) {
    await sleep(200);
    phase = (await http(`${controlUrl}/v1/control/namespaces/x/`)).body.move?.phase ?? '';
  }
  assert.equal(phase, 'released');
  for (const name of cell1.names.filter((n) => n !== cutOff)) {
    assert.equal((await http(`${cell1.cell.clientUrl(name)}/v1/kv/x/?prefix=true`)).status, 200, `${name} serves /x/`);
  }
  const stale = await http(`${cell1.cell.clientUrl(cutOff)}/v1/kv/x/?prefix=true`, { timeoutMs: 8_000 }).catch((error: Error) => ({ status: 0, body: { error: error.message } }));
  assert.notEqual(stale.status, 421, `the cut-off member refused from its older table: ${JSON.stringify(stale.body)}`);
  assert.ok(stale.status === 0 || stale.status >= 500, `unavailable or no answer, not ${stale.status} ${JSON.stringify(stale.body)}`);
  cell1.healAll();
});
