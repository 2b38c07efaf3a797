// etcd's v3 gRPC API through a router (docs/design/cells.md, "The router's gRPC relay"), on real
// processes: a control-plane cell and two data cells serving the facade (cell-2 owns /alpha/,
// the etcd keys `alpha/...`; cell-1 the root), a router with its gRPC relay in this process (so a
// test can make its cache stale), and Debian's etcdctl 3.4 and the `etcd3` client as the users.
// It shows keys landing on their owners (read back from each cell directly), txns within a cell,
// a cross-cell txn and range refused naming namespaces and cells with nothing written, watches
// (two cells on one stream), leases, locks and elections, a namespace moved under a stale router
// answered after one wrong_cell, and `baton router --listen-grpc` as its own process.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { credentials, makeGenericClientConstructor, Metadata, type Client } from '@grpc/grpc-js';
import { Etcd3 } from 'etcd3';
import { freePorts, http, sleep, startTestCell, type TestCell, until } from './harness.js';
import { findEtcdctl } from './etcdctl-path.js';
import { cliPath } from './cli-run.js';
import { Router } from '../../src/router/router.js';
import { RouterGrpc } from '../../src/router-grpc/router-grpc.js';
import { etcdServices } from '../../src/api/grpc/proto.js';

const run = promisify(execFile);
const etcdctlPath = findEtcdctl();
const noEtcdctl = etcdctlPath === null ? 'etcdctl not installed (Debian: apt-get install etcd-client)' : false;
if (noEtcdctl !== false) console.log(`# router-grpc: SKIPPING the etcdctl tests: ${noEtcdctl}`);

let control: TestCell;
let cell1: TestCell;
let cell2: TestCell;
let router: Router;
let grpcUrl: string;
let routerUrl: string;

const json = (method: string, body: unknown): RequestInit => ({ method, body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
const ctlEnv = (): NodeJS.ProcessEnv => ({ ...process.env, ETCDCTL_API: '3' });

async function etcdctl(args: string[], input?: string, endpoint = grpcUrl): Promise<string> {
  const child = run(etcdctlPath as string, [`--endpoints=${endpoint}`, '--command-timeout=8s', ...args], { env: ctlEnv(), timeout: 15_000 });
  if (input !== undefined) child.child.stdin?.end(input);
  return (await child).stdout;
}

async function etcdctlFails(args: string[], input?: string): Promise<string> {
  try {
    await etcdctl(args, input);
  } catch (error) {
    return String((error as { stderr?: string }).stderr ?? error);
  }
  assert.fail(`etcdctl ${args.join(' ')} succeeded`);
}

/** A long-running etcdctl (watch, lock, elect) through the router: its output so far. */
function etcdctlProcess(args: string[]): { output: () => string; stop: () => Promise<void> } {
  const child = spawn(etcdctlPath as string, [`--endpoints=${grpcUrl}`, ...args], { env: ctlEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    output: () => out,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** A key's value read on one cell directly (native API), or the HTTP status (421: not its namespace). */
async function valueOn(cell: TestCell, key: string): Promise<string | number> {
  const answer = await http(`${cell.cell.clientUrls()[0]}/v1/kv${key}`);
  return answer.status === 200 ? answer.body.kvs[0].value : answer.status;
}

/** A raw etcd Watch stream (grpc-js on etcd's protos) to `url` (or host:port): send requests, take answers in order. */
function watchStream(url: string): { send(request: unknown): void; next(): Promise<any>; close(): void } {
  const Watch = makeGenericClientConstructor(etcdServices().Watch, 'Watch');
  const target = url.includes('://') ? new URL(url).host : url;
  const client = new Watch(target, credentials.createInsecure()) as unknown as Client & { Watch: () => any };
  const call = client.Watch();
  const answers: any[] = [];
  let wake: (() => void) | null = null;
  call.on('data', (answer: unknown) => {
    answers.push(answer);
    wake?.();
  });
  call.on('error', () => {});
  return {
    send: (request) => call.write(request),
    async next() {
      const until = Date.now() + 10_000;
      while (answers.length === 0) {
        if (Date.now() > until) assert.fail('no watch answer in 10 s');
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, 200);
        });
      }
      return answers.shift();
    },
    close() {
      call.cancel();
      client.close();
    },
  };
}

async function metric(name: string, cell: string): Promise<number> {
  const text = (await http(`${routerUrl}/metrics`)).body as string;
  const line = text.split('\n').find((l) => l.startsWith(`${name}{cell="${cell}"}`));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

before(async () => {
  [control, cell1, cell2] = await Promise.all([
    startTestCell({ size: 1, extraArgs: ['--cell', 'control', '--control-plane'] }),
    startTestCell({ size: 1, grpc: true, extraArgs: ['--cell', 'cell-1'] }),
    startTestCell({ size: 1, grpc: true, extraArgs: ['--cell', 'cell-2'] }),
  ]);
  const controlUrl = control.cell.clientUrls()[0] as string;
  for (const [id, cell] of [['cell-1', cell1], ['cell-2', cell2]] as const) {
    const added = await http(`${controlUrl}/v1/control/cells`, json('POST', { id, endpoints: cell.cell.clientUrls() }));
    assert.equal(added.status, 200, JSON.stringify(added.body));
  }
  for (const [prefix, cell] of [['/alpha/', 'cell-2'], ['/gamma/', 'cell-1']]) {
    const created = await http(`${controlUrl}/v1/control/namespaces`, json('POST', { prefix, cell }));
    assert.equal(created.status, 200, JSON.stringify(created.body));
    assert.deepEqual(created.body.pending, [], 'both cells took the map');
  }
  const [port, grpcPort] = await freePorts(2);
  router = new Router({ control: control.cell.clientUrls(), host: '127.0.0.1', port: port as number });
  routerUrl = (await router.start()).url;
  grpcUrl = (await RouterGrpc.start(router, { host: '127.0.0.1', port: grpcPort as number })).url;
  assert.ok(await router.cache.ready(10_000), 'the router read the cell map');
  await until('the router knows /gamma/', () => router.cache.namespaces().has('/gamma/'));
}, { timeout: 120_000 });

after(async () => {
  await router?.stop(); // stops the gRPC relay attached to it too
  await Promise.all([control, cell1, cell2].map((cell) => cell?.close()));
});

test('etcdctl put/get/del through the router: each namespace on its own cell', { skip: noEtcdctl, timeout: 30_000 }, async () => {
  assert.equal((await etcdctl(['put', 'alpha/k1', 'v1'])).trim(), 'OK');
  assert.equal((await etcdctl(['put', 'beta/k1', 'b1'])).trim(), 'OK');
  assert.equal(await valueOn(cell2, '/alpha/k1'), 'v1');
  assert.equal(await valueOn(cell1, '/beta/k1'), 'b1');
  assert.equal(await valueOn(cell1, '/alpha/k1'), 421, 'cell-1 does not hold /alpha/');
  assert.equal(await valueOn(cell2, '/beta/k1'), 421, 'cell-2 does not hold the root namespace');
  assert.equal(await etcdctl(['get', 'alpha/k1', '--print-value-only']), 'v1\n');
  assert.equal(await etcdctl(['get', 'beta/', '--prefix', '--keys-only']), 'beta/k1\n\n');
  assert.equal((await etcdctl(['del', 'beta/k1'])).trim(), '1');
  assert.equal(await valueOn(cell1, '/beta/k1'), 404);
});

test('answers carry Baton-Cell and Baton-Routing-Epoch; MemberList names the router', { timeout: 30_000 }, async () => {
  const Kv = makeGenericClientConstructor(etcdServices().KV, 'KV');
  const kv = new Kv(new URL(grpcUrl).host, credentials.createInsecure()) as unknown as Client & { Put: (...args: unknown[]) => any };
  const Cluster = makeGenericClientConstructor(etcdServices().Cluster, 'Cluster');
  const cluster = new Cluster(new URL(grpcUrl).host, credentials.createInsecure()) as unknown as Client & { MemberList: (...args: unknown[]) => any };
  try {
    const headers = await new Promise<Metadata>((resolve, reject) => {
      const call = kv.Put({ key: Buffer.from('alpha/h'), value: Buffer.from('x') }, (error: Error | null) => error !== null && reject(error));
      call.on('metadata', resolve);
    });
    assert.equal(headers.get('baton-cell')[0], 'cell-2');
    const epoch = router.cache.namespaces().get('/alpha/')?.epoch;
    assert.equal(headers.get('baton-routing-epoch')[0], String(epoch));
    const members = await new Promise<any>((resolve, reject) => cluster.MemberList({}, (error: Error | null, value: unknown) => (error === null ? resolve(value) : reject(error))));
    assert.deepEqual(members.members.map((m: any) => m.clientURLs), [[grpcUrl]]);
    if (noEtcdctl === false) assert.match(await etcdctl(['member', 'list']), /baton-router/);
  } finally {
    kv.close();
    cluster.close();
  }
});

test('a txn within one namespace works; a cross-cell txn and range are refused, naming namespaces and cells', { skip: noEtcdctl, timeout: 30_000 }, async () => {
  await etcdctl(['put', 'alpha/t', 'one']);
  const inOne = await etcdctl(['txn'], 'value("alpha/t") = "one"\n\nput alpha/t2 two\n\n\n');
  assert.match(inOne, /^SUCCESS/);
  assert.equal(await valueOn(cell2, '/alpha/t2'), 'two');

  const crossTxn = await etcdctlFails(['txn'], 'value("alpha/t") = "one"\n\nput beta/t3 three\n\n\n');
  assert.match(crossTxn, /spans namespaces in different cells \(\/alpha\/ on cell-2, \/ on cell-1\)/, crossTxn);
  assert.equal(await valueOn(cell1, '/beta/t3'), 404, 'nothing written');
  const crossRange = await etcdctlFails(['get', '', '--prefix']);
  assert.match(crossRange, /spans namespaces in different cells/, crossRange);
  assert.match(crossRange, /\/alpha\/ on cell-2/);
  assert.match(crossRange, /code = InvalidArgument/, crossRange);
  // A range inside one cell's namespaces works.
  assert.equal(await etcdctl(['get', 'alpha/t', 'alpha/t3', '--print-value-only']), 'one\ntwo\n');
});

test('watch through the router: etcdctl sees puts; etcd3 watches two cells on one stream', { timeout: 40_000 }, async () => {
  if (noEtcdctl === false) {
    const watch = etcdctlProcess(['watch', 'alpha/w/', '--prefix']);
    try {
      await sleep(500); // the watch is created before the puts
      await etcdctl(['put', 'alpha/w/1', 'first']);
      const direct = await http(`${cell2.cell.clientUrls()[0]}/v1/kv/alpha/w/2`, { method: 'PUT', body: 'second' });
      assert.ok(direct.status === 200 || direct.status === 201, JSON.stringify(direct.body));
      await until('both events', () => watch.output().includes('alpha/w/2'));
      assert.match(watch.output(), /PUT\nalpha\/w\/1\nfirst\nPUT\nalpha\/w\/2\nsecond/);
    } finally {
      await watch.stop();
    }
  }
  const client = new Etcd3({ hosts: grpcUrl });
  try {
    const seen: string[] = [];
    const onAlpha = await client.watch().prefix('alpha/m/').create();
    const onBeta = await client.watch().prefix('beta/m/').create();
    onAlpha.on('put', (kv) => seen.push(kv.key.toString()));
    onBeta.on('put', (kv) => seen.push(kv.key.toString()));
    await client.put('alpha/m/1').value('a');
    await client.put('beta/m/1').value('b');
    await until('events from both cells', () => seen.length >= 2);
    assert.deepEqual([...seen].sort(), ['alpha/m/1', 'beta/m/1']);
    await onAlpha.cancel();
    await client.put('beta/m/2').value('c');
    await until('the other watch still open', () => seen.includes('beta/m/2'));
    await onBeta.cancel();
  } finally {
    client.close();
  }
});

test('a cell refuses an etcd watch of another cell\'s namespace (wrong_cell), never a silent watch', { timeout: 20_000 }, async () => {
  const direct = watchStream(cell1.cell.grpcEndpoint('n1'));
  try {
    direct.send({ create_request: { key: Buffer.from('alpha/'), range_end: Buffer.from('alpha0') } });
    const refused = await direct.next();
    assert.equal(refused.created, true);
    assert.equal(refused.canceled, true);
    assert.match(refused.cancel_reason, /namespace \/alpha\/ is owned by cell cell-2/);
    direct.send({ create_request: { key: Buffer.from('beta/'), range_end: Buffer.from('beta0') } });
    const created = await direct.next();
    assert.equal(created.created, true);
    assert.equal(created.canceled, false, 'its own namespace is watched');
  } finally {
    direct.close();
  }
});

test('a watch through the router over namespaces of two cells is refused, naming them', { timeout: 20_000 }, async () => {
  const watch = watchStream(grpcUrl);
  try {
    watch.send({ create_request: { key: Buffer.from([0]), range_end: Buffer.from([0]) } });
    const refused = await watch.next();
    assert.deepEqual([refused.created, refused.canceled], [true, true]);
    assert.match(refused.cancel_reason, /spans namespaces in different cells \(.*\/alpha\/ on cell-2.*\)/);
  } finally {
    watch.close();
  }
});

test('leases through the router: grant, put with the lease, keep-alive, timetolive, revoke', { skip: noEtcdctl, timeout: 30_000 }, async () => {
  const granted = await etcdctl(['lease', 'grant', '60']);
  const id = /lease ([0-9a-f]+) granted/.exec(granted)?.[1];
  assert.ok(id !== undefined, granted);
  // Leases live in the root namespace's cell (no baton-namespace metadata): keys of that cell.
  assert.equal((await etcdctl(['put', 'beta/leased', 'v', `--lease=${id}`])).trim(), 'OK');
  assert.match(await etcdctl(['lease', 'keep-alive', '--once', id]), new RegExp(`lease ${id} keepalived with TTL\\(\\d+\\)`));
  assert.match(await etcdctl(['lease', 'timetolive', id, '--keys']), /attached keys\(\[beta\/leased\]\)/);
  assert.match(await etcdctl(['lease', 'revoke', id]), new RegExp(`lease ${id} revoked`));
  assert.equal(await valueOn(cell1, '/beta/leased'), 404, 'the revoke deleted the key');
  // etcdctl's lease is the root cell's: a key of cell-2 cannot take it (the key's cell knows no such lease).
  const rootLease = /lease ([0-9a-f]+) granted/.exec(await etcdctl(['lease', 'grant', '60']))?.[1] as string;
  assert.match(await etcdctlFails(['put', 'alpha/leased', 'v', `--lease=${rootLease}`]), /requested lease not found/);
  await etcdctl(['lease', 'revoke', rootLease]);
});

test('a lease granted with baton-namespace metadata lives in that namespace\'s cell', { skip: noEtcdctl, timeout: 30_000 }, async () => {
  const Lease = makeGenericClientConstructor(etcdServices().Lease, 'Lease');
  const lease = new Lease(new URL(grpcUrl).host, credentials.createInsecure()) as unknown as Client & Record<'LeaseGrant' | 'LeaseRevoke', (...args: unknown[]) => any>;
  const inAlpha = new Metadata();
  inAlpha.set('baton-namespace', '/alpha/');
  const call = (method: 'LeaseGrant' | 'LeaseRevoke', request: unknown): Promise<any> =>
    new Promise((resolve, reject) => lease[method](request, inAlpha, (error: Error | null, value: unknown) => (error === null ? resolve(value) : reject(error))));
  try {
    const granted = await call('LeaseGrant', { TTL: '60' });
    const id = BigInt(granted.ID).toString(16);
    assert.equal((await etcdctl(['put', 'alpha/leased', 'v', `--lease=${id}`])).trim(), 'OK');
    assert.equal(await valueOn(cell2, '/alpha/leased'), 'v');
    await call('LeaseRevoke', { ID: granted.ID });
    assert.equal(await valueOn(cell2, '/alpha/leased'), 404, 'revoked on cell-2: its key is gone');
  } finally {
    lease.close();
  }
});

test('lock and elect through the router', { skip: noEtcdctl, timeout: 30_000 }, async () => {
  const lock = etcdctlProcess(['lock', 'routed-lock']);
  try {
    await until('the lock key', () => /^routed-lock\/[0-9a-f]+$/m.test(lock.output()));
  } finally {
    await lock.stop();
  }
  const elect = etcdctlProcess(['elect', 'routed-election', 'proposal-1']);
  try {
    await until('the leader key and proposal', () => /^routed-election\/[0-9a-f]+\nproposal-1$/m.test(elect.output()));
  } finally {
    await elect.stop();
  }
});

test('a namespace moved under a stale router: one wrong_cell, then the owner answers', { skip: noEtcdctl, timeout: 60_000 }, async () => {
  await etcdctl(['put', 'gamma/k', 'before']);
  assert.equal(await valueOn(cell1, '/gamma/k'), 'before');
  const stale = router.cache.cellMap;
  const started = await http(`${routerUrl}/v1/control/moves`, json('POST', { prefix: '/gamma/', to: 'cell-2' }));
  assert.equal(started.status, 200, JSON.stringify(started.body));
  await until('the move released', async () => {
    const move = (await http(`${routerUrl}/v1/control/namespaces/gamma/`)).body.move;
    assert.notEqual(move?.phase, 'aborted', JSON.stringify(move));
    return move?.phase === 'released' && move?.cleaned === true;
  }, 40_000);
  // The cleaned record is the map's last change of the move: once the router has it, no change comes to undo the staleness.
  const moved = (await http(`${routerUrl}/v1/cluster/status`)).body.epoch as number;
  await until('the router saw the whole move', () => router.cache.cellMap.epoch >= moved && router.cache.namespaces().get('/gamma/')?.cell === 'cell-2');
  router.cache.setMapForTest(stale); // a router that missed the move
  assert.equal(router.cache.namespaces().get('/gamma/')?.cell, 'cell-1');
  const wrongBefore = await metric('baton_router_wrong_cell_total', 'cell-1');
  // A watch created through the stale router reaches the old owner, which refuses it naming the new one.
  const watch = watchStream(grpcUrl);
  try {
    watch.send({ create_request: { key: Buffer.from('gamma/'), range_end: Buffer.from('gamma0'), watch_id: '7' } });
    const refused = await watch.next();
    assert.equal(refused.canceled, true);
    assert.match(refused.cancel_reason, /namespace \/gamma\/ is owned by cell cell-2/);
    assert.equal(await etcdctl(['get', 'gamma/k', '--print-value-only']), 'before\n');
    // The get's wrong_cell corrected the router: the same watch id (freed by the refusal) now reaches cell-2.
    watch.send({ create_request: { key: Buffer.from('gamma/'), range_end: Buffer.from('gamma0'), watch_id: '7' } });
    const created = await watch.next();
    assert.deepEqual([created.watch_id, created.created, created.canceled], ['7', true, false]);
    await etcdctl(['put', 'gamma/w', 'seen']);
    const event = await watch.next();
    assert.equal(event.watch_id, '7');
    assert.equal(event.events[0].kv.value.toString(), 'seen');
  } finally {
    watch.close();
  }
  assert.equal(await metric('baton_router_wrong_cell_total', 'cell-1') - wrongBefore, 1, 'one wrong_cell from the old owner');
  assert.equal((await etcdctl(['put', 'gamma/k2', 'after'])).trim(), 'OK');
  assert.equal(await valueOn(cell2, '/gamma/w'), 'seen');
  assert.equal(await valueOn(cell2, '/gamma/k2'), 'after');
  assert.equal(await metric('baton_router_wrong_cell_total', 'cell-1') - wrongBefore, 1, 'the correction held: no second wrong_cell');
});

test('baton router --listen-grpc as its own process', { skip: noEtcdctl, timeout: 30_000 }, async () => {
  const [port, grpcPort] = await freePorts(2);
  const listenGrpc = `http://127.0.0.1:${grpcPort}`;
  const child: ChildProcess = spawn(process.execPath, [cliPath, 'router', '--control', control.cell.clientUrls().join(','),
    '--listen', `http://127.0.0.1:${port}`, '--listen-grpc', listenGrpc], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    await until('the router ready', () => out.includes('Baton router ready'));
    assert.match(out, new RegExp(`Baton router etcd gRPC: ${listenGrpc}`));
    await until('the router knows /alpha/', async () => (await http(`http://127.0.0.1:${port}/v1/cluster/status`)).body.namespaces?.some((n: any) => n.prefix === '/alpha/'));
    assert.equal((await etcdctl(['put', 'alpha/cli', 'via-cli'], undefined, listenGrpc)).trim(), 'OK');
    assert.equal(await valueOn(cell2, '/alpha/cli'), 'via-cli');
    assert.equal(await etcdctl(['get', 'alpha/cli', '--print-value-only'], undefined, listenGrpc), 'via-cli\n');
  } finally {
    child.kill('SIGTERM');
    assert.equal(await exited, 0, out);
  }
});

test('etcd auth through the router: the token a user gets is passed on and checked by the cell', { skip: noEtcdctl, timeout: 40_000 }, async () => {
  // Users and auth are per cell: through the router without baton-cell, the root's cell (cell-1).
  for (const args of [['user', 'add', 'root:rootpw'], ['role', 'add', 'root'], ['user', 'grant-role', 'root', 'root']]) await etcdctl(args);
  assert.match(await etcdctl(['auth', 'enable']), /Authentication Enabled/);
  try {
    assert.match(await etcdctlFails(['put', 'beta/auth', 'anonymous']), /permission denied|user name is empty/);
    assert.equal((await etcdctl(['--user', 'root:rootpw', 'put', 'beta/auth', 'as-root'])).trim(), 'OK');
    assert.equal(await etcdctl(['--user', 'root:rootpw', 'get', 'beta/auth', '--print-value-only']), 'as-root\n');
    // The token is cell-1's (signed with its policy's key): cell-2 does not accept it.
    assert.match(await etcdctlFails(['--user', 'root:rootpw', 'put', 'alpha/auth', 'x']), /invalid auth token/);
  } finally {
    await etcdctl(['--user', 'root:rootpw', 'auth', 'disable']);
  }
  assert.equal((await etcdctl(['put', 'beta/auth', 'open-again'])).trim(), 'OK');
});
