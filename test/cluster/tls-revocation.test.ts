// Revoked certificates (issue 25: "a revoked client certificate ... loses access within 1 s on
// every member"). A 3-process cell with TLS everywhere reads one revocation list
// (--client-crl-file, --peer-crl-file). A client holding open an HTTPS keep-alive connection, an
// SSE watch and an HTTP/2 session on the etcd facade is revoked: each open connection is cut, and
// every member refuses new ones, within 1 s; the root principal keeps working. Then a member's own
// certificate is revoked: the others cut it off, and the cell goes on writing without it.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect as connectH2 } from 'node:http2';
import { Agent, request } from 'node:https';
import { readFileSync } from 'node:fs';
import { httpsRequest } from '../../src/node/testing/cell-tls.js';
import { issueClientCert, revokeCert, writeCrl, type CertFiles } from '../../src/security/certs.js';
import { sleep, startTestCell, type TestCell, within } from './harness.js';

let cell: TestCell;
let crlFile = '';

before(async () => {
  // Every member of a TLS test cell reads the CA's revocation list (CellTls.flags); the first revokes nothing.
  cell = await startTestCell({ tls: true, grpc: true });
  crlFile = tlsOf().crl;
});

after(async () => {
  await cell?.close();
});

function tlsOf(): NonNullable<TestCell['cell']['tls']> {
  const tls = cell.cell.tls;
  assert.ok(tls !== null);
  return tls;
}

function as(client: CertFiles, name: string, path: string, method = 'GET', body?: string) {
  return httpsRequest(`${cell.cell.clientUrl(name)}${path}`, { ca: tlsOf().ca.cert, client, method, timeoutMs: 3000, ...(body === undefined ? {} : { body }) });
}

/** Resolves with the time a connection kept by the test closed, or Infinity after 5 s. */
function closedAt(subscribe: (onClose: () => void) => void): Promise<number> {
  return within5s(new Promise((resolve) => subscribe(() => resolve(performance.now()))));
}

function within5s(closed: Promise<number>): Promise<number> {
  return within(closed, 5000, () => Number.POSITIVE_INFINITY);
}

test('a revoked client certificate loses its open connections and is refused by every member within 1 s', async () => {
  const tls = tlsOf();
  const alice = issueClientCert(tls.ca, 'alice');
  const names = cell.names;
  for (const name of names) assert.equal((await as(alice, name, `/v1/kv/rev/${name}`, 'PUT', 'v')).status, 201);

  // Three kinds of open connection, each on another member.
  const agent = new Agent({ keepAlive: true, ca: readFileSync(tls.ca.cert), cert: readFileSync(alice.cert), key: readFileSync(alice.key) });
  const keptSocket = await new Promise<import('node:net').Socket>((resolve, reject) => {
    const req = request(`${cell.cell.clientUrl(names[0]!)}/v1/kv/rev/n1`, { agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(req.socket as import('node:net').Socket));
    });
    req.on('error', reject);
    req.end();
  });
  const keepAliveClosed = closedAt((done) => keptSocket.once('close', done));

  const watchEvents: string[] = [];
  const watchClosed = within5s(new Promise<number>((resolve, reject) => {
    const req = request(`${cell.cell.clientUrl(names[1]!)}/v1/watch?key=/rev/&prefix=true`, {
      ca: readFileSync(tls.ca.cert), cert: readFileSync(alice.cert), key: readFileSync(alice.key),
    }, (res) => {
      assert.equal(res.statusCode, 200);
      res.on('data', (chunk: Buffer) => watchEvents.push(chunk.toString()));
      res.on('close', () => resolve(performance.now()));
      res.on('error', () => resolve(performance.now()));
    });
    req.on('error', (error) => (watchEvents.length > 0 ? resolve(performance.now()) : reject(error)));
    req.end();
  }));
  const h2 = connectH2(`https://${cell.cell.grpcEndpoint(names[2]!)}`, {
    ca: readFileSync(tls.ca.cert), cert: readFileSync(alice.cert), key: readFileSync(alice.key),
  });
  await new Promise<void>((resolve, reject) => {
    h2.once('connect', () => resolve());
    h2.once('error', reject);
  });
  h2.on('error', () => {});
  const h2Closed = closedAt((done) => h2.once('close', done));
  // The watch is live: a put reaches it.
  assert.equal((await as(tls.root, names[0]!, '/v1/kv/rev/live', 'PUT', 'x')).status, 201);
  for (let i = 0; i < 50 && !watchEvents.join('').includes('live'); i++) await sleep(20);
  assert.ok(watchEvents.join('').includes('L3Jldi9saXZl') || watchEvents.join('').includes('/rev/live'), `the watch saw the put: ${watchEvents.join('')}`);

  const revokedAt = performance.now();
  revokeCert(tls.ca, alice.cert);
  writeCrl(tls.ca, crlFile);

  const [keepAliveMs, watchMs, h2Ms] = (await Promise.all([keepAliveClosed, watchClosed, h2Closed])).map((at) => at - revokedAt);
  assert.ok(keepAliveMs! < 1000, `the keep-alive connection was cut after ${keepAliveMs} ms`);
  assert.ok(watchMs! < 1000, `the watch was cut after ${watchMs} ms`);
  assert.ok(h2Ms! < 1000, `the facade's HTTP/2 session was cut after ${h2Ms} ms`);

  // New connections: refused on every member (the handshake's connection is destroyed unread).
  for (const name of names) {
    await assert.rejects(as(alice, name, '/v1/kv/rev/n1'), `${name} served a revoked certificate`);
    const root = await as(tls.root, name, '/v1/kv/rev/n1');
    assert.equal(root.status, 200, `root on ${name}: ${root.body}`);
  }
  assert.ok(performance.now() - revokedAt < 3000);
  agent.destroy();
  h2.destroy();
});

test("a revoked member certificate is cut off by the others, and the cell goes on without it", async () => {
  const tls = tlsOf();
  const status = async (name: string) => JSON.parse((await as(tls.root, name, '/v1/cluster/status')).body);
  // A follower, so the cell keeps its leader.
  const leaderId = (await status('n1')).leader as number;
  const members = (await status('n1')).members as { id: number; name: string }[];
  const follower = members.find((member) => member.id !== leaderId)!.name;
  const others = cell.names.filter((name) => name !== follower);

  revokeCert(tls.ca, tls.member(follower).cert);
  writeCrl(tls.ca, crlFile);

  // The revoked member hears nothing more: it falls out of contact on every other member's view.
  let healthy = true;
  for (let i = 0; i < 100 && healthy; i++) {
    await sleep(100);
    const view = (await status(others[0]!)).members as { name: string; healthy: boolean }[];
    healthy = view.find((member) => member.name === follower)?.healthy !== false;
  }
  assert.equal(healthy, false, `${follower} still counted healthy after its certificate was revoked`);
  // The remaining two are a quorum: writes go on and the revoked member does not get them.
  const put = await as(tls.root, others[0]!, '/v1/kv/rev/after', 'PUT', 'quorum');
  assert.equal(put.status, 201, put.body);
  await sleep(500);
  const stale = await as(tls.root, follower, '/v1/kv/rev/after?consistency=serializable');
  assert.equal(stale.status, 404, `the revoked member received the write: ${stale.body}`);
});
