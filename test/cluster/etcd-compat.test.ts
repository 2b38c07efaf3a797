// The etcd v3 gRPC facade driven by real etcd clients against a 3-process cell: Debian's etcdctl
// (3.4, ETCDCTL_API=3) and the `etcd3` npm client, including their own lock and election
// helpers. Each check also looks at the same data through Baton's native HTTP API, so the facade
// is shown to be a view of the one state machine (etcd key "foo" is native "/foo").
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { Etcd3 } from 'etcd3';
import { credentials, loadPackageDefinition, Metadata, status, type Client, type GrpcObject, type ServiceClientConstructor } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { protoDir } from '../../src/api/grpc/proto.js';
import { MemoryEngine, MvccStore } from '../../src/mvcc/index.js';
import { snapshotBody } from '../../src/api/grpc/snapshot-stream.js';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findEtcdctl } from './etcdctl-path.js';
import { http, sleep, startTestCell, type TestCell, until } from './harness.js';

const run = promisify(execFile);
const etcdctlPath = findEtcdctl();
const noEtcdctl = etcdctlPath === null ? 'etcdctl not installed (Debian: apt-get install etcd-client; .ci/run tries)' : false;
if (noEtcdctl !== false) console.log(`# etcd-compat: SKIPPING the etcdctl tests: ${noEtcdctl}`);

/** A hung client fails its test instead of the whole run. */
const testTimeoutMs = 40_000;
let cell: TestCell;
let endpoints: string[];

before(async () => {
  // A 2 s lease minimum keeps the expiry checks short (the default is 5 s; the rules are the same).
  process.env['BATON_LEASE_TTL_MS_MIN'] = '2000';
  cell = await startTestCell({ grpc: true });
  endpoints = cell.names.map((name) => cell.cell.grpcEndpoint(name));
});

after(async () => {
  await cell?.close();
});

const ctlEnv = (): NodeJS.ProcessEnv => ({ ...process.env, ETCDCTL_API: '3' });
const ctlArgs = (args: string[], endpoint?: string): string[] => [
  `--endpoints=${endpoint ?? endpoints.join(',')}`,
  '--command-timeout=8s',
  ...args,
];

async function etcdctl(args: string[], input?: string, endpoint?: string): Promise<string> {
  const child = run(etcdctlPath as string, ctlArgs(args, endpoint), { env: ctlEnv(), timeout: 15_000 });
  if (input !== undefined) {
    child.child.stdin?.end(input);
  }
  return (await child).stdout;
}

/** etcdctl's failure text (its stderr), asserting that it failed. */
async function etcdctlFails(args: string[]): Promise<string> {
  try {
    await etcdctl(args);
  } catch (error) {
    return String((error as { stderr?: string }).stderr ?? error);
  }
  assert.fail(`etcdctl ${args.join(' ')} succeeded`);
}

/** A long-running etcdctl (watch, lock, elect): its output so far and a way to stop it. */
function etcdctlProcess(args: string[]): { child: ChildProcess; output: () => string; stop: () => Promise<void> } {
  const child = spawn(etcdctlPath as string, ctlArgs(args), { env: ctlEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    output: () => out,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

const native = (path: string, init?: RequestInit): ReturnType<typeof http> => http(`${cell.cell.clientUrl('n1')}${path}`, init);

test('etcdctl put/get/del/txn: the same keys and revisions as the native API', { skip: noEtcdctl, timeout: testTimeoutMs }, async () => {
  assert.equal((await etcdctl(['put', 'ctl/a', 'one'])).trim(), 'OK');
  await etcdctl(['put', 'ctl/b', 'two']);
  await etcdctl(['put', 'ctl/c', 'three']);
  const got = JSON.parse(await etcdctl(['get', 'ctl/a', '-w', 'json']));
  const nativeA = await native('/v1/kv/ctl/a');
  assert.equal(nativeA.status, 200);
  const kv = nativeA.body.kvs[0];
  assert.equal(Buffer.from(got.kvs[0].key, 'base64').toString(), 'ctl/a');
  assert.equal(Buffer.from(got.kvs[0].value, 'base64').toString(), 'one');
  assert.equal(got.kvs[0].mod_revision, kv.modRevision);
  assert.equal(got.kvs[0].create_revision, kv.createRevision);
  assert.equal(got.kvs[0].version, 1);
  assert.ok(got.header.revision >= kv.modRevision && got.header.raft_term >= 1 && got.header.member_id >= 1);

  assert.equal(await etcdctl(['get', 'ctl/', '--prefix', '--keys-only']), 'ctl/a\n\nctl/b\n\nctl/c\n\n');
  assert.equal(await etcdctl(['get', 'ctl/', '--prefix', '--sort-by=MODIFY', '--order=DESCEND', '--limit=1']), 'ctl/c\nthree\n');
  assert.equal(await etcdctl(['get', 'ctl/b', 'ctl/c']), 'ctl/b\ntwo\n'); // [ctl/b, ctl/c): not a prefix
  assert.equal(JSON.parse(await etcdctl(['get', 'ctl/', '--prefix', '--limit=1', '-w', 'json'])).count, 3);
  assert.equal(await etcdctl(['get', 'ctl/zzz']), '');

  // prev_kv on delete; the native API sees it gone.
  assert.equal(await etcdctl(['del', 'ctl/a', '--prev-kv']), '1\nctl/a\none\n');
  assert.equal((await native('/v1/kv/ctl/a')).status, 404);

  // Txn: compare on value, then-branch put and get; the else-branch untouched.
  const txn = await etcdctl(['txn'], 'value("ctl/b") = "two"\n\nput ctl/b deux\nget ctl/c\n\nput ctl/else yes\n\n');
  assert.equal(txn, 'SUCCESS\n\nOK\n\nctl/c\nthree\n');
  assert.equal((await native('/v1/kv/ctl/b')).body.kvs[0].value, 'deux');
  assert.equal((await native('/v1/kv/ctl/else')).status, 404);
  const failed = await etcdctl(['txn'], 'mod("ctl/b") < "1"\n\nput ctl/then x\n\nput ctl/else yes\n\n');
  assert.equal(failed, 'FAILURE\n\nOK\n');
  assert.equal((await native('/v1/kv/ctl/else')).body.kvs[0].value, 'yes');
});

test('ranges: etcdctl get FROM TO, --from-key, --limit with count and more, at a past revision; etcd3 pages through a range', { timeout: testTimeoutMs }, async () => {
  // '~' (0x7e) sorts after every other test's keys, so "from ~rg/27 on" is exactly these.
  const client = new Etcd3({ hosts: endpoints });
  try {
    const names = Array.from({ length: 30 }, (_, i) => `~rg/${String(i).padStart(2, '0')}`);
    for (const name of names) await client.put(name).value(`v${name.slice(4)}`);
    const putRevision = Number((await client.get(names[29] as string).exec()).header.revision);
    await client.put('~rg/05').value('changed');
    await client.delete().key('~rg/06');

    if (noEtcdctl === false) {
      assert.equal(await etcdctl(['get', '~rg/05', '~rg/08']), '~rg/05\nchanged\n~rg/07\nv07\n');
      assert.equal(await etcdctl(['get', '~rg/27', '--from-key', '--keys-only']), '~rg/27\n\n~rg/28\n\n~rg/29\n\n');
      const limited = JSON.parse(await etcdctl(['get', '~rg/27', '--from-key', '--limit=2', '-w', 'json']));
      assert.deepEqual([limited.kvs.length, limited.count, limited.more], [2, 3, true]);
      const page = JSON.parse(await etcdctl(['get', '~rg/', '~rg0', '--limit=10', '-w', 'json']));
      assert.deepEqual([page.kvs.length, page.count, page.more], [10, 29, true]);
      assert.equal(Buffer.from(page.kvs[9].key, 'base64').toString(), '~rg/10');
      // The state before the change and the delete, by revision.
      const past = await etcdctl(['get', '~rg/05', '~rg/07', `--rev=${putRevision}`]);
      assert.equal(past, '~rg/05\nv05\n~rg/06\nv06\n');
    }

    // Pagination as clients do it: the next page starts just after the last key ("\0" appended).
    const seen: string[] = [];
    let start = Buffer.from('~rg/');
    const end = Buffer.from('~rg0');
    for (let pages = 0; pages < 10; pages++) {
      const answer = await client.getAll().inRange({ start, end }).limit(7).exec();
      for (const kv of answer.kvs) seen.push(kv.key.toString());
      assert.equal(Number(answer.count), 29 - (seen.length - answer.kvs.length), 'count: every key from the page start on');
      if (!answer.more) break;
      start = Buffer.concat([answer.kvs[answer.kvs.length - 1]?.key as Buffer, Buffer.from([0])]);
    }
    assert.deepEqual(seen, names.filter((name) => name !== '~rg/06'));
    assert.equal(await client.getAll().inRange({ start: '~rg/10', end: '~rg/20' }).count(), 10);
    assert.deepEqual(await client.getAll().inRange({ start: '~rg/28', end: '~rg0' }).keys(), ['~rg/28', '~rg/29']);
    // A range delete that is not a prefix, seen through the native API.
    await client.delete().inRange({ start: '~rg/20', end: '~rg/25' }).exec();
    assert.equal((await native('/v1/kv/~rg/?prefix=true&countOnly=true')).body.count, 24);
  } finally {
    client.close();
  }
});

test('etcdctl sees etcd errors: future revision, compacted revision, unknown lease', { skip: noEtcdctl, timeout: testTimeoutMs }, async () => {
  await etcdctl(['put', 'err/k', 'v1']);
  const { header } = JSON.parse(await etcdctl(['put', 'err/k', 'v2', '-w', 'json']));
  const revision = Number(header.revision);
  assert.match(await etcdctlFails(['get', 'err/k', `--rev=${revision + 1000}`]), /etcdserver: mvcc: required revision is a future revision/);
  assert.equal(await etcdctl(['get', 'err/k', `--rev=${revision - 1}`, '--print-value-only']), 'v1\n');
  assert.match(await etcdctl(['compact', String(revision)]), new RegExp(`compacted revision ${revision}`));
  assert.match(await etcdctlFails(['get', 'err/k', `--rev=${revision - 1}`]), /etcdserver: mvcc: required revision has been compacted/);
  assert.match(await etcdctlFails(['lease', 'revoke', '7fffffff']), /etcdserver: requested lease not found/);
  // A watch from a compacted revision is canceled with etcd's message.
  const watch = etcdctlProcess(['watch', 'err/k', `--rev=${revision - 1}`]);
  await until('the compacted watch to be canceled', () => watch.output().includes('required revision has been compacted'));
  await watch.stop();
});

test('etcdctl watch: puts and deletes in order with prev_kv, from another node than the writes', { skip: noEtcdctl, timeout: testTimeoutMs }, async () => {
  const watch = etcdctlProcess(['watch', 'w/', '--prefix', '--prev-kv', `--endpoints=${endpoints[2]}`]);
  await sleep(500); // etcdctl prints nothing when its watch is created
  await etcdctl(['put', 'w/1', 'a'], undefined, endpoints[0]);
  await native('/v1/kv/w/1', { method: 'PUT', body: 'b' }); // a native write is an etcd event too
  await etcdctl(['del', 'w/1'], undefined, endpoints[1]);
  await until('three events', () => (watch.output().match(/^(PUT|DELETE)$/gm) ?? []).length >= 3);
  await watch.stop();
  assert.equal(watch.output(), 'PUT\nw/1\na\nPUT\nw/1\na\nw/1\nb\nDELETE\nw/1\nb\nw/1\n\n');
});

test('etcdctl lease: grant, attach, keep-alive, time-to-live with keys, revoke deletes the keys', { skip: noEtcdctl, timeout: testTimeoutMs }, async () => {
  const granted = await etcdctl(['lease', 'grant', '10']);
  const id = /lease ([0-9a-f]+) granted with TTL\(10s\)/.exec(granted)?.[1];
  assert.ok(id !== undefined, granted);
  await etcdctl(['put', 'leased/a', 'x', `--lease=${id}`]);
  assert.match(await etcdctl(['lease', 'keep-alive', '--once', id]), new RegExp(`lease ${id} keepalived with TTL\\(10\\)`));
  assert.match(await etcdctl(['lease', 'timetolive', id, '--keys']), /granted with TTL\(10s\), remaining\(\d+s\), attached keys\(\[leased\/a\]\)/);
  assert.match(await etcdctl(['lease', 'list']), new RegExp(`\\b${id}\\b`));
  const nativeKv = await native('/v1/kv/leased/a');
  assert.equal(nativeKv.body.kvs[0].lease, Number.parseInt(id, 16));
  assert.match(await etcdctl(['lease', 'revoke', id]), /revoked/);
  assert.equal((await native('/v1/kv/leased/a')).status, 404);
  assert.match(await etcdctl(['lease', 'timetolive', id]), /already expired/);
  // Below the cell's minimum: raised to it, as etcd does, and the answer says so.
  assert.match(await etcdctl(['lease', 'grant', '1']), /granted with TTL\(2s\)/);
});

test('etcdctl member list and endpoint status describe the cell', { skip: noEtcdctl, timeout: testTimeoutMs }, async () => {
  const members = JSON.parse(await etcdctl(['member', 'list', '-w', 'json']));
  assert.equal(members.members.length, 3);
  assert.deepEqual(
    members.members.map((m: { name: string; clientURLs: string[] }) => [m.name, m.clientURLs[0]]),
    cell.names.map((name) => [name, `http://${cell.cell.grpcEndpoint(name)}`]),
  );
  const status = JSON.parse(await etcdctl(['endpoint', 'status', '-w', 'json']));
  assert.equal(status.length, 3);
  const leaders = new Set(status.map((s: { Status: { leader: number } }) => s.Status.leader));
  assert.equal(leaders.size, 1);
  const nativeStatus = (await native('/v1/cluster/status')).body;
  assert.equal([...leaders][0], nativeStatus.leader);
  assert.equal(status[0].Status.version, '3.5.0');
  assert.equal((await etcdctl(['alarm', 'list'])).trim(), '');
});

test('etcdctl snapshot save: a checksummed file that restores into a Baton store', { skip: noEtcdctl, timeout: testTimeoutMs }, async () => {
  await etcdctl(['put', 'snap/k', 'kept']);
  const dir = mkdtempSync(join(tmpdir(), 'baton-etcd-snap-'));
  try {
    const file = join(dir, 'snap.db');
    // From a follower or the leader alike: each node serves its own applied state, so a
    // linearizable read on that member first makes sure it has applied the put.
    assert.match(await etcdctl(['get', 'snap/k'], undefined, endpoints[2]), /kept/);
    assert.match(await etcdctl(['snapshot', 'save', file], undefined, endpoints[2]), /Snapshot saved at/);
    const bytes = readFileSync(file);
    // etcd's layout: 512-byte blocks, then the SHA-256 of them.
    assert.equal(bytes.length % 512, 32);
    assert.deepEqual(bytes.subarray(bytes.length - 32), createHash('sha256').update(bytes.subarray(0, bytes.length - 32)).digest());
    const restored = new MvccStore(new MemoryEngine());
    restored.restore([snapshotBody(bytes)]);
    const damaged = Buffer.from(bytes);
    damaged[10] = (damaged[10] as number) ^ 1;
    assert.throws(() => snapshotBody(damaged), /SHA-256 mismatch/);
    const read = restored.range({ type: 'get', key: '/snap/k' });
    assert.equal(Buffer.from(read.kvs[0]?.value ?? []).toString(), 'kept');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('etcdctl lock and elect: the second contender waits for the first', { skip: noEtcdctl, timeout: testTimeoutMs }, async () => {
  const first = etcdctlProcess(['lock', 'ctl-lock']);
  await until('the first lock holder', () => first.output().startsWith('ctl-lock/'));
  const second = etcdctlProcess(['lock', 'ctl-lock', 'echo', 'second-holds-it']);
  await sleep(700);
  assert.equal(second.output(), '', 'the second contender must wait');
  await first.stop(); // releases: etcdctl revokes its session lease on SIGTERM
  await until('the second contender to run', () => second.output().includes('second-holds-it'));
  await second.stop();

  const listen = etcdctlProcess(['elect', '-l', 'ctl-elect']);
  const alice = etcdctlProcess(['elect', 'ctl-elect', 'alice']);
  await until('alice elected', () => alice.output().includes('alice'));
  const bob = etcdctlProcess(['elect', 'ctl-elect', 'bob']);
  await sleep(500);
  assert.equal(bob.output(), '', 'bob waits while alice leads');
  await alice.stop();
  await until('bob elected', () => bob.output().includes('bob'));
  await until('the listener to see both', () => listen.output().includes('bob'));
  assert.ok(listen.output().indexOf('alice') < listen.output().indexOf('bob'), listen.output());
  await bob.stop();
  await listen.stop();
});

test('the etcd3 npm client: kv, watch, leases, txn limits, and its lock and election helpers', { timeout: testTimeoutMs }, async () => {
  const client = new Etcd3({ hosts: endpoints });
  try {
    await client.put('e3/a').value('1');
    assert.equal(await client.get('e3/a').string(), '1');
    assert.equal((await native('/v1/kv/e3/a')).body.kvs[0].value, '1');
    assert.deepEqual(await client.getAll().prefix('e3/').strings(), { 'e3/a': '1' });

    const watcher = await client.watch().prefix('e3/').withPreviousKV().create();
    const seen: string[] = [];
    watcher.on('put', (kv, previous) => seen.push(`put ${kv.key.toString()}=${kv.value.toString()} was ${previous?.value.toString()}`));
    watcher.on('delete', (kv) => seen.push(`delete ${kv.key.toString()}`));
    await client.put('e3/a').value('2');
    await client.delete().key('e3/a');
    await until('two watch events', () => seen.length >= 2);
    assert.deepEqual(seen, ['put e3/a=2 was 1', 'delete e3/a']);
    await watcher.cancel();

    const lease = client.lease(5);
    await lease.put('e3/leased').value('x');
    const leaseId = await lease.grant();
    assert.equal((await native('/v1/kv/e3/leased')).body.kvs[0].lease, Number(leaseId));
    await lease.revoke();
    assert.equal(await client.get('e3/leased').string(), null);

    const ops = Array.from({ length: 129 }, (_, i) => client.put(`e3/many/${i}`).value('x'));
    await assert.rejects(client.if('e3/a', 'Version', '==', 0).then(...ops).commit(), /too many operations in txn request/);

    // etcd3's Lock is a try-lock: while one holder has it, every other attempt fails.
    const holder = await client.lock('e3-lock').ttl(5).acquire();
    const others = await Promise.allSettled([1, 2].map(() => client.lock('e3-lock').ttl(5).acquire()));
    assert.deepEqual(others.map((o) => o.status), ['rejected', 'rejected']);
    await holder.release();
    const next = await client.lock('e3-lock').ttl(5).acquire(); // released: free again
    await next.release();

    const election = client.election('e3-elect', 5);
    const observer = await election.observe();
    const leaders: (string | undefined)[] = [];
    observer.on('change', (value) => leaders.push(value));
    const alice = election.campaign('alice');
    await alice.wait();
    const bob = election.campaign('bob');
    let bobElected = false;
    bob.on('elected', () => (bobElected = true));
    await sleep(300);
    assert.equal(bobElected, false);
    assert.equal(await election.leader(), 'alice');
    await alice.proclaim('alice-2');
    await alice.resign();
    await bob.wait();
    assert.equal(await election.leader(), 'bob');
    await until('the observer to see bob', () => leaders.includes('bob'));
    assert.deepEqual(leaders, ['alice', 'alice-2', 'bob']);
    await bob.resign();
    await observer.cancel();
  } finally {
    client.close();
  }
});

/** etcd's Lock, Election and Lease services through a plain gRPC client on etcd's definitions. */
function etcdGrpc(endpoint: string): { lock: Client; election: Client; lease: Client; kv: Client; watch: Client; close(): void } {
  const definition = loadSync(['rpc.proto', 'v3lock.proto', 'v3election.proto'], {
    includeDirs: [protoDir()],
    keepCase: true,
    longs: String,
    defaults: true,
    oneofs: true,
  });
  const root = loadPackageDefinition(definition);
  const make = (pkg: string, name: string): Client =>
    new ((root[pkg] as GrpcObject)[name] as ServiceClientConstructor)(endpoint, credentials.createInsecure());
  const clients = {
    lock: make('v3lockpb', 'Lock'),
    election: make('v3electionpb', 'Election'),
    lease: make('etcdserverpb', 'Lease'),
    kv: make('etcdserverpb', 'KV'),
    watch: make('etcdserverpb', 'Watch'),
  };
  return { ...clients, close: () => Object.values(clients).forEach((c) => c.close()) };
}

function call<T = any>(client: Client, method: string, request: unknown, deadlineMs = 15_000): Promise<T> {
  return new Promise((resolve, reject) => {
    const fn = (client as unknown as Record<string, Function>)[method] as Function;
    fn.call(client, request, new Metadata(), { deadline: Date.now() + deadlineMs }, (error: unknown, answer: T) =>
      error ? reject(error) : resolve(answer),
    );
  });
}

const settled = <T>(promise: Promise<T>): (() => boolean) => {
  let done = false;
  promise.then(() => (done = true), () => (done = true));
  return () => done;
};

test('v3lock and v3election over gRPC: queued in the same server-side queues as the native API', { timeout: testTimeoutMs }, async () => {
  const etcd = etcdGrpc(endpoints[1] as string);
  try {
    const leaseA = (await call(etcd.lease, 'LeaseGrant', { TTL: 10 })).ID;
    const leaseB = (await call(etcd.lease, 'LeaseGrant', { TTL: 10 })).ID;
    const first = await call(etcd.lock, 'Lock', { name: Buffer.from('g-lock'), lease: leaseA });
    const firstKey = first.key.toString();
    assert.match(firstKey, /^locks\/g-lock\/\d{12}$/);
    const waiting = call(etcd.lock, 'Lock', { name: Buffer.from('g-lock'), lease: leaseB });
    const secondDone = settled(waiting);
    await sleep(300);
    assert.equal(secondDone(), false, 'the second Lock waits');
    const state = (await native('/v1/locks/g-lock')).body;
    assert.equal(state.holder.key, `/${firstKey}`);
    assert.equal(state.queue.length, 1);
    await assert.rejects(call(etcd.lock, 'Lock', { name: Buffer.from('g-lock'), lease: leaseA }, 400), (error: { code: number }) => error.code === status.DEADLINE_EXCEEDED);
    await call(etcd.lock, 'Unlock', { key: first.key });
    const second = await waiting;
    assert.ok(second.key.toString() > firstKey, 'fencing order: the later contender has the larger revision');
    await call(etcd.lock, 'Unlock', { key: second.key });

    const values: string[] = [];
    const observer = (etcd.election as unknown as Record<string, Function>)['Observe']!.call(etcd.election, { name: Buffer.from('g-elect') });
    observer.on('data', (answer: { kv: { value: Buffer } }) => values.push(answer.kv.value.toString()));
    observer.on('error', () => undefined);
    const alice = (await call(etcd.election, 'Campaign', { name: Buffer.from('g-elect'), lease: leaseA, value: Buffer.from('alice') })).leader;
    const bobCampaign = call(etcd.election, 'Campaign', { name: Buffer.from('g-elect'), lease: leaseB, value: Buffer.from('bob') });
    const bobDone = settled(bobCampaign);
    await sleep(300);
    assert.equal(bobDone(), false, 'bob waits while alice leads');
    assert.equal((await call(etcd.election, 'Leader', { name: Buffer.from('g-elect') })).kv.value.toString(), 'alice');
    await call(etcd.election, 'Proclaim', { leader: alice, value: Buffer.from('alice-2') });
    await call(etcd.election, 'Resign', { leader: alice });
    const bob = (await bobCampaign).leader;
    assert.ok(Number(bob.rev) > Number(alice.rev), 'a new term');
    assert.equal((await call(etcd.election, 'Leader', { name: Buffer.from('g-elect') })).kv.value.toString(), 'bob');
    await assert.rejects(call(etcd.election, 'Proclaim', { leader: alice, value: Buffer.from('stale') }), /election: not leader/);
    await until('the observer to see bob', () => values.includes('bob'));
    assert.deepEqual(values, ['alice', 'alice-2', 'bob']);
    observer.cancel();
    await call(etcd.election, 'Resign', { leader: bob });
  } finally {
    etcd.close();
  }
});

test('bad input gets etcd-style errors, and the node keeps serving', { timeout: testTimeoutMs }, async () => {
  const etcd = etcdGrpc(endpoints[0] as string);
  const fails = async (method: string, request: unknown, code: number, message: RegExp, client = etcd.kv): Promise<void> => {
    await assert.rejects(call(client, method, request), (error: { code: number; details: string }) => {
      assert.equal(error.code, code, error.details);
      assert.match(error.details, message);
      return true;
    });
  };
  try {
    // A key that is not UTF-8 is stored with escapes (docs/etcd-compat.md, Keys) and reads back exactly, under its prefix.
    await call(etcd.kv, 'Put', { key: Buffer.from([0x66, 0x2f, 0xff, 0x80]), value: Buffer.from('binary') });
    const binary = await call(etcd.kv, 'Range', { key: Buffer.from('f/'), range_end: Buffer.from('f0') });
    assert.deepEqual(binary.kvs.map((kv: { key: Buffer }) => Buffer.from(kv.key).toString('hex')), ['662fff80']);
    await fails('Put', { key: Buffer.alloc(0), value: Buffer.from('x') }, status.INVALID_ARGUMENT, /^etcdserver: key is not provided$/);
    await fails('Put', { key: Buffer.from('big'), value: Buffer.alloc(1200 * 1024) }, status.INVALID_ARGUMENT, /^etcdserver: request is too large/);
    await fails('Put', { key: Buffer.from('huge'), value: Buffer.alloc(3 * 1024 * 1024) }, status.RESOURCE_EXHAUSTED, /./);
    await fails('Range', { key: Buffer.from('a'), revision: '-1' }, status.INVALID_ARGUMENT, /revision/);
    await fails('LeaseGrant', { TTL: '1000000000' }, status.OUT_OF_RANGE, /^etcdserver: too large lease TTL$/, etcd.lease);
    const txn = { success: Array.from({ length: 129 }, (_, i) => ({ request_put: { key: Buffer.from(`t/${i}`), value: Buffer.from('x') } })) };
    await fails('Txn', txn, status.INVALID_ARGUMENT, /^etcdserver: too many operations in txn request$/);
    const put = await call(etcd.kv, 'Put', { key: Buffer.from('still/serving'), value: Buffer.from('yes') });
    assert.ok(Number(put.header.revision) > 0);
  } finally {
    etcd.close();
  }
});

// Last: it stops n1.
test('a stopping node ends its watch streams UNAVAILABLE; resuming on another node from the last revision loses nothing', { timeout: testTimeoutMs }, async () => {
  const onN1 = etcdGrpc(endpoints[0] as string);
  const onN2 = etcdGrpc(endpoints[1] as string);
  const put = (i: number): ReturnType<typeof http> => http(`${cell.cell.clientUrl('n3')}/v1/kv/stop/k`, { method: 'PUT', body: String(i) });
  const open = (etcd: ReturnType<typeof etcdGrpc>, startRevision: number) => {
    const stream = (etcd.watch as unknown as Record<string, Function>)['Watch']!.call(etcd.watch);
    const events: { value: string; revision: number }[] = [];
    let ended: { code: number } | null = null;
    stream.on('data', (m: { events: { kv: { value: Buffer; mod_revision: string } }[] }) => {
      for (const e of m.events) events.push({ value: e.kv.value.toString(), revision: Number(e.kv.mod_revision) });
    });
    stream.on('error', (error: { code: number }) => (ended = error));
    stream.write({ create_request: { key: Buffer.from('stop/'), range_end: Buffer.from('stop0'), start_revision: String(startRevision) } });
    return { stream, events, ended: () => ended };
  };
  try {
    const first = open(onN1, 0);
    await sleep(300);
    for (let i = 0; i < 5; i++) assert.equal((await put(i)).status < 300, true);
    await until('five events on n1', () => first.events.length === 5);
    cell.cell.signal('n1', 'SIGTERM');
    await until('the stream to end', () => first.ended() !== null);
    assert.equal(first.ended()?.code, status.UNAVAILABLE);
    await cell.cell.waitExit('n1');
    for (let i = 5; i < 10; i++) assert.equal((await putSurely(i)).status < 300, true);
    const last = first.events.at(-1)?.revision as number;
    const second = open(onN2, last + 1);
    await until('the rest on n2', () => second.events.length >= 5);
    assert.deepEqual([...first.events, ...second.events].map((e) => e.value), ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9']);
    second.stream.end();
  } finally {
    onN1.close();
    onN2.close();
  }

  async function putSurely(i: number): ReturnType<typeof http> {
    for (let attempt = 0; ; attempt++) {
      const answer = await put(i);
      if (answer.status < 300 || attempt >= 50) return answer;
      await sleep(200); // an election after n1 left
    }
  }
});
