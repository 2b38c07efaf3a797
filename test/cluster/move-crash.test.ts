// A move survives kill -9 of the control plane's leader (real processes: a 3-member control cell,
// two data cells, the move driven by the control leader). The leader is killed while the move is
// open (before its flip); a new control leader resumes the move from its durable record in the
// cell map and completes it: every key is on the destination with its value, version and
// revisions, the source refuses writes there, and the destination accepts them.
// Second test: the landing (the destination's last import with its table) cannot happen because
// the destination is stopped (SIGSTOP) once the record says fenced or flipped, so the move is left
// flipped, and the control leader is killed there. The destination's disk is made slow (each WAL
// fsync 1 s, the fault hook) for that test: the fence-to-flip step takes a few commits of the
// source and the control cell, too short to see reliably on a loaded machine, while a landing
// cannot commit within a second of the fence; with the destination back, the new leader lands it from
// a read of the fenced source (it knows nothing of what the destination holds: a full copy with
// the floor and the table in the landing), and every key is there with its revisions.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { FaultControls } from '../faults/fault-controls.js';
import { findLeader, http, sleep, type TestCell, anyMember, startTwoCells } from './harness.js';

let control: TestCell;
let cell1: TestCell;
let cell2: TestCell;
const destinationDisk = new FaultControls([]);

const json = (body: unknown): RequestInit => ({ method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

before(async () => {
  [control, cell1, cell2] = await startTwoCells({ controlSize: 3, cell2: { nodeArgs: (name) => destinationDisk.nodeArgs(name) } });
}, { timeout: 120_000 });

/** The control cell's answer from whichever member answers (one may be killed). */
const anyControl = (path: string, init?: RequestInit) => anyMember(control, path, init);

after(async () => {
  await Promise.all([control, cell1, cell2].map((cell) => cell?.close()));
  destinationDisk.close();
});

test('kill -9 of the control leader mid-move: a new leader resumes the move from its record and completes it', { timeout: 180_000 }, async () => {
  assert.equal((await anyControl('/v1/control/namespaces', json({ prefix: '/crash/', cell: 'cell-1' }))).status, 200);
  const source = cell1.cell.clientUrls()[0] as string;
  const destination = cell2.cell.clientUrls()[0] as string;
  // Enough keys (some rewritten: versions above 1) that the copy takes a while.
  const written = new Map<string, string>();
  for (let batch = 0; batch < 40; batch++) {
    const success = Array.from({ length: 50 }, (_, i) => ({ put: { key: `/crash/k${batch}-${i}`, value: `v${batch}-${i}-${'x'.repeat(400)}` } }));
    const answer = await http(`${source}/v1/txn`, json({ compare: [], success, failure: [] }));
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    for (const op of success) written.set(op.put.key, op.put.value);
  }
  assert.equal((await http(`${source}/v1/kv/crash/k0-0`, { method: 'PUT', body: 'rewritten' })).status, 200);
  written.set('/crash/k0-0', 'rewritten');
  const before = (await http(`${source}/v1/kv/crash/?prefix=true`)).body.kvs as { key: string; version: number; createRevision: number; modRevision: number }[];

  const leader = await findLeader(control);
  const started = await anyControl('/v1/control/moves', json({ prefix: '/crash/', to: 'cell-2' }));
  assert.equal(started.status, 200, JSON.stringify(started.body));
  // Killed once the record says the copy is done (the leader's memory of it dies with it), or at
  // once if the leader has not recorded that within 2 s.
  let atKill = started.body.move.phase as string;
  for (let poll = 0; poll < 100 && atKill === 'copying'; poll++) {
    await sleep(20);
    const shown = await http(`${control.cell.clientUrl(leader)}/v1/control/namespaces/crash/`).catch(() => null);
    if (shown?.status === 200) atKill = shown.body.move.phase;
  }
  control.cell.signal(leader, 'SIGKILL');
  await control.cell.waitExit(leader);
  let move: { phase: string; cleaned?: boolean; fenceRevision?: number } = started.body.move;
  const seenPhases = new Set<string>();
  for (let poll = 0; poll < 600 && !(move.phase === 'released' && move.cleaned === true); poll++) {
    await sleep(100);
    const shown = await anyControl('/v1/control/namespaces/crash/');
    if (shown.status === 200) move = shown.body.move;
    seenPhases.add(move.phase);
    assert.notEqual(move.phase, 'aborted', JSON.stringify(move));
  }
  assert.equal(move.phase, 'released', `the move completed after the leader's death (phases seen: ${[...seenPhases].join(',')})`);

  const after = (await http(`${destination}/v1/kv/crash/?prefix=true`)).body.kvs as { key: string; value: string; version: number; createRevision: number; modRevision: number }[];
  assert.equal(after.length, written.size);
  for (const kv of after) assert.equal(kv.value, written.get(kv.key), kv.key);
  assert.deepEqual(after.map(({ key, version, createRevision, modRevision }) => ({ key, version, createRevision, modRevision })),
    before.map(({ key, version, createRevision, modRevision }) => ({ key, version, createRevision, modRevision })));
  assert.equal((await http(`${source}/v1/kv/crash/late`, { method: 'PUT', body: 'x' })).status, 421);
  const write = await http(`${destination}/v1/kv/crash/new`, { method: 'PUT', body: 'n' });
  assert.equal(write.status, 201, JSON.stringify(write.body));
  assert.ok(write.body.revision > (move.fenceRevision as number), 'the destination writes above the fence revision');
  console.log(`control leader ${leader} killed with the move ${atKill}; phases seen after: ${[...seenPhases].join(' -> ')}`);
});

test('kill -9 of the control leader with the move flipped and not landed (destination stopped): the new leader lands it from the fenced source', { timeout: 240_000 }, async () => {
  // The member the first test killed comes back: this test kills another one.
  for (const name of control.cell.names()) if (!control.cell.isRunning(name)) control.cell.start(name);
  await control.cell.waitReady(60_000);
  assert.equal((await anyControl('/v1/control/namespaces', json({ prefix: '/land/', cell: 'cell-1' }))).status, 200);
  const source = cell1.cell.clientUrls()[0] as string;
  const destinationName = cell2.cell.names()[0] as string;
  const destination = cell2.cell.clientUrls()[0] as string;
  const written = new Map<string, string>();
  for (let batch = 0; batch < 10; batch++) {
    const success = Array.from({ length: 50 }, (_, i) => ({ put: { key: `/land/k${batch}-${i}`, value: `v${batch}-${i}` } }));
    const answer = await http(`${source}/v1/txn`, json({ compare: [], success, failure: [] }));
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    for (const op of success) written.set(op.put.key, op.put.value);
  }
  const before = (await http(`${source}/v1/kv/land/?prefix=true`)).body.kvs as { key: string; version: number; createRevision: number; modRevision: number }[];

  const leader = await findLeader(control);
  destinationDisk.set(destinationName, { fsyncDelayMs: 1_000 });
  await sleep(destinationDisk.pollMs * 3);
  const started = await anyControl('/v1/control/moves', json({ prefix: '/land/', to: 'cell-2' }));
  assert.equal(started.status, 200, JSON.stringify(started.body));
  let phase = started.body.move.phase as string;
  // Stopped once flipped: the flip waits for the destination to hold the fence's table (a
  // destination stopped before that has the move aborted instead); the landing's import is then
  // still on its slow disk.
  for (let poll = 0; poll < 6_000 && phase !== 'flipped' && phase !== 'released'; poll++) {
    await sleep(5);
    const shown = await http(`${control.cell.clientUrl(leader)}/v1/control/namespaces/land/`).catch(() => null);
    if (shown?.status === 200) phase = shown.body.move.phase;
  }
  cell2.cell.signal(destinationName, 'SIGSTOP');
  destinationDisk.set(destinationName, { fsyncDelayMs: 0 }); // read when it runs again
  try {
    assert.ok(phase === 'flipped', `the destination was stopped before the landing (phase ${phase})`);
    // The flip commits without the destination; the landing cannot.
    let move = (await anyControl('/v1/control/namespaces/land/')).body.move as { phase: string };
    for (let poll = 0; poll < 200 && move.phase === 'fenced'; poll++) {
      await sleep(50);
      move = (await anyControl('/v1/control/namespaces/land/')).body.move;
    }
    assert.equal(move.phase, 'flipped', JSON.stringify(move));
    // The source keeps the namespace fenced: writes and linearizable reads refused naming the
    // destination, serializable reads served.
    const refused = await http(`${source}/v1/kv/land/late`, { method: 'PUT', body: 'x' });
    assert.equal(refused.status, 421);
    assert.equal(refused.body.error.cell, 'cell-2');
    assert.equal((await http(`${source}/v1/kv/land/k0-0`)).status, 421);
    assert.equal((await http(`${source}/v1/kv/land/k0-0?consistency=serializable`)).status, 200);
    control.cell.signal(leader, 'SIGKILL');
    await control.cell.waitExit(leader);
  } finally {
    cell2.cell.signal(destinationName, 'SIGCONT');
  }
  let move: { phase: string; cleaned?: boolean; fenceRevision?: number; windowMs?: number } = started.body.move;
  for (let poll = 0; poll < 900 && !(move.phase === 'released' && move.cleaned === true); poll++) {
    await sleep(100);
    const shown = await anyControl('/v1/control/namespaces/land/');
    if (shown.status === 200) move = shown.body.move;
    assert.notEqual(move.phase, 'aborted', JSON.stringify(move));
  }
  assert.equal(move.phase, 'released', JSON.stringify(move));
  assert.equal(move.windowMs, undefined, 'landed by the new leader (no window of its own to report)');
  const after = (await http(`${destination}/v1/kv/land/?prefix=true`)).body.kvs as { key: string; value: string; version: number; createRevision: number; modRevision: number }[];
  assert.equal(after.length, written.size);
  for (const kv of after) assert.equal(kv.value, written.get(kv.key), kv.key);
  assert.deepEqual(after.map(({ key, version, createRevision, modRevision }) => ({ key, version, createRevision, modRevision })),
    before.map(({ key, version, createRevision, modRevision }) => ({ key, version, createRevision, modRevision })));
  const write = await http(`${destination}/v1/kv/land/new`, { method: 'PUT', body: 'n' });
  assert.equal(write.status, 201, JSON.stringify(write.body));
  assert.ok(write.body.revision > (move.fenceRevision as number), `the destination writes above the fence revision ${move.fenceRevision}: ${write.body.revision}`);
  assert.equal((await http(`${source}/v1/kv/land/late`, { method: 'PUT', body: 'x' })).status, 421);
});
