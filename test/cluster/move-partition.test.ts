// A move survives a partition of its destination mid-copy (issue 24: the move either completes or
// is rolled back, and never leaves the namespace writable in two cells, or in none for longer than
// the window). Real processes: a control cell and two data cells. The destination's client
// endpoints are registered with the control plane through relays (FaultProxy), and the mover on
// the control leader is the only party of a move that talks to the destination, so cutting the
// relays partitions the destination from the move. The cut is a blackhole, as a partition that
// loses packets: connections stay open and silent, so the mover's own call timeouts must fire.
// The destination's disk is slowed (each WAL fsync 1 s, the fault hook) while the move starts, so
// the cut falls inside the copy (its first import is still being made durable there).
// - Aborted while partitioned: the source keeps taking writes all along, the abort answers at once,
//   the destination's copy is removed once it is reachable again (the move says `cleaned` only then),
//   and the destination acknowledged nothing.
// - Left alone: the move waits in its copy or catch-up (never fenced while the destination cannot
//   be reached, so the source keeps taking writes), and completes once the partition heals: every
//   acknowledged write is on the destination, acks split by the fence.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { FaultControls } from '../faults/fault-controls.js';
import { FaultProxy, freePorts, http, registerCells, sleep, startTestCell, type TestCell } from './harness.js';
import { checkOneOwner, startMoveWriter, type Ack } from './move-writer.js';

let control: TestCell;
const cells: Record<string, TestCell> = {};
const relays: FaultProxy[] = [];
const destinationDisk = new FaultControls([]);
const seeded: Ack[] = [];

const json = (body: unknown): RequestInit => ({ method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
const controlCall = (path: string, init?: RequestInit) => http(`${control.cell.clientUrls()[0]}${path}`, init);

before(async () => {
  let cell1: TestCell;
  let cell2: TestCell;
  [control, cell1, cell2] = await Promise.all([
    startTestCell({ size: 1, extraArgs: ['--cell', 'control', '--control-plane'] }),
    startTestCell({ size: 1, extraArgs: ['--cell', 'cell-1'] }),
    startTestCell({ size: 1, extraArgs: ['--cell', 'cell-2'], nodeArgs: (name) => destinationDisk.nodeArgs(name) }),
  ]);
  cells['cell-1'] = cell1;
  cells['cell-2'] = cell2;
  const controlUrl = control.cell.clientUrls()[0] as string;
  await registerCells(controlUrl, [['cell-1', cell1]]);
  // cell-2 as the control plane knows it: behind one relay per member.
  const endpoints: string[] = [];
  for (const url of cell2.cell.clientUrls()) {
    const [port] = await freePorts(1);
    relays.push(await FaultProxy.start(port as number, Number(new URL(url).port)));
    endpoints.push(`http://127.0.0.1:${port}`);
  }
  for (let attempt = 1; ; attempt++) {
    const added = await controlCall('/v1/control/cells', json({ id: 'cell-2', endpoints }));
    if (added.status === 200 && added.body.pending.length === 0) break;
    assert.ok(attempt < 50, `cell-2 never took the map: ${JSON.stringify(added.body)}`);
    await sleep(200);
  }
  assert.equal((await controlCall('/v1/control/namespaces', json({ prefix: '/part/', cell: 'cell-1' }))).status, 200);
  // ~800 KB of keys: more than one import batch, so the copy is several imports.
  for (let batch = 0; batch < 40; batch++) {
    const success = Array.from({ length: 50 }, (_, i) => ({ put: { key: `/part/seed-${batch}-${i}`, value: `s${batch}-${i}-${'x'.repeat(400)}` } }));
    const answer = await http(`${cell1.cell.clientUrls()[0]}/v1/txn`, json({ compare: [], success, failure: [] }));
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    for (const op of success) seeded.push({ key: op.put.key, value: op.put.value, cell: 'cell-1', revision: answer.body.revision, atMs: Date.now() });
  }
}, { timeout: 180_000 });

after(async () => {
  await Promise.all([control, ...Object.values(cells)].map((cell) => cell?.close()));
  await Promise.all(relays.map((relay) => relay.close()));
  destinationDisk.close();
});

interface ShownMove { phase: string; cleaned?: boolean; fenceRevision?: number; error?: string }

async function shownMove(): Promise<ShownMove | null> {
  const shown = await controlCall('/v1/control/namespaces/part/').catch(() => null);
  return shown?.status === 200 && shown.body.move !== undefined ? (shown.body.move as ShownMove) : null;
}

/** Starts a move of /part/ to cell-2 and cuts cell-2 off while the copy is under way; returns when. */
async function moveAndCutMidCopy(): Promise<number> {
  destinationDisk.set('n1', { fsyncDelayMs: 1_000 });
  const started = await controlCall('/v1/control/moves', json({ prefix: '/part/', to: 'cell-2' }));
  assert.equal(started.status, 200, JSON.stringify(started.body));
  await sleep(300);
  assert.equal((await shownMove())?.phase, 'copying', 'the cut falls inside the copy');
  for (const relay of relays) relay.blackhole();
  destinationDisk.set('n1', { fsyncDelayMs: 0 });
  return Date.now();
}

/** Heals the relays and waits until the (aborted) move says the destination's copy is removed. */
async function healUntilCleaned(): Promise<{ healAt: number; move: ShownMove | null }> {
  const healAt = Date.now();
  for (const relay of relays) relay.unblock();
  let move: ShownMove | null = null;
  for (let poll = 0; poll < 300 && move?.cleaned !== true; poll++) {
    await sleep(100);
    move = await shownMove();
  }
  assert.equal(move?.cleaned, true, `cleaned once reachable: ${JSON.stringify(move)}`);
  return { healAt, move };
}

/** Phases the move shows over `ms`, polled every 200 ms. */
async function phasesOver(ms: number): Promise<Set<string>> {
  const phases = new Set<string>();
  for (const end = Date.now() + ms; Date.now() < end;) {
    const move = await shownMove();
    if (move !== null) phases.add(move.phase);
    await sleep(200);
  }
  return phases;
}

/** The longest time between two acks in [fromMs, toMs] (the namespace's write pause seen by the writer). */
function longestPause(acks: readonly Ack[], fromMs: number, toMs: number): number {
  let previous = fromMs;
  let longest = 0;
  for (const ack of acks) {
    if (ack.atMs < fromMs || ack.atMs > toMs) continue;
    longest = Math.max(longest, ack.atMs - previous);
    previous = ack.atMs;
  }
  return Math.max(longest, toMs - previous);
}

test('destination partitioned mid-copy, move aborted: the source keeps the namespace and takes writes throughout; the copy is removed once reachable', { timeout: 180_000 }, async () => {
  const writer = startMoveWriter(cells, '/part/', 'cell-1');
  await sleep(300);
  const cutAt = await moveAndCutMidCopy();
  const during = await phasesOver(3_000);
  assert.deepEqual([...during].filter((p) => p !== 'copying' && p !== 'catching-up'), [], `no fence while the destination is cut off: ${[...during]}`);

  const aborted = await controlCall('/v1/control/moves/abort', json({ prefix: '/part/' }));
  assert.equal(aborted.status, 200, JSON.stringify(aborted.body));
  assert.equal(aborted.body.move.phase, 'aborted');
  // The destination's copy cannot be removed while it is cut off: the move does not claim it is.
  await sleep(2_000);
  assert.equal((await shownMove())?.cleaned, false, 'not cleaned while the destination is unreachable');
  const { healAt, move } = await healUntilCleaned();
  await writer.stop();
  const pause = longestPause(writer.acks, cutAt, healAt);
  assert.ok(pause < 2_000, `the source took writes throughout the partition (longest pause ${pause} ms)`);
  await checkOneOwner(cells, '/part/', move as ShownMove, 'cell-1', 'cell-2', [...seeded, ...writer.acks]);
  console.log(`aborted while partitioned: ${writer.acks.length} acks, ${writer.acks.filter((a) => a.atMs >= cutAt && a.atMs <= healAt).length} during the cut, longest pause ${pause} ms`);
});

test('destination partitioned mid-copy, left alone: the move waits unfenced and completes after the heal, nothing lost', { timeout: 180_000 }, async () => {
  const writer = startMoveWriter(cells, '/part/', 'cell-1');
  await sleep(300);
  const cutAt = await moveAndCutMidCopy();
  // Longer than the mover's call timeout (5 s): silent calls to the destination time out and are retried.
  const during = await phasesOver(7_000);
  assert.deepEqual([...during].filter((p) => p !== 'copying' && p !== 'catching-up'), [], `no fence while the destination is cut off: ${[...during]}`);
  const healAt = Date.now();
  for (const relay of relays) relay.unblock();
  let move: ShownMove | null = null;
  for (let poll = 0; poll < 600 && !(move?.phase === 'released' && move.cleaned === true); poll++) {
    await sleep(100);
    move = await shownMove();
    assert.notEqual(move?.phase, 'aborted', JSON.stringify(move));
  }
  assert.equal(move?.phase, 'released', `completed after the heal: ${JSON.stringify(move)}`);
  // The writer follows the source's wrong_cell to the destination.
  for (let poll = 0; poll < 100 && !writer.acks.some((a) => a.cell === 'cell-2'); poll++) await sleep(100);
  await writer.stop();
  const pause = longestPause(writer.acks, cutAt, healAt);
  assert.ok(pause < 2_000, `the source took writes throughout the partition (longest pause ${pause} ms)`);
  await checkOneOwner(cells, '/part/', move as ShownMove, 'cell-1', 'cell-2', [...seeded, ...writer.acks]);
  console.log(`partitioned ${healAt - cutAt} ms, then released: ${writer.acks.length} acks (${writer.acks.filter((a) => a.cell === 'cell-2').length} on the destination), longest pause during the cut ${pause} ms`);
});
