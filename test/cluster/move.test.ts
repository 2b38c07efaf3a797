// Moving namespaces between cells with real processes (`baton dev --cells 2`): a namespace moved
// back and forth under a continuous write load through the router. Checked: every acknowledged
// write is on the final owner with its value; no write was accepted by two cells (every ack from
// the source is at or below the move's fence revision, every ack from the destination above it);
// a watcher of the namespace on the source is ended with wrong_cell naming the destination and a
// resume revision, and one resumed there from it: together they see every acknowledged write
// exactly once; a leased key moves with its lease (remaining TTL);
// a lock's holder keeps its key and token and the next token is above every earlier one; a
// write's retry with the same Request-ID after the move gets the source's first outcome from the
// destination (the dedup record moved) and is not applied twice. The
// write window (fence -> the destination's table) of each move is printed (p50/p99).
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cliPath } from './cli-run.js';
import { http } from './harness.js';

const scratch = mkdtempSync(join(tmpdir(), 'baton-move-'));
let child: ChildProcess | null = null;
after(async () => {
  if (child !== null && child.exitCode === null) {
    child.kill('SIGTERM');
    await new Promise((resolve) => child?.once('exit', resolve));
  }
  rmSync(scratch, { recursive: true, force: true });
});

function startDev(basePort: number): Promise<string | null> {
  const started = spawn(process.execPath, [cliPath, 'dev', '--cells', '2', '--base-port', String(basePort), '--data-dir', join(scratch, String(basePort))], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child = started;
  let out = '';
  let err = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ready line in 120 s:\n${err.slice(-2000)}`)), 120_000);
    started.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
    started.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const line = out.split('\n').find((l) => l.startsWith('Baton dev cells ready:'));
      if (line !== undefined) {
        clearTimeout(timer);
        resolve(line);
      }
    });
    started.once('exit', (code) => {
      clearTimeout(timer);
      if (code === 2 && /already in use/.test(err)) resolve(null);
      else reject(new Error(`baton dev exited ${code}:\n${err.slice(-2000)}`));
    });
  });
}

const json = (body: unknown): RequestInit => ({ method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface Ack { key: string; value: string; cell: string; revision: number; atMs: number }
interface MoveJson { phase: string; from: string; to: string; fenceRevision?: number; windowMs?: number; cleaned?: boolean }

/** An SSE watch of a prefix on one cell member: collects every event (key, value, revision). */
function watchEvents(url: string): { events: { key: string; value: string; revision: number; type: string }[]; errors: unknown[]; close(): void } {
  const controller = new AbortController();
  const events: { key: string; value: string; revision: number; type: string }[] = [];
  const errors: unknown[] = [];
  void (async () => {
    try {
      const response = await fetch(url, { signal: controller.signal });
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += Buffer.from(value).toString('utf8');
        let cut;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const message = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          for (const line of message.split('\n')) {
            if (!line.startsWith('data:')) continue;
            const batch = JSON.parse(line.slice(5)) as { events?: { type: string; kv: { key: string; value: string; modRevision: number } }[]; error?: unknown };
            if (batch.error !== undefined) errors.push(batch.error);
            for (const e of batch.events ?? []) events.push({ key: e.kv.key, value: e.kv.value, revision: e.kv.modRevision, type: e.type });
          }
        }
      }
    } catch (error) {
      if ((error as Error).name !== 'AbortError') errors.push(String(error));
    }
  })();
  return { events, errors, close: () => controller.abort() };
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}

test('a namespace moves between cells under write load: nothing lost, one writer, monotonic tokens, exact watches', { timeout: 420_000 }, async () => {
  let line: string | null = null;
  let base = 0;
  for (let attempt = 0; attempt < 4 && line === null; attempt++) {
    base = 20_000 + 1_000 * Math.floor(Math.random() * 40);
    line = await startDev(base);
  }
  assert.ok(line !== null, 'found free ports');
  const router = `http://127.0.0.1:${base}`;
  const cellUrls: Record<string, string[]> = {
    'cell-1': (/cell-1=(\S+)/.exec(line)?.[1] ?? '').split(','),
    'cell-2': (/cell-2=(\S+)/.exec(line)?.[1] ?? '').split(','),
  };
  for (const prefix of ['/mv/', '/locks/pay/']) {
    const created = await http(`${router}/v1/control/namespaces`, json({ prefix, cell: 'cell-1' }));
    assert.equal(created.status, 200, JSON.stringify(created.body));
  }
  // The router learns the namespaces through its watch of the map.
  for (let i = 0; i < 100; i++) {
    const put = await http(`${router}/v1/kv/mv/seed`, { method: 'PUT', body: 'seed' });
    if (put.status < 300 && put.headers.get('baton-cell') === 'cell-1') break;
    await sleep(100);
  }

  // A leased (ephemeral) key and a lock with a history of tokens, all on cell-1.
  const lease = await http(`${router}/v1/leases`, { ...json({ ttl: 60 }), headers: { 'content-type': 'application/json', 'baton-namespace': '/mv/' } });
  assert.equal(lease.status, 200, JSON.stringify(lease.body));
  const leaseId = lease.body.id as number;
  assert.equal((await http(`${router}/v1/kv/mv/ephemeral`, { method: 'PUT', body: 'e', headers: { 'lease-id': String(leaseId) } })).status, 201);
  const lockLease = await http(`${router}/v1/leases`, { ...json({ ttl: 60 }), headers: { 'content-type': 'application/json', 'baton-namespace': '/locks/pay/' } });
  const tokensBefore: number[] = [];
  for (let i = 0; i < 3; i++) {
    const acquired = await http(`${router}/v1/locks/pay/acquire`, json({ lease: lockLease.body.id, owner: `before-${i}` }));
    assert.equal(acquired.status, 200, JSON.stringify(acquired.body));
    tokensBefore.push(acquired.body.fencingToken);
    if (i < 2) assert.equal((await http(`${router}/v1/locks/pay/release`, json({ key: acquired.body.key }))).status, 200);
  }
  const heldKey = (await http(`${router}/v1/locks/pay`)).body.holder.key as string;

  // A write with a Request-ID, acknowledged by the source: its retry after the move must not apply twice.
  const idem = await http(`${router}/v1/kv/mv/idem`, { method: 'PUT', body: 'once', headers: { 'request-id': 'move-test-idem-1' } });
  assert.equal(idem.status, 201, JSON.stringify(idem.body));
  assert.equal(idem.headers.get('baton-cell'), 'cell-1');

  // The source's watcher of /mv/, from now.
  const startRevision = (await http(`${cellUrls['cell-1']?.[0]}/v1/kv/mv/seed`)).body.revision as number;
  const sourceWatch = watchEvents(`${cellUrls['cell-1']?.[0]}/v1/watch?key=/mv/&prefix=true&startRevision=${startRevision + 1}`);

  // The background load: 2 writers through the router, each write a new key, retried until acked.
  const acks: Ack[] = [];
  let loading = true;
  let attemptsRefused = 0;
  const writer = async (w: number): Promise<void> => {
    for (let i = 0; loading && i < 200_000; i++) {
      const key = `/mv/w${w}-${i}`;
      for (let attempt = 0; attempt < 400; attempt++) {
        let answer;
        try {
          answer = await http(`${router}/v1/kv${key}`, { method: 'PUT', body: `v${i}`, timeoutMs: 5_000 });
        } catch {
          await sleep(5);
          continue;
        }
        if (answer.status === 200 || answer.status === 201) {
          acks.push({ key, value: `v${i}`, cell: answer.headers.get('baton-cell') ?? '', revision: answer.body.revision, atMs: Date.now() });
          break;
        }
        attemptsRefused++;
        assert.ok([421, 503].includes(answer.status), `a write during a move is refused as wrong_cell or unavailable, not ${answer.status} ${JSON.stringify(answer.body)}`);
        await sleep(5);
      }
    }
  };
  const writers = [writer(0), writer(1)];
  await sleep(1_000);

  // The first move, from cell-1 to cell-2, through the CLI with --wait.
  const moved = await runCli(['--endpoints', router, 'ns', 'move', '/mv/', '--to', 'cell-2', '--wait', '-w', 'json']);
  assert.equal(moved.code, 0, moved.err);
  const first = (JSON.parse(moved.out) as { move: MoveJson }).move;
  assert.equal(first.phase, 'released');
  const fence = first.fenceRevision as number;
  assert.ok(Number.isSafeInteger(fence));
  await sleep(1_000);
  // The retry (same Request-ID, same body) reaches the destination, which answers the source's
  // first outcome from the dedup record moved with the namespace; the key was written once.
  const retried = await http(`${router}/v1/kv/mv/idem`, { method: 'PUT', body: 'once', headers: { 'request-id': 'move-test-idem-1' } });
  assert.ok(retried.status < 300, JSON.stringify(retried.body));
  assert.equal(retried.headers.get('baton-cell'), 'cell-2');
  assert.equal(retried.body.revision, idem.body.revision, 'the first outcome, not a second write');
  assert.equal((await http(`${cellUrls['cell-2']?.[0]}/v1/kv/mv/idem`)).body.kvs[0]?.version, 1);
  // The source ended its watcher with wrong_cell naming the destination and where to resume; the
  // client resumes there (docs/design/cells.md: revisions of the namespace above the fence are the
  // destination's, none of it at or below the fence is in the destination's history).
  assert.equal(sourceWatch.errors.length, 1, JSON.stringify(sourceWatch.errors));
  const ended = sourceWatch.errors[0] as { code: string; cell: string; namespace: string; endpoints: string[]; resumeRevision: number; lastRevision: number };
  assert.deepEqual([ended.code, ended.cell, ended.namespace], ['wrong_cell', 'cell-2', '/mv/']);
  assert.deepEqual(ended.endpoints, cellUrls['cell-2']);
  assert.ok(ended.resumeRevision === ended.lastRevision + 1 && ended.resumeRevision <= fence + 1, `resume at ${ended.resumeRevision}, fence ${fence}`);
  const destWatch = watchEvents(`${ended.endpoints[0]}/v1/watch?key=/mv/&prefix=true&startRevision=${ended.resumeRevision}`);

  // More moves back and forth under the same load, for the window figures.
  const moves: MoveJson[] = [first];
  for (let i = 0; i < 8; i++) {
    const to = i % 2 === 0 ? 'cell-1' : 'cell-2';
    const started = await http(`${router}/v1/control/moves`, json({ prefix: '/mv/', to }));
    assert.equal(started.status, 200, JSON.stringify(started.body));
    let move: MoveJson = started.body.move;
    for (let poll = 0; poll < 600 && !(move.phase === 'released' && move.cleaned === true); poll++) {
      await sleep(100);
      move = (await http(`${router}/v1/control/namespaces/mv/`)).body.move;
      assert.notEqual(move.phase, 'aborted', JSON.stringify(move));
    }
    assert.equal(move.phase, 'released');
    moves.push(move);
    await sleep(300);
  }
  await sleep(500);
  loading = false;
  await Promise.all(writers);
  await sleep(500);
  sourceWatch.close();
  destWatch.close();

  // Every acknowledged write is on the final owner (cell-2) with its value.
  const final = await http(`${cellUrls['cell-2']?.[0]}/v1/kv/mv/?prefix=true`);
  assert.equal(final.status, 200);
  const stored = new Map((final.body.kvs as { key: string; value: string }[]).map((kv) => [kv.key, kv.value]));
  const lost = acks.filter((a) => stored.get(a.key) !== a.value);
  assert.deepEqual(lost.slice(0, 5), [], `${lost.length} of ${acks.length} acknowledged writes lost`);
  // The source holds none of it any more and refuses writes there.
  const sourceWrite = await http(`${cellUrls['cell-1']?.[0]}/v1/kv/mv/late`, { method: 'PUT', body: 'x' });
  assert.equal(sourceWrite.status, 421);

  // One writer at a time: in the first move, cell-1's acks are at or below the fence, cell-2's above.
  const firstSwitch = acks.findIndex((a) => a.cell === 'cell-2');
  assert.ok(firstSwitch > 0, 'writes were acked by cell-1 before the move and by cell-2 after it');
  for (const ack of acks.slice(0, firstSwitch)) assert.ok(ack.cell === 'cell-1' && ack.revision <= fence, `ack ${JSON.stringify(ack)} vs fence ${fence}`);
  // Per namespace, the fences split the revisions into owner intervals: cell-1 up to the first
  // fence, cell-2 up to the second, ... Every acknowledged write lies in an interval of the cell
  // that acknowledged it: no two cells accepted writes at once, and each new owner's revisions
  // (hence fencing tokens) are above every revision of the one before (the floor).
  const fences = moves.map((m) => m.fenceRevision as number);
  for (let i = 1; i < fences.length; i++) assert.ok((fences[i] as number) > (fences[i - 1] as number), `fences increase: ${fences.join(',')}`);
  const ownerAt = (revision: number): string => {
    const k = fences.findIndex((f) => revision <= f);
    return (k === -1 ? fences.length : k) % 2 === 0 ? 'cell-1' : 'cell-2';
  };
  const misplaced = acks.filter((a) => ownerAt(a.revision) !== a.cell);
  assert.deepEqual(misplaced.slice(0, 5), [], `acks outside their cell's interval (fences ${fences.join(',')})`);

  // The watchers: the source's events up to the fence plus the destination's from fence + 1 (until
  // the next move's fence) hold every write acknowledged meanwhile, exactly once.
  const sourceSide = sourceWatch.events.filter((e) => e.revision <= fence);
  const secondFence = moves[1]?.fenceRevision as number;
  // (cell-1 owns /mv/ again after the second move, so its watcher sees writes above that fence.)
  assert.equal(sourceWatch.events.filter((e) => e.revision > fence && e.revision <= secondFence).length, 0, 'the source emitted nothing for /mv/ while cell-2 owned it');
  const destSide = destWatch.events.filter((e) => e.revision <= secondFence);
  const seen = new Map<string, number>();
  for (const e of [...sourceSide, ...destSide]) if (e.type === 'put') seen.set(e.key, (seen.get(e.key) ?? 0) + 1);
  const expected = acks.filter((a) => (a.cell === 'cell-1' && a.revision > startRevision && a.revision <= fence)
    || (a.cell === 'cell-2' && a.revision > fence && a.revision <= secondFence));
  assert.ok(expected.length > 0);
  const missing = expected.filter((a) => (seen.get(a.key) ?? 0) === 0);
  assert.deepEqual(missing.slice(0, 5), [], `${missing.length} of ${expected.length} acknowledged writes not seen by the watchers`);
  const duplicated = [...seen.entries()].filter(([, n]) => n > 1);
  assert.deepEqual(duplicated.slice(0, 5), [], 'no event seen twice across the two watchers');
  assert.equal(sourceWatch.errors.length, 1);
  // The destination's watcher ended too when /mv/ moved back to cell-1, after the second fence.
  assert.equal(destWatch.errors.length, 1, JSON.stringify(destWatch.errors));
  assert.deepEqual([(destWatch.errors[0] as { code: string }).code, (destWatch.errors[0] as { cell: string }).cell], ['wrong_cell', 'cell-1']);
  assert.ok((destWatch.errors[0] as { lastRevision: number }).lastRevision <= secondFence);

  // The leased key moved with its lease, which kept its remaining TTL (under its 60 s).
  const ephemeral = await http(`${cellUrls['cell-2']?.[0]}/v1/kv/mv/ephemeral`);
  assert.equal(ephemeral.body.kvs[0]?.lease, leaseId);
  const movedLease = await http(`${cellUrls['cell-2']?.[0]}/v1/leases/${leaseId}`);
  assert.equal(movedLease.status, 200, JSON.stringify(movedLease.body));
  assert.ok(movedLease.body.ttlMs > 0 && movedLease.body.ttlMs <= 60_000, JSON.stringify(movedLease.body));

  // The lock: moved to cell-2, the holder keeps its key and token; the next token is above all.
  const lockMove = await runCli(['--endpoints', router, 'ns', 'move', '/locks/pay/', '--to', 'cell-2', '--wait']);
  assert.equal(lockMove.code, 0, lockMove.err);
  const lockState = await http(`${cellUrls['cell-2']?.[0]}/v1/locks/pay`);
  assert.equal(lockState.body.holder.key, heldKey);
  assert.equal(lockState.body.holder.fencingToken, tokensBefore[2]);
  assert.equal((await http(`${router}/v1/locks/pay/release`, json({ key: heldKey }))).status, 200);
  const movedLockLease = await http(`${router}/v1/leases/${lockLease.body.id}`, { headers: { 'baton-namespace': '/locks/pay/' } });
  assert.equal(movedLockLease.status, 200, 'the lock\'s lease lives on cell-2 now');
  const after = await http(`${router}/v1/locks/pay/acquire`, json({ lease: lockLease.body.id, owner: 'after' }));
  assert.equal(after.status, 200, JSON.stringify(after.body));
  assert.equal(after.headers.get('baton-cell'), 'cell-2');
  assert.ok(after.body.fencingToken > Math.max(...tokensBefore), `token ${after.body.fencingToken} after the move, before: ${tokensBefore.join(',')}`);

  // An abort before the flip, forced: a lease of /mv/ whose id cell-1 already uses (another TTL)
  // makes cell-1 refuse the import; the mover aborts, the namespace stays on cell-2, writable.
  const clash = await http(`${router}/v1/leases`, { ...json({ ttl: 45, id: 987_654 }), headers: { 'content-type': 'application/json', 'baton-namespace': '/mv/' } });
  assert.equal(clash.status, 200, JSON.stringify(clash.body));
  assert.equal((await http(`${router}/v1/kv/mv/clash`, { method: 'PUT', body: 'c', headers: { 'lease-id': '987654' } })).status, 201);
  assert.equal((await http(`${cellUrls['cell-1']?.[0]}/v1/leases`, json({ ttl: 50, id: 987_654 }))).status, 200);
  const keysBefore = (await http(`${cellUrls['cell-2']?.[0]}/v1/kv/mv/?prefix=true&countOnly=true`)).body.count as number;
  const refused = await runCli(['--endpoints', router, 'ns', 'move', '/mv/', '--to', 'cell-1', '--wait', '-w', 'json']);
  assert.equal(refused.code, 1, refused.err);
  const abortedMove: MoveJson & { error: string } = JSON.parse(refused.out).move;
  assert.deepEqual([abortedMove.phase, abortedMove.cleaned], ['aborted', true]);
  assert.match(abortedMove.error, /lease 987654/);
  const ns = (await http(`${router}/v1/control/namespaces/mv/`)).body;
  assert.deepEqual([ns.cell, ns.state], ['cell-2', 'active']);
  assert.equal((await http(`${cellUrls['cell-2']?.[0]}/v1/kv/mv/?prefix=true&countOnly=true`)).body.count, keysBefore);
  const afterAbort = await http(`${router}/v1/kv/mv/after-abort`, { method: 'PUT', body: 'a' });
  assert.equal(afterAbort.status, 201, JSON.stringify(afterAbort.body));
  assert.equal(afterAbort.headers.get('baton-cell'), 'cell-2');
  assert.equal((await http(`${cellUrls['cell-1']?.[0]}/v1/kv/mv/x`, { method: 'PUT', body: 'x' })).status, 421, 'cell-1 did not take /mv/');

  // An abort by request, sent right after the start: before the flip it aborts (the namespace
  // stays); if the move was quicker, the abort says there is no open move or that it flipped.
  const started = await http(`${router}/v1/control/moves`, json({ prefix: '/mv/', to: 'cell-1' }));
  assert.equal(started.status, 200);
  const abortAnswer = await http(`${router}/v1/control/moves/abort`, json({ prefix: '/mv/' }));
  if (abortAnswer.status === 200) {
    assert.equal(abortAnswer.body.move.phase, 'aborted');
    let move: MoveJson = abortAnswer.body.move;
    for (let poll = 0; poll < 300 && move.cleaned !== true; poll++) {
      await sleep(100);
      move = (await http(`${router}/v1/control/namespaces/mv/`)).body.move;
    }
    assert.equal(move.cleaned, true);
    assert.equal((await http(`${router}/v1/control/namespaces/mv/`)).body.cell, 'cell-2');
    console.log('abort by request: landed before the flip; /mv/ stayed on cell-2');
  } else {
    assert.ok([404, 412].includes(abortAnswer.status), JSON.stringify(abortAnswer.body));
    console.log(`abort by request: the move was past its flip (${abortAnswer.status})`);
  }

  // The control plane's move metrics (summed over its members: the leader drove the moves).
  const controlUrls = (/control=(\S+)/.exec(line)?.[1] ?? '').split(',');
  let released = 0;
  let windowCount = 0;
  let fenceSteps = 0;
  for (const url of controlUrls) {
    const metrics = await (await fetch(`${url}/metrics`)).text();
    released += Number(/^baton_moves_total\{outcome="released"\} (\d+)/m.exec(metrics)?.[1] ?? 0);
    windowCount += Number(/^baton_move_window_seconds_count (\d+)/m.exec(metrics)?.[1] ?? 0);
    fenceSteps += Number(/^baton_move_window_step_seconds_count\{step="fence"\} (\d+)/m.exec(metrics)?.[1] ?? 0);
  }
  assert.ok(released >= moves.length + 1 && windowCount >= moves.length + 1 && fenceSteps === windowCount, `metrics: released ${released}, windows ${windowCount}, fence steps ${fenceSteps}`);
  // Each record says where its window went.
  for (const m of moves) assert.ok(['fence', 'lastChanges', 'flip', 'destinationTable'].every((k) => typeof (m as { windowParts?: Record<string, number> }).windowParts?.[k] === 'number'), JSON.stringify(m));

  const windows = moves.map((m) => m.windowMs as number).filter((w) => Number.isFinite(w));
  const seconds = (acks[acks.length - 1]!.atMs - acks[0]!.atMs) / 1000;
  console.log(`moves: ${moves.length}, acked writes: ${acks.length} (${Math.round(acks.length / seconds)}/s over ${seconds.toFixed(1)} s), refused attempts: ${attemptsRefused}; `
    + `write window (fence -> destination table) p50 ${percentile(windows, 50)} ms, p99 ${percentile(windows, 99)} ms, max ${Math.max(...windows)} ms; all: ${windows.join(',')}`);
  assert.equal(windows.length, moves.length);
});

function runCli(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  const cli = spawn(process.execPath, [cliPath, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  cli.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  cli.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
  return new Promise((resolve) => cli.once('exit', (code) => resolve({ code, out, err })));
}
