// Leases across a namespace move (docs/design/cells.md, "Leases across a move"), on real
// processes: a control cell and two data cells. A client library session (TTL 5 s, renewing on the
// source, where it was granted) holds a key of /ml/; a second lease, renewed by hand until the move
// is over and then left alone, holds another. The destination's disk is made slow (each fsync
// 1.5 s, the fault hook) so that the move takes longer than the TTL: the copy imported each lease
// with what it had left then, so without the renewals being carried over the destination would
// expire the session's lease mid-move and delete its key. Checked: after the move the session's key
// is on the destination for three TTLs while the session renews (and the session is never lost),
// and the lease left alone ends there about one TTL after its last renewal on the source (not
// early, and not much later). Second test: the control leader, which carries the renewals, is
// killed after a move; the next leader follows the released move's leases again (read on the
// destination), so a session renewing on the source keeps its moved key for three more TTLs.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { FaultControls } from '../faults/fault-controls.js';
import { findLeader, http, sleep, type TestCell, anyMember, startTwoCells } from './harness.js';
import { BatonClient } from '../../src/client/index.js';

let control: TestCell;
let cell1: TestCell;
let cell2: TestCell;
const destinationDisk = new FaultControls([]);
const ttlMs = 5_000;

const json = (body: unknown): RequestInit => ({ method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

before(async () => {
  [control, cell1, cell2] = await startTwoCells({ controlSize: 3, cell2: { nodeArgs: (name) => destinationDisk.nodeArgs(name) } });
}, { timeout: 120_000 });

after(async () => {
  await Promise.all([control, cell1, cell2].map((cell) => cell?.close())); // also removes their data directories
  destinationDisk.close();
});

/** What the control members logged about following leases (a failure's explanation). */
function followerWarnings(): string {
  return control.cell.names().flatMap((name) => control.cell.tail(name, 400).split('\n').filter((line) => /lease/.test(line)).slice(-15).map((line) => `${name}: ${line}`)).join('\n');
}

/**
 * The key's lease on `url` (linearizable), or null when the key is not there. A read the member
 * could not serve (a timeout, 5xx, 429: a loaded machine) says nothing about the key: asked again.
 */
async function leaseOfKey(url: string, key: string): Promise<number | null> {
  let last = '';
  for (let attempt = 0; attempt < 10; attempt++) {
    try {
      const answer = await http(`${url}/v1/kv${key}?consistency=linearizable`, { timeoutMs: 5_000 });
      if (answer.status === 404) return null;
      if (answer.status === 200) return (answer.body.kvs[0]?.lease as number | undefined) ?? null;
      last = `${answer.status} ${JSON.stringify(answer.body)}`;
    } catch (error) {
      last = (error as Error).message;
    }
    await sleep(200);
  }
  throw new Error(`${url} did not answer a read of ${key}: ${last}`);
}

test('a session renewing through a move keeps its key on the destination; a lease left alone ends there on time', { timeout: 90_000 }, async () => {
  const controlUrl = control.cell.clientUrls()[0] as string;
  const source = cell1.cell.clientUrls()[0] as string;
  const destination = cell2.cell.clientUrls()[0] as string;
  assert.equal((await http(`${controlUrl}/v1/control/namespaces`, json({ prefix: '/ml/', cell: 'cell-1' }))).status, 200);
  const client = new BatonClient({ endpoints: cell1.cell.clientUrls() });
  let renewing = true;
  try {
    const session = await client.session({ ttlSeconds: ttlMs / 1000 });
    let lost: Error | null = null;
    session.on('lost', (error) => (lost = error));
    await client.put('/ml/held', 'mine', { lease: session.leaseId });
    const idle = await http(`${source}/v1/leases`, json({ ttl: ttlMs / 1000 }));
    assert.equal(idle.status, 200, JSON.stringify(idle.body));
    const idleId = idle.body.id as number;
    assert.equal((await http(`${source}/v1/kv/ml/idle`, { method: 'PUT', body: 'idle', headers: { 'lease-id': String(idleId) } })).status, 201);
    // Renewed by hand, every second, until the move is over.
    let lastRenewal = { sentAtMs: 0, answeredAtMs: 0 };
    const renewer = (async () => {
      while (renewing) {
        const sentAtMs = Date.now();
        const renewed = await http(`${source}/v1/leases/keepalive`, json({ ids: [idleId] }));
        assert.equal(renewed.body.leases?.[0]?.ttl, ttlMs / 1000, JSON.stringify(renewed.body));
        lastRenewal = { sentAtMs, answeredAtMs: Date.now() };
        await sleep(1_000);
      }
    })();
    renewer.catch(() => undefined); // awaited below; a failure after the test ended is not its result

    const name = cell2.cell.names()[0] as string;
    destinationDisk.set(name, { fsyncDelayMs: 1_500 });
    await sleep(destinationDisk.pollMs * 3);
    const startedAtMs = Date.now();
    const started = await http(`${controlUrl}/v1/control/moves`, json({ prefix: '/ml/', to: 'cell-2' }));
    assert.equal(started.status, 200, JSON.stringify(started.body));
    let move: { phase: string; cleaned?: boolean } = started.body.move;
    for (let poll = 0; poll < 600 && !(move.phase === 'released' && move.cleaned === true); poll++) {
      await sleep(100);
      move = (await http(`${controlUrl}/v1/control/namespaces/ml/`)).body.move;
      assert.notEqual(move.phase, 'aborted', JSON.stringify(move));
    }
    assert.equal(move.phase, 'released', JSON.stringify(move));
    const moveMs = Date.now() - startedAtMs;
    destinationDisk.set(name, { fsyncDelayMs: 0 });
    await sleep(destinationDisk.pollMs * 3);
    renewing = false;
    await renewer;
    const idleRenewed = lastRenewal;
    assert.ok(moveMs > ttlMs, `the move took longer than the TTL (${moveMs} ms)`);

    // The session's key stays on the destination for three TTLs while the session renews on the source.
    const watchUntilMs = Date.now() + 3 * ttlMs;
    let idleGoneAtMs: number | null = null;
    while (Date.now() < watchUntilMs) {
      const held = await leaseOfKey(destination, '/ml/held');
      if (held !== session.leaseId) {
        const onDestination = await http(`${destination}/v1/leases/${session.leaseId}`);
        const onSource = await http(`${source}/v1/leases/${session.leaseId}`);
        const key = await http(`${destination}/v1/kv/ml/held?consistency=linearizable`);
        assert.fail(`the session's key is on the destination with its lease (${Date.now() - startedAtMs - moveMs} ms after the move): ` +
          `key ${key.status} ${JSON.stringify(key.body)}; lease on the destination ${JSON.stringify(onDestination.body)}, on the source ${JSON.stringify(onSource.body)}; ` +
          `the control members said:\n${followerWarnings()}`);
      }
      if (idleGoneAtMs === null && (await leaseOfKey(destination, '/ml/idle')) === null) idleGoneAtMs = Date.now();
      await sleep(100);
    }
    assert.equal(lost, null, 'the session was never lost');
    assert.ok(session.isSafe());
    assert.equal((await http(`${source}/v1/kv/ml/held`)).status, 421, 'the source no longer serves the namespace');

    // The lease left alone: present until about its deadline on the source, gone soon after.
    assert.notEqual(idleGoneAtMs, null, 'the lease left alone ended on the destination');
    // The source renewed it between the request and the answer: its deadline there lies between
    // sentAtMs + TTL and answeredAtMs + TTL (whole ms on the wire: 50 ms of slack for rounding).
    const afterRequestMs = (idleGoneAtMs as number) - idleRenewed.sentAtMs;
    const lateMs = (idleGoneAtMs as number) - (idleRenewed.answeredAtMs + ttlMs);
    console.log(`move ${moveMs} ms; lease left alone seen gone on the destination ${afterRequestMs} ms after its last renewal was asked (renewal answered in ${idleRenewed.answeredAtMs - idleRenewed.sentAtMs} ms)`);
    assert.ok(afterRequestMs >= ttlMs - 50, `not before its deadline on the source (${afterRequestMs} ms after the renewal was asked)`);
    assert.ok(lateMs <= 2_500, `not much after its deadline (${lateMs} ms late)`);
  } finally {
    renewing = false;
    await client.close();
  }
});

/** The control cell's answer from whichever member answers (one may be killed). */
const anyControl = (path: string, init?: RequestInit) => anyMember(control, path, init);

test('a new control leader carries the renewals of a released move\'s leases', { timeout: 90_000 }, async () => {
  const destination = cell2.cell.clientUrls()[0] as string;
  assert.equal((await anyControl('/v1/control/namespaces', json({ prefix: '/ml2/', cell: 'cell-1' }))).status, 200);
  const client = new BatonClient({ endpoints: cell1.cell.clientUrls() });
  try {
    const session = await client.session({ ttlSeconds: ttlMs / 1000 });
    await client.put('/ml2/held', 'mine', { lease: session.leaseId });
    const started = await anyControl('/v1/control/moves', json({ prefix: '/ml2/', to: 'cell-2' }));
    assert.equal(started.status, 200, JSON.stringify(started.body));
    let move: { phase: string; cleaned?: boolean } = started.body.move;
    for (let poll = 0; poll < 600 && !(move.phase === 'released' && move.cleaned === true); poll++) {
      await sleep(100);
      move = (await anyControl('/v1/control/namespaces/ml2/')).body.move;
    }
    assert.equal(move.phase, 'released', JSON.stringify(move));
    const leader = await findLeader(control);
    control.cell.signal(leader, 'SIGKILL');
    await control.cell.waitExit(leader);
    const watchUntilMs = Date.now() + 3 * ttlMs;
    while (Date.now() < watchUntilMs) {
      assert.equal(await leaseOfKey(destination, '/ml2/held'), session.leaseId, 'the session\'s key is on the destination with its lease');
      await sleep(200);
    }
    assert.ok(session.isSafe(), 'the session renews on the source all along');
  } finally {
    await client.close();
  }
});
