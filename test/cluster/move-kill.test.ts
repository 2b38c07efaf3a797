// A move survives kill -9 of a data cell's leader (real processes: a control cell, two data cells
// of 3 members each, a writer following wrong_cell from cell to cell). The source's leader is
// killed in one move, the destination's in the next, each while the move is open. Each move ends
// (bounded) either released or aborted, and then: exactly one cell takes writes to the namespace
// (the other answers wrong_cell), every acknowledged write is on it with its value, and no two
// cells accepted writes for it at once: in a released move every ack of the source is at or below
// the fence revision and every ack of the destination above it; in an aborted one the
// destination acknowledged nothing.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { findLeader, http, sleep, startTestCell, type TestCell, registerCells } from './harness.js';
import { checkOneOwner, startMoveWriter } from './move-writer.js';

let control: TestCell;
const cells: Record<string, TestCell> = {};
const json = (body: unknown): RequestInit => ({ method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

before(async () => {
  let cell1: TestCell;
  let cell2: TestCell;
  [control, cell1, cell2] = await Promise.all([
    startTestCell({ size: 1, extraArgs: ['--cell', 'control', '--control-plane'] }),
    startTestCell({ size: 3, extraArgs: ['--cell', 'cell-1'] }),
    startTestCell({ size: 3, extraArgs: ['--cell', 'cell-2'] }),
  ]);
  cells['cell-1'] = cell1;
  cells['cell-2'] = cell2;
  const controlUrl = control.cell.clientUrls()[0] as string;
  await registerCells(controlUrl, Object.entries(cells));
  assert.equal((await http(`${controlUrl}/v1/control/namespaces`, json({ prefix: '/kill/', cell: 'cell-1' }))).status, 200);
}, { timeout: 180_000 });

after(async () => {
  await Promise.all([control, ...Object.values(cells)].map((cell) => cell?.close()));
});

async function leaderUrl(id: string): Promise<string> {
  const cell = cells[id] as TestCell;
  return cell.cell.clientUrl(await findLeader(cell));
}

async function controlCall(path: string, init?: RequestInit) {
  return http(`${control.cell.clientUrls()[0]}${path}`, init);
}

/** Starts a move of /kill/ to `to`, kills `victim`'s leader while it is open, waits for its end. */
async function moveWhileKilling(to: string, victim: string): Promise<void> {
  const from = to === 'cell-1' ? 'cell-2' : 'cell-1';
  // Enough keys that the copy takes a moment.
  for (let batch = 0; batch < 6; batch++) {
    const seed = Array.from({ length: 50 }, (_, i) => ({ put: { key: `/kill/seed-${to}-${batch}-${i}`, value: 'x'.repeat(300) } }));
    const seeded = await http(`${await leaderUrl(from)}/v1/txn`, json({ compare: [], success: seed, failure: [] }));
    assert.equal(seeded.status, 200, JSON.stringify(seeded.body));
  }
  const writer = startMoveWriter(cells, '/kill/', from);
  await sleep(500);
  const leader = await findLeader(cells[victim] as TestCell);
  const started = await controlCall('/v1/control/moves', json({ prefix: '/kill/', to }));
  assert.equal(started.status, 200, JSON.stringify(started.body));
  let move: { phase: string; cleaned?: boolean; fenceRevision?: number; error?: string } = started.body.move;
  const killedIn = move.phase;
  await sleep(150);
  (cells[victim] as TestCell).cell.signal(leader, 'SIGKILL');
  await (cells[victim] as TestCell).cell.waitExit(leader);
  const phases = new Set<string>();
  for (let poll = 0; poll < 1_200 && !((move.phase === 'released' || move.phase === 'aborted') && move.cleaned === true); poll++) {
    await sleep(100);
    const shown = await controlCall('/v1/control/namespaces/kill/');
    if (shown.status === 200 && shown.body.move !== undefined) move = shown.body.move;
    phases.add(move.phase);
  }
  // The killed member comes back (it rejoins its cell from its own data) for what follows.
  (cells[victim] as TestCell).cell.start(leader);
  // Until it knows its cell's leader: only then can it answer a write for /kill/ with the owner
  // (a fixed 1 s once left it answering 503 `no leader` on a loaded machine).
  const restartedUrl = (cells[victim] as TestCell).cell.clientUrl(leader);
  for (let poll = 0; poll < 300; poll++) {
    const status = await http(`${restartedUrl}/v1/cluster/status`, { timeoutMs: 2_000 }).catch(() => null);
    if (status?.status === 200 && typeof status.body.leader === 'number' && status.body.leader !== 0) break;
    await sleep(100);
  }
  await writer.stop();
  assert.ok(move.phase === 'released' || move.phase === 'aborted', `the move ended (phases: ${[...phases].join(',')}): ${JSON.stringify(move)}`);
  await checkOneOwner(cells, '/kill/', move, from, to, writer.acks);
  console.log(`kill -9 of ${victim}'s leader ${leader} (move ${killedIn} at the start): ${move.phase}, phases seen ${[...phases].join(' -> ')}, `
    + `${writer.acks.length} acks (${writer.acks.filter((a) => a.cell === from).length} on ${from}, ${writer.acks.filter((a) => a.cell === to).length} on ${to})`);
}

test('kill -9 of the source cell\'s leader mid-move: the move completes or rolls back, one writable owner, nothing lost', { timeout: 240_000 }, async () => {
  await moveWhileKilling('cell-2', 'cell-1');
});

test('kill -9 of the destination cell\'s leader mid-move: the move completes or rolls back, one writable owner, nothing lost', { timeout: 240_000 }, async () => {
  // Wherever /kill/ ended up, it moves to the other cell, whose leader is killed.
  const shown = await controlCall('/v1/control/namespaces/kill/');
  const to = shown.body.cell === 'cell-1' ? 'cell-2' : 'cell-1';
  await moveWhileKilling(to, to);
});
