// The HTTP API of api.md against a real 3-process cell: status codes, headers, error bodies and
// limits as a curl user sees them, including Request-ID retries and reads below compaction.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { http, startTestCell, type TestCell } from './harness.js';

let cell: TestCell;
let url: (name?: string) => string;

before(async () => {
  cell = await startTestCell();
  url = (name = 'n2') => cell.cell.clientUrl(name);
});
after(async () => {
  await cell.close();
});

test('put, get and the headers every answer carries', async () => {
  const put = await http(`${url()}/v1/kv/locks/report-42`, { method: 'PUT', body: 'worker-17', headers: { 'If-Version': '0' } });
  assert.equal(put.status, 201);
  assert.equal(put.body.created, true);
  assert.equal(put.body.version, 1);
  assert.equal(put.body.fencingToken, put.body.revision);
  assert.equal(put.headers.get('baton-revision'), String(put.body.revision));
  assert.equal(put.headers.get('baton-cell'), 'cell-1');
  const get = await http(`${url('n3')}/v1/kv/locks/report-42`);
  assert.equal(get.status, 200);
  assert.equal(get.body.consistency, 'linearizable');
  assert.deepEqual(get.body.kvs[0], {
    key: '/locks/report-42', value: 'worker-17', version: 1,
    createRevision: put.body.revision, modRevision: put.body.revision, lease: 0,
  });
  const again = await http(`${url()}/v1/kv/locks/report-42`, { method: 'PUT', body: 'worker-32', headers: { 'If-Version': '0' } });
  assert.equal(again.status, 412);
  assert.equal(again.body.error.code, 'precondition_failed');
  const missing = await http(`${url()}/v1/kv/nothing/here`);
  assert.equal(missing.status, 404);
  assert.equal(missing.body.error.code, 'key_not_found');
});

test('If-Revision, delete and prefix reads with limit, keysOnly and countOnly', async () => {
  const a = await http(`${url()}/v1/kv/svc/a`, { method: 'PUT', body: '1' });
  await http(`${url()}/v1/kv/svc/b`, { method: 'PUT', body: '2' });
  await http(`${url()}/v1/kv/svc/c`, { method: 'PUT', body: '3' });
  const cas = await http(`${url()}/v1/kv/svc/a`, { method: 'PUT', body: '1b', headers: { 'If-Revision': String(a.body.revision) } });
  assert.equal(cas.status, 200);
  assert.equal(cas.body.version, 2);
  assert.equal(cas.body.fencingToken, a.body.revision, 'the token changes only when the key is created anew');
  const stale = await http(`${url()}/v1/kv/svc/a`, { method: 'PUT', body: 'x', headers: { 'If-Revision': String(a.body.revision) } });
  assert.equal(stale.status, 412);
  const limited = await http(`${url()}/v1/kv/svc/?prefix=true&limit=2&keysOnly=true`);
  assert.equal(limited.body.count, 3);
  assert.equal(limited.body.more, true);
  assert.deepEqual(limited.body.kvs.map((kv: { key: string; value: string }) => [kv.key, kv.value]), [['/svc/a', ''], ['/svc/b', '']]);
  const counted = await http(`${url()}/v1/kv/svc/?prefix=true&countOnly=true`);
  assert.equal(counted.body.count, 3);
  assert.deepEqual(counted.body.kvs, []);
  const serial = await http(`${url('n1')}/v1/kv/svc/?prefix=true&consistency=serializable&minRevision=${cas.body.revision}`);
  assert.equal(serial.body.consistency, 'serializable');
  const deleted = await http(`${url()}/v1/kv/svc/?prefix=true`, { method: 'DELETE' });
  assert.equal(deleted.body.deleted, 3);
});

test('transactions are one revision and follow api.md shapes', async () => {
  const body = {
    compare: [{ key: '/locks/t', target: 'version', op: '==', value: 0 }],
    success: [{ put: { key: '/locks/t', value: 'worker-17' } }, { put: { key: '/locks/t-meta', value: 'm' } }],
    failure: [{ get: { key: '/locks/t' } }],
  };
  const first = await http(`${url()}/v1/txn`, { method: 'POST', body: JSON.stringify(body) });
  assert.equal(first.status, 200);
  assert.equal(first.body.succeeded, true);
  assert.equal(first.body.results.length, 2);
  assert.equal(first.body.results[0].revision, first.body.revision);
  assert.equal(first.body.results[1].revision, first.body.revision);
  const second = await http(`${url('n1')}/v1/txn`, { method: 'POST', body: JSON.stringify(body) });
  assert.equal(second.body.succeeded, false);
  assert.equal(second.body.results[0].kvs[0].value, 'worker-17');
  assert.equal(second.body.revision, first.body.revision, 'a read-only outcome does not advance the revision');
});

test('a retried mutation with the same Request-ID applies once and returns the original outcome', async () => {
  const headers = { 'Request-ID': 'retry-test-1' };
  const first = await http(`${url()}/v1/kv/counter`, { method: 'PUT', body: 'a', headers });
  const retry = await http(`${url('n3')}/v1/kv/counter`, { method: 'PUT', body: 'a', headers });
  assert.equal(retry.status, first.status);
  assert.deepEqual(retry.body, first.body);
  const get = await http(`${url()}/v1/kv/counter`);
  assert.equal(get.body.kvs[0].version, 1);
});

test('bad input is a 400 naming the problem; over-limit input is a 413 naming the limit', async () => {
  const badQuery = await http(`${url()}/v1/kv/a?consistency=sometimes`);
  assert.equal(badQuery.status, 400);
  assert.match(badQuery.body.error.message, /consistency/);
  const unknown = await http(`${url()}/v1/kv/a?prefx=true`);
  assert.equal(unknown.status, 400);
  const badHeader = await http(`${url()}/v1/kv/a`, { method: 'PUT', body: 'x', headers: { 'If-Version': 'seven' } });
  assert.equal(badHeader.status, 400);
  const badJson = await http(`${url()}/v1/txn`, { method: 'POST', body: '{"compare": [' });
  assert.equal(badJson.status, 400);
  const badTarget = await http(`${url()}/v1/txn`, { method: 'POST', body: JSON.stringify({ compare: [{ key: '/a', target: 'color', op: '==', value: 1 }] }) });
  assert.equal(badTarget.status, 400);
  const big = await http(`${url()}/v1/kv/big`, { method: 'PUT', body: Buffer.alloc(1024 * 1024 + 1) });
  assert.equal(big.status, 413);
  assert.equal(big.body.error.limit, 1024 * 1024);
  const longKey = await http(`${url()}/v1/kv/${'k'.repeat(5000)}`, { method: 'PUT', body: 'x' });
  assert.equal(longKey.status, 413);
  const ops = Array.from({ length: 129 }, (_, i) => ({ put: { key: `/many/${i}`, value: 'v' } }));
  const tooMany = await http(`${url()}/v1/txn`, { method: 'POST', body: JSON.stringify({ success: ops }) });
  assert.equal(tooMany.status, 413);
  assert.equal(tooMany.body.error.limit, 128);
});

test('reads below the compaction point are 410 with the compact revision', async () => {
  const first = await http(`${url()}/v1/kv/hist`, { method: 'PUT', body: 'one' });
  const second = await http(`${url()}/v1/kv/hist`, { method: 'PUT', body: 'two' });
  const past = await http(`${url()}/v1/kv/hist?revision=${first.body.revision}`);
  assert.equal(past.body.kvs[0].value, 'one');
  const compact = await http(`${url()}/v1/maintenance/compact`, { method: 'POST', body: JSON.stringify({ revision: second.body.revision }) });
  assert.equal(compact.status, 200);
  const gone = await http(`${url('n1')}/v1/kv/hist?revision=${first.body.revision}&consistency=linearizable`);
  assert.equal(gone.status, 410);
  assert.equal(gone.body.error.code, 'compacted');
  assert.equal(gone.body.error.compactRevision, second.body.revision);
});

test('status, health, readiness and metrics', async () => {
  const status = await http(`${url()}/v1/cluster/status`);
  assert.equal(status.body.members.length, 3);
  assert.ok(status.body.leader > 0);
  assert.equal((await http(`${url()}/healthz`)).status, 200);
  assert.equal((await http(`${url()}/readyz`)).status, 200);
  const metrics = await http(`${url()}/metrics`);
  assert.match(metrics.body, /baton_raft_term \d+/);
  assert.match(metrics.body, /baton_proposal_seconds_count \d+/);
  assert.match(metrics.body, /etcd_disk_wal_fsync_duration_seconds_count \d+/);
  assert.match(metrics.body, /baton_leases \d+/);
});
