// `baton snapshot restore` end to end with real processes (docs/design/restore.md): a cell (A) is
// backed up under a write load while a lock is held and 10,000 leases hold keys; A keeps writing
// and granting lock tokens after the backup; the backup is restored member by member into a new
// cell (B). Then: a fencing guard fed tokens of both cells in time order never accepts a stale one
// (B's exceed every token A issued, also after the backup); a watcher or reader below B's floor
// gets `compacted`; status shows the epoch and restoredFrom; A's members and data directories
// cannot join B, nor B's A; the leases survive, renewed ones keep their keys, the others' keys go
// after TTL + grace with the leader unchanged; a damaged or truncated file is refused naming the offset.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts, startTestCell, type TestCell } from './harness.js';
import { baton } from './cli-run.js';
import { BatonClient, type Session } from '../../src/client/index.js';
import { CompactedError } from '../../src/base/errors.js';
import { MemoryFencingGuard } from '../../src/fencing/index.js';
import { ProcessCell } from '../../src/node/testing/process-cell.js';

const leaseCount = Number(process.env['BATON_RESTORE_TEST_LEASES'] ?? 10_000);
const leaseTtlSeconds = 20;
const cellArgs = ['--tick-ms', '50', '--election-ticks', '10', '--request-timeout-ms', '3000'];
/** B's election timeout: tick 50 ms x 10 (the grace the restore adds to each lease). */
const graceMs = 500;

let cellA: TestCell;
let clientA: BatonClient;
let cellB: ProcessCell | null = null;
let clientB: BatonClient | null = null;
const scratch = mkdtempSync(join(tmpdir(), 'baton-restore-'));
const rootB = join(scratch, 'cell-b');
const backup = join(scratch, 'a.snap');

before(async () => {
  cellA = await startTestCell();
  clientA = new BatonClient({ endpoints: cellA.cell.clientUrls() });
});

after(async () => {
  await clientB?.close();
  await cellB?.stopAll();
  await clientA?.close();
  await cellA?.close();
  rmSync(scratch, { recursive: true, force: true });
});

async function pool<T>(items: readonly T[], width: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) await work(items[next++] as T);
  }));
}

interface Status { leader: number; clusterId: string; revision: number; compactRevision: number; epoch: number; restoredFrom: Record<string, unknown> | null; members: { id: number; clientUrl: string }[] }
async function status(url: string): Promise<Status> {
  return (await (await fetch(`${url}/v1/cluster/status`)).json()) as Status;
}

function portOf(url: string): number {
  return Number(new URL(url).port);
}

test('restore: tokens never go back, the gap is compacted, identities are apart, leases survive and expire only unrenewed', { timeout: 420_000 }, async () => {
  // --- cell A: a lock held, 10,000 leases each holding a key, a write load.
  const guard = new MemoryFencingGuard();
  const sessionA: Session = await clientA.session({ ttlSeconds: 10 });
  const lockA1 = await clientA.locks(sessionA).acquire('res');
  assert.equal(guard.check('res', lockA1.token).accepted, true);
  const leaseIds: number[] = [];
  const ids = Array.from({ length: leaseCount }, (_, i) => i);
  // A's owners renew theirs until the backup (granting 10,000 takes longer than a TTL here).
  let renewingOnA = true;
  const renewalsOnA = (async () => {
    while (renewingOnA) {
      const known = [...leaseIds];
      for (let at = 0; at < known.length && renewingOnA; at += 1000) await clientA.leaseKeepalive(known.slice(at, at + 1000));
      await new Promise((resolve) => setTimeout(resolve, 2_000));
    }
  })();
  await pool(ids, 64, async (i) => {
    const grant = await clientA.leaseGrant(leaseTtlSeconds);
    leaseIds.push(grant.id);
    await clientA.put(`/leased/${grant.id}`, `v${i}`, { lease: grant.id });
  });
  let loading = true;
  let written = 0;
  const load = (async () => {
    while (loading) {
      await clientA.put(`/load/${written % 100}`, `w${written}`);
      written++;
    }
  })();
  await clientA.put('/kept', 'before-backup');
  const leaderA = (await status(cellA.cell.clientUrl('n1'))).leader;
  const saved = await baton(['snapshot', 'save', backup, '--endpoints', cellA.cell.clientUrl(`n${leaderA}`), '-w', 'json'], 120_000);
  assert.equal(saved.code, 0, saved.stderr);
  const report = JSON.parse(saved.stdout) as { revision: number; sha256: string };
  renewingOnA = false;
  await renewalsOnA;
  // --- A goes on after the backup: writes, and the lock changes hands (a token the backup never saw).
  await lockA1.release();
  const lockA2 = await clientA.locks(sessionA).acquire('res');
  assert.ok(lockA2.token > report.revision, 'A issued a token after the backup');
  assert.equal(guard.check('res', lockA2.token).accepted, true);
  for (let i = 0; i < 50; i++) await clientA.put('/kept', `after-backup-${i}`);
  loading = false;
  await load;
  assert.ok(written > 0);

  // --- restore into B, one call per member; the first prints the nonce the others reuse.
  const ports = await freePorts(6);
  const membersB = [1, 2, 3].map((i) => ({ name: `n${i}`, clientPort: ports[i - 1] as number, peerPort: ports[i + 2] as number }));
  const initialCluster = membersB.map((m) => `${m.name}=http://127.0.0.1:${m.peerPort}`).join(',');
  const restoreArgs = (name: string): string[] => ['snapshot', 'restore', backup, '--name', name, '--data-dir', join(rootB, name),
    '--initial-cluster', initialCluster, '--election-timeout-ms', String(graceMs)];
  const first = await baton(restoreArgs('n1'), 120_000);
  assert.equal(first.code, 0, first.stderr);
  const nonce = /pass --restore-nonce (\S+)/.exec(first.stdout)?.[1];
  assert.ok(nonce !== undefined, first.stdout);
  for (const name of ['n2', 'n3']) {
    const other = await baton([...restoreArgs(name), '--restore-nonce', nonce], 120_000);
    assert.equal(other.code, 0, other.stderr);
  }
  const again = await baton([...restoreArgs('n2'), '--restore-nonce', nonce]);
  assert.notEqual(again.code, 0, 'a restore never writes over a data directory');
  const restoredAtMs = performance.now();
  const auditOf = (name: string): string => join(scratch, `audit-b-${name}.log`);
  cellB = new ProcessCell({ dataDir: rootB, members: membersB, extraArgs: cellArgs, argsFor: (name) => ['--audit-log', auditOf(name)] });
  cellB.startAll();
  await cellB.waitReady(60_000);
  clientB = new BatonClient({ endpoints: cellB.clientUrls() });

  // --- renew half of the leases on B from now on (every 2 s, 1,000 ids a call).
  const renewed = leaseIds.filter((_, i) => i % 2 === 0);
  const unrenewed = leaseIds.filter((_, i) => i % 2 === 1);
  let renewing = true;
  const renewals = (async () => {
    while (renewing) {
      for (let at = 0; at < renewed.length && renewing; at += 1000) await (clientB as BatonClient).leaseKeepalive(renewed.slice(at, at + 1000));
      await new Promise((resolve) => setTimeout(resolve, 2_000));
    }
  })();

  let leaderB: number | undefined;
  let sessionB: Session | null = null;
  try {
    // --- status: epoch, restoredFrom, a new cluster id shared by B's members.
    const statusA = await status(cellA.cell.clientUrl('n1'));
    const statusesB = await Promise.all(cellB.clientUrls().map(status));
    const floor = 2 ** 40;
    for (const s of statusesB) {
      assert.equal(s.epoch, 1);
      assert.ok(s.compactRevision >= floor && s.revision >= floor);
      assert.equal(s.clusterId, statusesB[0]?.clusterId);
      assert.notEqual(s.clusterId, statusA.clusterId);
      assert.equal(s.restoredFrom?.['fileSha256'], report.sha256);
      assert.equal(s.restoredFrom?.['oldRevision'], report.revision);
      assert.equal(s.restoredFrom?.['oldEpoch'], 0);
    }
    assert.equal(statusA.epoch, 0);
    // New member ids: every member of B agrees on them, and none is an id of A.
    const idsA = statusA.members.map((m) => m.id).sort();
    const idsB = (statusesB[0]?.members ?? []).map((m) => m.id).sort();
    assert.equal(idsB.length, 3);
    for (const s of statusesB) assert.deepEqual(s.members.map((m) => m.id).sort(), idsB);
    assert.deepEqual(idsB.filter((id) => idsA.includes(id)), [], `B's ids ${idsB} apart from A's ${idsA}`);
    leaderB = statusesB[0]?.leader;
    const shown = await baton(['status', '--endpoints', cellB.clientUrl('n1'), '-w', 'json']);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /"epoch":\s*1/);
    assert.match(shown.stdout, /restoredFrom/);

    // --- the state is the backup's: a key from before the backup, none of A's later values;
    // every leased key survived the restore.
    assert.equal((await clientB.getValue('/kept'))?.value, 'before-backup');
    const leasedNow = await fetch(`${cellB.clientUrl('n1')}/v1/kv/leased/?prefix=true&countOnly=true`);
    assert.equal(((await leasedNow.json()) as { count: number }).count, leaseCount, 'every leased key was restored');

    // --- fencing: B's first lock token (once A's restored holder's lease has gone) exceeds all of A's.
    sessionB = await clientB.session({ ttlSeconds: 30 });
    const lockB = await clientB.locks(sessionB).acquire('res', { waitMs: 90_000 });
    assert.ok(lockB.token > floor, `B's token ${lockB.token} is in epoch 1`);
    assert.equal(guard.check('res', lockB.token).accepted, true);
    // A, still running, keeps issuing tokens: every one is stale for a resource that saw B's.
    await lockA2.release();
    const lockA3 = await clientA.locks(sessionA).acquire('res');
    assert.ok(lockA3.token > lockA2.token);
    assert.equal(guard.check('res', lockA3.token).accepted, false, 'a token of the old cell issued after the restore is refused');
    const putB = await clientB.put('/after-restore', 'x');
    assert.ok(putB.revision > floor && putB.revision > lockA3.token);

    // --- below the floor: reads and watches answer compacted.
    const below = await fetch(`${cellB.clientUrl('n1')}/v1/kv/kept?revision=${report.revision}`);
    assert.equal(below.status, 410);
    assert.equal(((await below.json()) as { error: { code: string } }).error.code, 'compacted');
    const watch = clientB.watch('/kept', { startRevision: 2 });
    await assert.rejects(async () => {
      for await (const _batch of watch) assert.fail('no event from below the floor');
    }, (error: unknown) => error instanceof CompactedError);

    // --- leases: after TTL + grace (+ margin) from B's start, renewed keys stay, unrenewed ones are gone.
    const waitMs = leaseTtlSeconds * 1000 + graceMs + 15_000 - (performance.now() - restoredAtMs);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, waitMs)));
  } catch (error) {
    for (const name of cellB.names()) console.error(`--- B ${name}:\n${cellB.tail(name, 30)}`);
    throw error;
  } finally {
    renewing = false;
    await renewals.catch(() => undefined);
  }
  const leased = await fetch(`${cellB.clientUrl('n1')}/v1/kv/leased/?prefix=true&keysOnly=true&limit=${leaseCount + 10}`);
  const body = (await leased.json()) as { kvs: { key: string }[] };
  const keys = new Set(body.kvs.map((kv) => kv.key));
  const renewedKept = renewed.filter((id) => keys.has(`/leased/${id}`)).length;
  const unrenewedKept = unrenewed.filter((id) => keys.has(`/leased/${id}`)).length;
  assert.equal(renewedKept, renewed.length, 'every renewed lease kept its key');
  assert.equal(unrenewedKept, 0, 'every unrenewed lease lost its key');
  assert.equal((await status(cellB.clientUrl('n1'))).leader, leaderB, 'no leader change through the expiry');
  await sessionB?.close();
  await sessionA.close();
});

test('identities: an old data directory cannot start in B, and a B member started in A\'s place is refused at the handshake', { timeout: 120_000 }, async () => {
  assert.ok(cellB !== null);
  // A's n3 data directory with B's flags (B's n3 stopped): refused at start, naming the cluster.
  cellA.cell.signal('n3', 'SIGTERM');
  await cellA.cell.waitExit('n3');
  cellB.signal('n3', 'SIGTERM');
  await cellB.waitExit('n3');
  const membersB = cellB.names().map((name) => ({ name, clientPort: portOf(cellB!.clientUrl(name)), peerPort: portOf(cellB!.peerUrl(name)) }));
  const oldInB = new ProcessCell({ dataDir: cellA.dataDir, members: membersB, extraArgs: cellArgs });
  oldInB.start('n3');
  const code = await oldInB.waitExit('n3', 30_000);
  assert.notEqual(code, 0);
  assert.match(oldInB.tail('n3', 50), /belongs to clusterId/);
  // B's n3 directory on A's ports: it starts (its identity is B's), A's members refuse it.
  const membersA = cellA.cell.names().map((name) => ({ name, clientPort: portOf(cellA.cell.clientUrl(name)), peerPort: portOf(cellA.cell.peerUrl(name)) }));
  const newInA = new ProcessCell({ dataDir: rootB, members: membersA, extraArgs: cellArgs });
  newInA.start('n3');
  try {
    const deadline = performance.now() + 8_000;
    while (performance.now() < deadline) {
      await clientA.put('/a-still-works', 'yes');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const logs = [...(cellA.cell.logs.get('n1') ?? []), ...(cellA.cell.logs.get('n2') ?? []), ...(newInA.logs.get('n3') ?? [])].join('\n');
    assert.match(logs, /this member belongs to/);
    const intruder = await status(newInA.clientUrl('n3'));
    assert.ok(intruder.revision >= 2 ** 40, 'the B member never took A\'s state');
    assert.notEqual(intruder.clusterId, (await status(cellA.cell.clientUrl('n1'))).clusterId);
  } finally {
    await newInA.stopAll();
  }
});

test('a damaged or truncated backup is refused naming the offset; another format version names both', { timeout: 60_000 }, async () => {
  const bytes = readFileSync(backup);
  const truncated = join(scratch, 'truncated.snap');
  writeFileSync(truncated, bytes.subarray(0, Math.floor(bytes.length / 2)));
  const cut = await baton(['snapshot', 'restore', truncated, '--dev', '--data-dir', join(scratch, 'dev-cut')]);
  assert.equal(cut.code, 1);
  assert.match(cut.stderr, /truncated\.snap at byte offset \d+/);
  const damaged = join(scratch, 'damaged.snap');
  copyFileSync(backup, damaged);
  const flipped = Buffer.from(readFileSync(damaged));
  const at = Math.floor(flipped.length / 3);
  flipped[at] = (flipped[at] as number) ^ 0xff;
  writeFileSync(damaged, flipped);
  const bad = await baton(['snapshot', 'restore', damaged, '--dev', '--data-dir', join(scratch, 'dev-bad')]);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /damaged\.snap at byte offset \d+/);
  const newer = join(scratch, 'newer.snap');
  const versioned = Buffer.from(bytes);
  versioned[4] = 9;
  writeFileSync(newer, versioned);
  const other = await baton(['snapshot', 'restore', newer, '--dev', '--data-dir', join(scratch, 'dev-newer')]);
  assert.equal(other.code, 1);
  assert.match(other.stderr, /format version 9: this version reads 1 and 2/);
});
