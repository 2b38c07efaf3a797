// etcd's Cluster and Maintenance calls driven by Debian's etcdctl 3.4 against a 3-process cell
// (plus a spare that joins as a learner): member add --learner / promote / remove / update,
// move-leader, endpoint hashkv / status, defrag, alarm list / disarm, each checked against Baton's
// native view (GET /v1/cluster/members, /v1/cluster/status). Then a member whose store was damaged
// on disk answers a different HashKV than the others at the same revision, and the leader's
// corruption check raises CORRUPT for it. Skipped without etcdctl.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials, loadPackageDefinition, Metadata, type Client, type GrpcObject, type ServiceClientConstructor } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { protoDir } from '../../src/api/grpc/proto.js';
import { findEtcdctl } from './etcdctl-path.js';
import { baton } from './cli-run.js';
import { findLeader, http, putSurely, sleep, startTestCell, type TestCell } from './harness.js';

const run = promisify(execFile);
const etcdctlPath = findEtcdctl();
const noEtcdctl = etcdctlPath === null ? 'etcdctl not installed (Debian: apt-get install etcd-client)' : false;
if (noEtcdctl !== false) console.log(`# etcd-maintenance: SKIPPING: ${noEtcdctl}`);
const testTimeoutMs = 90_000;

let cell: TestCell;
let endpoints: string[];

before(async () => {
  if (noEtcdctl !== false) return;
  // The leader compares the members' HashKV every 300 ms (off by default).
  cell = await startTestCell({ grpc: true, spares: 1, extraArgs: ['--corrupt-check-ms', '300'] });
  endpoints = cell.names.map((name) => cell.cell.grpcEndpoint(name));
});

after(async () => {
  await cell?.close();
});

async function etcdctl(args: string[], endpoint?: string[]): Promise<string> {
  const argv = [`--endpoints=${(endpoint ?? endpoints).join(',')}`, '--command-timeout=20s', ...args];
  return (await run(etcdctlPath as string, argv, { env: { ...process.env, ETCDCTL_API: '3' }, timeout: 30_000 })).stdout;
}

async function etcdctlFails(args: string[], endpoint?: string[]): Promise<string> {
  try {
    await etcdctl(args, endpoint);
  } catch (error) {
    return String((error as { stderr?: string }).stderr ?? error);
  }
  assert.fail(`etcdctl ${args.join(' ')} succeeded`);
}

interface NativeMember {
  id: number;
  name: string;
  role: string;
  peerUrl: string;
}

async function nativeMembers(name = 'n1'): Promise<NativeMember[]> {
  const answer = await http(`${cell.cell.clientUrl(name)}/v1/cluster/members`);
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.body.members as NativeMember[];
}

async function nativeStatus(name: string): Promise<any> {
  return (await http(`${cell.cell.clientUrl(name)}/v1/cluster/status`)).body;
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** etcdctl takes member IDs in hex. */
const hex = (id: number): string => id.toString(16);

function maintenanceClient(endpoint: string): Client {
  const definition = loadSync(['rpc.proto'], { includeDirs: [protoDir()], keepCase: true, longs: String, defaults: true, oneofs: true });
  const root = loadPackageDefinition(definition);
  return new ((root['etcdserverpb'] as GrpcObject)['Maintenance'] as ServiceClientConstructor)(endpoint, credentials.createInsecure());
}

function call<T = any>(client: Client, method: string, request: unknown): Promise<T> {
  return new Promise((resolve, reject) => {
    const fn = (client as unknown as Record<string, Function>)[method] as Function;
    fn.call(client, request, new Metadata(), { deadline: Date.now() + 15_000 }, (error: unknown, answer: T) =>
      error ? reject(error) : resolve(answer),
    );
  });
}

test('member add --learner, update, promote and remove: etcd answers and errors, Baton\'s membership', { skip: noEtcdctl, timeout: testTimeoutMs }, async () => {
  const leader = await findLeader(cell);
  const follower = cell.names.find((n) => n !== leader) as string;
  const ghostPeer = 'http://127.0.0.1:1';
  // Through a follower: passed on to the leader.
  const added = JSON.parse(await etcdctl(['member', 'add', 'ghost', `--peer-urls=${ghostPeer}`, '--learner', '-w', 'json'],
    [cell.cell.grpcEndpoint(follower)]));
  assert.equal(added.member.isLearner, true);
  assert.deepEqual(added.member.peerURLs, [ghostPeer]);
  assert.equal(added.members.length, 4);
  const ghostId = Number(added.member.ID);
  const native = (await nativeMembers(follower)).find((m) => m.id === ghostId);
  assert.deepEqual(native && { role: native.role, peerUrl: native.peerUrl, name: native.name },
    { role: 'learner', peerUrl: ghostPeer, name: 'member-127-0-0-1-1' });
  const listed = JSON.parse(await etcdctl(['member', 'list', '-w', 'json']));
  assert.equal(listed.members.find((m: { ID: number }) => Number(m.ID) === ghostId)?.isLearner, true);

  assert.match(await etcdctlFails(['member', 'add', 'again', `--peer-urls=${ghostPeer}`, '--learner']), /etcdserver: Peer URLs already exists/);
  assert.match(await etcdctlFails(['member', 'add', 'voter', '--peer-urls=http://127.0.0.1:2']), /learners only/);
  assert.match(await etcdctlFails(['member', 'add', 'bad', '--peer-urls=unix://127.0.0.1:3', '--learner']), /etcdserver: given member URLs are invalid/);
  // Not started, so not in sync: etcd's exact refusal; a voter is not a learner.
  assert.match(await etcdctlFails(['member', 'promote', hex(ghostId)]), /etcdserver: can only promote a learner member which is in sync with leader/);
  assert.match(await etcdctlFails(['member', 'promote', '1']), /etcdserver: can only promote a learner member\b(?! which)/);
  assert.match(await etcdctlFails(['member', 'promote', 'ff']), /etcdserver: member not found/);

  // Update: the same URL is done; another is refused (Baton keeps one peer URL per member).
  assert.match(await etcdctl(['member', 'update', hex(ghostId), `--peer-urls=${ghostPeer}`]), /updated in cluster/);
  assert.match(await etcdctlFails(['member', 'update', hex(ghostId), '--peer-urls=http://127.0.0.1:4']), /does not move a member/);
  assert.match(await etcdctlFails(['member', 'update', hex(ghostId), `--peer-urls=${cell.cell.peerUrl('n1')}`]), /etcdserver: Peer URLs already exists/);
  assert.match(await etcdctlFails(['member', 'update', 'ff', '--peer-urls=http://127.0.0.1:5']), /etcdserver: member not found/);

  assert.match(await etcdctl(['member', 'remove', hex(ghostId)], [cell.cell.grpcEndpoint(follower)]), /removed from cluster/);
  assert.equal((await nativeMembers()).some((m) => m.id === ghostId), false);
  assert.match(await etcdctlFails(['member', 'remove', hex(ghostId)]), /etcdserver: member not found/);

  // A real learner (registered natively with its client URL, so it can join), promoted and removed with etcdctl.
  const spare = cell.spares[0] as string;
  const add = await http(`${cell.cell.clientUrl(leader)}/v1/cluster/members`, {
    method: 'POST',
    body: JSON.stringify({ name: spare, peerUrl: cell.cell.peerUrl(spare), clientUrl: cell.cell.clientUrl(spare) }),
  });
  assert.equal(add.status, 201, JSON.stringify(add.body));
  const spareId = add.body.member.id as number;
  cell.cell.start(spare, { join: true });
  let promoted = '';
  await until('the learner to catch up and be promoted', async () => {
    try {
      promoted = await etcdctl(['member', 'promote', hex(spareId)]);
      return true;
    } catch (error) {
      assert.match(String((error as { stderr?: string }).stderr), /in sync with leader|leader changed|unavailable|no leader/i);
      return false;
    }
  }, 60_000);
  assert.match(promoted, /promoted in cluster/);
  assert.equal((await nativeMembers()).find((m) => m.id === spareId)?.role, 'voter');
  assert.match(await etcdctl(['member', 'remove', hex(spareId)]), /removed from cluster/);
  assert.deepEqual((await nativeMembers()).map((m) => m.id).sort(), [1, 2, 3]);
  await until('the removed member to stop', async () => !cell.cell.isRunning(spare));
});

test('move-leader: Baton\'s leader transfer; a follower answers "not leader"; a learner or unknown member is a bad transferee', { skip: noEtcdctl, timeout: testTimeoutMs }, async () => {
  const leader = await findLeader(cell);
  const leaderId = (await nativeStatus(leader)).member as number;
  const targetId = [1, 2, 3].find((id) => id !== leaderId) as number;
  assert.match(await etcdctl(['move-leader', hex(targetId)]), new RegExp(`Leadership transferred from ${hex(leaderId)} to ${hex(targetId)}`));
  for (const name of cell.names) {
    await until(`${name} to follow member ${targetId}`, async () => (await nativeStatus(name)).leader === targetId);
  }
  const newLeader = await findLeader(cell);
  const follower = cell.names.find((n) => n !== newLeader) as string;
  const client = maintenanceClient(cell.cell.grpcEndpoint(follower));
  try {
    await assert.rejects(call(client, 'MoveLeader', { targetID: String(leaderId) }), (error: { details: string; code: number }) =>
      error.details === 'etcdserver: not leader' && error.code === 9);
  } finally {
    client.close();
  }
  const onLeader = maintenanceClient(cell.cell.grpcEndpoint(newLeader));
  try {
    await assert.rejects(call(onLeader, 'MoveLeader', { targetID: '99' }), (error: { details: string }) =>
      error.details === 'etcdserver: bad leader transferee');
  } finally {
    onLeader.close();
  }
});

test('endpoint status, hashkv, defrag and alarms', { skip: noEtcdctl, timeout: testTimeoutMs }, async () => {
  for (let i = 0; i < 20; i++) await etcdctl(['put', `mnt/${i}`, `v${i}`]);
  const revision = (await nativeStatus('n1')).revision as number;
  for (const name of cell.names) await until(`${name} to apply ${revision}`, async () => (await nativeStatus(name)).revision >= revision);

  const status = JSON.parse(await etcdctl(['endpoint', 'status', '-w', 'json'])) as { Endpoint: string; Status: any }[];
  assert.equal(status.length, 3);
  for (const [i, name] of cell.names.entries()) {
    const native = await nativeStatus(name);
    const s = (status[i] as { Status: any }).Status;
    assert.equal(s.raftTerm, native.term);
    assert.ok(s.raftIndex >= 1 && s.raftIndex <= native.commitIndex, `${s.raftIndex} vs ${native.commitIndex}`);
    assert.ok(s.dbSize > 0 && s.dbSizeInUse > 0 && s.dbSizeInUse <= s.dbSize, JSON.stringify(s));
    assert.equal(s.leader, native.leader);
  }

  const hashes = JSON.parse(await etcdctl(['endpoint', 'hashkv', `--rev=${revision}`, '-w', 'json'])) as { HashKV: any }[];
  assert.equal(hashes.length, 3);
  assert.equal(new Set(hashes.map((h) => h.HashKV.hash)).size, 1, JSON.stringify(hashes));
  assert.ok(hashes.every((h) => h.HashKV.compact_revision === (hashes[0] as { HashKV: any }).HashKV.compact_revision));
  await etcdctl(['put', 'mnt/after', 'x']);
  const later = JSON.parse(await etcdctl(['endpoint', 'hashkv', `--rev=${revision}`, '-w', 'json'], [endpoints[0] as string]));
  assert.equal(later[0].HashKV.hash, (hashes[0] as { HashKV: any }).HashKV.hash, 'a later write does not change the hash at a past revision');
  const now = JSON.parse(await etcdctl(['endpoint', 'hashkv', '-w', 'json'], [endpoints[0] as string]));
  assert.notEqual(now[0].HashKV.hash, (hashes[0] as { HashKV: any }).HashKV.hash);
  assert.match(await etcdctlFails(['endpoint', 'hashkv', `--rev=${revision + 1000}`]), /future revision/);

  const client = maintenanceClient(endpoints[0] as string);
  try {
    const whole = await call(client, 'Hash', {});
    assert.ok(typeof whole.hash === 'number' && whole.hash > 0);
  } finally {
    client.close();
  }

  assert.match(await etcdctl(['defrag']), /Finished defragmenting etcd member\[/);

  assert.equal((await etcdctl(['alarm', 'list'])).trim(), '');
  const raiser = maintenanceClient(endpoints[0] as string);
  try {
    const raised = await call(raiser, 'Alarm', { action: 1, memberID: '1', alarm: 1 });
    assert.equal(raised.alarms.length, 1);
  } finally {
    raiser.close();
  }
  assert.equal((await etcdctl(['alarm', 'list'], [endpoints[0] as string])).trim(), 'memberID:1 alarm:NOSPACE');
  const alarmed = JSON.parse(await etcdctl(['endpoint', 'status', '-w', 'json'], [endpoints[0] as string]));
  assert.deepEqual(alarmed[0].Status.errors, ['memberID:1 alarm:NOSPACE']);
  assert.match(await etcdctl(['alarm', 'disarm'], [endpoints[0] as string]), /memberID:1 alarm:NOSPACE/);
  assert.equal((await etcdctl(['alarm', 'list'], [endpoints[0] as string])).trim(), '');
});

test('etcdctl snapshot status refuses a Baton snapshot (not bbolt); baton snapshot status reads it, its hash is HashKV\'s', { skip: noEtcdctl, timeout: testTimeoutMs }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'etcd-snap-'));
  try {
    const endpoint = [endpoints[1] as string];
    await etcdctl(['put', 'mnt/snap', 'x'], endpoint);
    const file = join(dir, 'saved.db');
    await etcdctl(['snapshot', 'save', file], endpoint);
    assert.match(await etcdctlFails(['snapshot', 'status', file]), /invalid database/);
    const status = await baton(['snapshot', 'status', file, '-w', 'json']);
    assert.equal(status.code, 0, status.stderr);
    const read = JSON.parse(status.stdout);
    assert.equal(read.framing, 'etcdctl');
    const hashed = JSON.parse(await etcdctl(['endpoint', 'hashkv', `--rev=${read.revision}`, '-w', 'json'], endpoint));
    assert.equal(read.hash, hashed[0].HashKV.hash);
    const nativeKeys = await http(`${cell.cell.clientUrl('n2')}/v1/kv/?prefix=true&countOnly=true&revision=${read.revision}`);
    assert.equal(read.totalKeys, nativeKeys.body.count, JSON.stringify(nativeKeys.body));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('hashkv: a member whose store was damaged on disk disagrees with the others', { skip: noEtcdctl, timeout: testTimeoutMs }, async () => {
  const marker = 'damage-me-0123456789abcdef';
  const url = cell.cell.clientUrl('n1');
  await putSurely(`${url}/v1/kv/mnt/damaged`, marker);
  for (let i = 0; i < 5; i++) await putSurely(`${url}/v1/kv/mnt/tail/${i}`, `t${i}`);
  const revision = (await nativeStatus('n1')).revision as number;
  for (const name of cell.names) await until(`${name} to apply ${revision}`, async () => (await nativeStatus(name)).revision >= revision);
  // n3's copy of the value is changed in its LMDB file while it is down (LMDB keeps no checksums:
  // nothing at start-up notices; only a comparison with the other members can).
  cell.cell.signal('n3', 'SIGTERM');
  await cell.cell.waitExit('n3', 15_000);
  const store = join(cell.dataDir, 'n3', 'db', 'state.mdb');
  const bytes = readFileSync(store);
  let flipped = 0;
  for (let at = bytes.indexOf(marker); at >= 0; at = bytes.indexOf(marker, at + 1)) {
    bytes[at + marker.length - 1] = 'X'.charCodeAt(0);
    flipped++;
  }
  assert.ok(flipped >= 1, 'the value is in the store file');
  writeFileSync(store, bytes);
  cell.cell.start('n3');
  await cell.cell.waitReady(30_000);
  await until('n3 to serve again', async () => (await nativeStatus('n3')).revision >= revision);
  const hashes = JSON.parse(await etcdctl(['endpoint', 'hashkv', `--rev=${revision}`, '-w', 'json'])) as { Endpoint: string; HashKV: any }[];
  const byEndpoint = new Map(hashes.map((h) => [h.Endpoint, h.HashKV.hash as number]));
  assert.equal(byEndpoint.get(endpoints[0] as string), byEndpoint.get(endpoints[1] as string), JSON.stringify(hashes));
  assert.notEqual(byEndpoint.get(endpoints[2] as string), byEndpoint.get(endpoints[0] as string), JSON.stringify(hashes));
  // The native route answers the same numbers (members compare them).
  for (const [i, name] of cell.names.entries()) {
    const native = await http(`${cell.cell.clientUrl(name)}/v1/maintenance/hashkv?revision=${revision}`);
    assert.deepEqual(native.body, { hash: byEndpoint.get(endpoints[i] as string), revision, compactRevision: 0 });
  }
  // The leader's corruption check finds the odd one out: CORRUPT for member 3, on the leader.
  const leader = await findLeader(cell);
  const onLeader = [cell.cell.grpcEndpoint(leader)];
  await until('the corruption check to raise CORRUPT for member 3', async () =>
    (await etcdctl(['alarm', 'list'], onLeader)).includes('memberID:3 alarm:CORRUPT'));
  assert.equal((await etcdctl(['alarm', 'list'], onLeader)).trim(), 'memberID:3 alarm:CORRUPT', 'only member 3');
  assert.match(cell.cell.tail(leader, 50), /member 3's key space at revision \d+ differs from 2 of 3 members'/);
});

test('member remove of the leader itself: through the leader (it hands over first) and through a follower', { skip: noEtcdctl, timeout: testTimeoutMs }, async () => {
  // Last: it leaves a one-member cell.
  for (const via of ['leader', 'follower'] as const) {
    const running = cell.names.filter((name) => cell.cell.isRunning(name));
    const leader = await findLeader(cell, running);
    const leaderId = (await nativeStatus(leader)).member as number;
    // The removal is refused while the voters left are not all in contact with the leader. n3
    // restarted in the test before, into an idle cell: no write is needed for the leader to count
    // it again (a heartbeat answer brings a caught-up follower back from probe, src/raft).
    await until('every member to be in contact', async () =>
      ((await nativeStatus(leader)).members as { healthy: boolean }[]).every((m) => m.healthy));
    const endpoint = via === 'leader' ? leader : (running.find((n) => n !== leader) as string);
    const removed = await etcdctl(['member', 'remove', hex(leaderId)], [cell.cell.grpcEndpoint(endpoint)]).catch(async (e) => {
      console.log(JSON.stringify(await nativeStatus(leader)), cell.cell.tail(leader, 40), cell.cell.tail(endpoint, 40));
      throw e;
    });
    assert.match(removed, /removed from cluster/);
    const left = running.filter((n) => n !== leader);
    await until(`${leader} to stop`, async () => !cell.cell.isRunning(leader));
    const members = await nativeMembers(left[0]);
    assert.deepEqual(members.map((m) => m.name).sort(), left, `after removing the leader through the ${via}`);
    assert.notEqual(await findLeader(cell, left), leader);
  }
});
