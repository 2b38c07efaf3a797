// A 3-process cell with TLS everywhere (issue 25, transport security): HTTPS with client
// certificates required on the HTTP API, TLS on the etcd facade (gRPC by ALPN h2, the JSON
// gateway on HTTP/1.1), mutual TLS with node identity between members. Tried as an attacker would:
// no client certificate, plain HTTP, and a rogue process speaking the peer protocol with the
// cell's cluster id, once with a valid certificate of another member and once with a certificate
// from another CA: all refused, counted and logged, and the cell's data and leader unchanged.
// Certificates rotate without a restart (SIGHUP).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as connectTls } from 'node:tls';
import { promisify } from 'node:util';
import { readFileSync } from 'node:fs';
import { BatonClient } from '../../src/client/index.js';
import { httpsRequest } from '../../src/node/testing/cell-tls.js';
import { baton } from './cli-run.js';
import { findEtcdctl } from './etcdctl-path.js';
import { ensureCa, issueMemberCert, type CertFiles } from '../../src/security/certs.js';
import { TlsMaterial } from '../../src/security/tls-files.js';
import { PeerTransport, peerIdentity } from '../../src/transport/index.js';
import { sleep, startTestCell, type TestCell } from './harness.js';

const run = promisify(execFile);
let cell: TestCell;

before(async () => {
  cell = await startTestCell({ tls: true, grpc: true });
});

after(async () => {
  await cell?.close();
});

function tls(): NonNullable<TestCell['cell']['tls']> {
  const material = cell.cell.tls;
  assert.ok(material !== null);
  return material;
}

async function rootRequest(name: string, path: string, method = 'GET', body?: string): Promise<{ status: number; json: any }> {
  const answer = await httpsRequest(`${cell.cell.clientUrl(name)}${path}`, {
    ca: tls().ca.cert, client: tls().root, method, ...(body === undefined ? {} : { body }),
  });
  return { status: answer.status, json: answer.body.startsWith('{') ? JSON.parse(answer.body) : answer.body };
}

async function metric(name: string, metricName: string): Promise<number> {
  const text = (await rootRequest(name, '/metrics')).json as string;
  const line = text.split('\n').find((l) => l.startsWith(`${metricName} `));
  return Number(line?.split(' ')[1] ?? NaN);
}

test('writes replicate over mutual TLS and read back on another member over HTTPS', async () => {
  const put = await rootRequest('n1', '/v1/kv/secure/a', 'PUT', 'one');
  assert.equal(put.status, 201, JSON.stringify(put.json));
  const read = await rootRequest('n2', '/v1/kv/secure/a');
  assert.equal(read.status, 200);
  assert.equal(read.json.kvs[0].value, 'one');
});

test('without a client certificate, or over plain HTTP, nothing is served', async () => {
  await assert.rejects(httpsRequest(`${cell.cell.clientUrl('n1')}/v1/kv/secure/a`, { ca: tls().ca.cert }));
  const plain = cell.cell.clientUrl('n1').replace('https:', 'http:');
  const answer = await fetch(`${plain}/v1/kv/secure/a`, { signal: AbortSignal.timeout(3000) }).then((r) => r.status, () => 0);
  assert.ok(answer === 0 || answer >= 400, `plain HTTP got ${answer}`);
});

test('the etcd facade over TLS: etcdctl with the root certificate (gRPC, h2) and the JSON gateway (HTTP/1.1)', async (t) => {
  const etcdctl = findEtcdctl() ?? undefined;
  const endpoint = `https://${cell.cell.grpcEndpoint('n3')}`;
  if (etcdctl === undefined) {
    t.diagnostic('etcdctl not installed: the gRPC half is skipped');
  } else {
    const { stdout } = await run(etcdctl, [`--endpoints=${endpoint}`, '--cacert', tls().ca.cert, '--cert', tls().root.cert, '--key', tls().root.key,
      'get', 'secure/a', '--print-value-only'], { env: { ...process.env, ETCDCTL_API: '3' }, timeout: 15_000 });
    assert.equal(stdout.trim(), 'one');
  }
  const range = await httpsRequest(`${endpoint}/v3/kv/range`, {
    ca: tls().ca.cert, client: tls().root, method: 'POST', body: JSON.stringify({ key: Buffer.from('secure/a').toString('base64') }),
  });
  assert.equal(range.status, 200, range.body);
  assert.equal(Buffer.from(JSON.parse(range.body).kvs[0].value, 'base64').toString(), 'one');
});

test("a rogue peer with the cell's cluster id is refused: another member's valid certificate, or another CA's", async () => {
  const status = await rootRequest('n1', '/v1/cluster/status');
  const clusterId = status.json.clusterId as string;
  const leaderBefore = status.json.leader as number;
  const termBefore = status.json.term as number;
  const refusedBefore = await metric('n1', 'baton_peer_connections_refused_total');
  const peerPort = Number(new URL(cell.cell.peerUrl('n1')).port);
  const otherDir = mkdtempSync(join(tmpdir(), 'baton-rogue-'));
  const impostor: CertFiles = tls().member('n3');
  const foreign = issueMemberCert(ensureCa(otherDir, 'Rogue CA'), 'cell-1', 'n2');
  try {
    for (const [label, files, caFile] of [['n3 as member 2', impostor, tls().ca.cert], ['another CA', foreign, join(otherDir, 'ca.pem')]] as const) {
      const material = new TlsMaterial({ certFile: files.cert, keyFile: files.key, caFile }, () => {});
      const received: unknown[] = [];
      const rogue = await PeerTransport.start({
        memberId: 2,
        clusterId,
        listen: { host: '127.0.0.1', port: 0 },
        peers: new Map([[1, { host: '127.0.0.1', port: peerPort }]]),
        onMessages: (batch) => received.push(...batch),
        // It trusts anyone: the point is what the cell does.
        tls: { context: () => material.context(), material: () => material.material(), onReload: () => {}, identityOf: () => peerIdentity('cell-1', 'n1') },
      });
      // A vote request of a far higher term: taken, it would depose the leader.
      rogue.send([{ type: 'vote', from: 2, to: 1, term: termBefore + 100, lastIndex: 1_000_000, lastTerm: termBefore + 99, transfer: true }]);
      await sleep(1500);
      await rogue.close();
      assert.deepEqual(received, [], `${label}: the cell sent it nothing`);
    }
    const refusedAfter = await metric('n1', 'baton_peer_connections_refused_total');
    assert.ok(refusedAfter >= refusedBefore + 2, `refusals counted: ${refusedBefore} -> ${refusedAfter}`);
    const log = cell.cell.tail('n1', 400);
    assert.match(log, /peer connection refused .*not baton:\/\/cell-1\/n2/, 'the impostor is logged with why');
    assert.match(log, /peer TLS handshake refused/, 'the foreign certificate is logged');
    const after = await rootRequest('n2', '/v1/cluster/status');
    assert.equal(after.json.leader, leaderBefore, 'the leader did not change');
    assert.equal(after.json.term, termBefore, 'no term was taken from the rogue');
  } finally {
    rmSync(otherDir, { recursive: true, force: true });
  }
});

test('a membership change sent to a follower is passed to the leader over HTTPS, with the member presenting its certificate', async () => {
  const status = (await rootRequest('n1', '/v1/cluster/status')).json as { leader: number; members: { id: number; name: string }[] };
  const follower = status.members.find((m) => m.id !== status.leader)?.name as string;
  const added = await rootRequest(follower, '/v1/cluster/members', 'POST',
    JSON.stringify({ name: 'spare9', peerUrl: 'https://127.0.0.1:1', clientUrl: 'https://127.0.0.1:2' }));
  assert.equal(added.status < 300, true, JSON.stringify(added.json));
  const id = (added.json as { member: { id: number } }).member.id;
  const removed = await rootRequest(follower, `/v1/cluster/members/${id}`, 'DELETE');
  assert.equal(removed.status < 300, true, JSON.stringify(removed.json));
});

test("Baton's own client and CLI over TLS: HTTPS calls and the wss:// stream (locks, watches)", async () => {
  const ca = readFileSync(tls().ca.cert, 'utf8');
  const client = new BatonClient({ endpoints: cell.cell.clientUrls(), tls: { ca, cert: readFileSync(tls().root.cert, 'utf8'), key: readFileSync(tls().root.key, 'utf8') } });
  try {
    await client.put('/secure/client', 'yes');
    assert.equal((await client.getValue('/secure/client'))?.value, 'yes');
    const session = await client.session({ ttlSeconds: 5 });
    const held = await client.locks(session).acquire('secure-job', { waitMs: 5_000 });
    assert.ok(held.token > 0);
    await held.release();
  } finally {
    await client.close();
  }
  const flags = ['--endpoints', cell.cell.clientUrls().join(','), '--cacert', tls().ca.cert, '--cert', tls().root.cert, '--key', tls().root.key];
  const put = await baton(['put', '/secure/cli', 'from-cli', ...flags]);
  assert.equal(put.code, 0, put.stderr);
  const get = await baton(['get', '/secure/cli', ...flags]);
  assert.equal(get.code, 0, get.stderr);
  assert.match(get.stdout, /from-cli/);
  const lock = await baton(['lock', 'secure-cli', ...flags, '--', process.execPath, '-e', 'process.stdout.write(process.env.BATON_FENCING_TOKEN)']);
  assert.equal(lock.code, 0, lock.stderr);
  assert.ok(Number(lock.stdout) > 0, lock.stdout);
  const without = await baton(['get', '/secure/cli', '--endpoints', cell.cell.clientUrls().join(','), '--cacert', tls().ca.cert]);
  assert.notEqual(without.code, 0, 'no client certificate: refused');
});

test('certificates rotate without a restart: after SIGHUP new connections get the new certificate', async () => {
  const port = Number(new URL(cell.cell.clientUrl('n2')).port);
  const serial = (): Promise<string> => new Promise((resolve, reject) => {
    const socket = connectTls({ host: '127.0.0.1', port, ca: [], rejectUnauthorized: false, cert: undefined }, () => {
      resolve(socket.getPeerCertificate().serialNumber);
      socket.destroy();
    });
    socket.on('error', reject);
  });
  const before = await serial();
  tls().reissueMember('n2');
  cell.cell.signal('n2', 'SIGHUP');
  let after = before;
  for (let i = 0; i < 50 && after === before; i++) {
    await sleep(100);
    after = await serial().catch(() => before);
  }
  assert.notEqual(after, before, 'the listener serves the new certificate');
  assert.match(cell.cell.tail('n2', 200), /tls: reloaded/);
  const read = await rootRequest('n2', '/v1/kv/secure/a');
  assert.equal(read.status, 200, 'and still serves');
});

test('a TLS cell named other than cell-1: its members\' certificates name their cell, so the peers admit each other and writes replicate', async () => {
  const payments = await startTestCell({ tls: true, extraArgs: ['--cell', 'payments'] });
  try {
    const material = payments.cell.tls;
    assert.ok(material !== null);
    const put = await httpsRequest(`${payments.cell.clientUrl('n1')}/v1/kv/pay/a`, { ca: material.ca.cert, client: material.root, method: 'PUT', body: 'p' });
    assert.equal(put.status, 201, put.body);
    const read = await httpsRequest(`${payments.cell.clientUrl('n3')}/v1/kv/pay/a?consistency=linearizable`, { ca: material.ca.cert, client: material.root });
    assert.equal(read.status, 200, read.body);
    assert.equal(JSON.parse(read.body).kvs[0].value, 'p');
  } finally {
    await payments.close();
  }
});
