// Tenants over HTTP on a real 3-process cell (docs/api/tenants.md, issue #28): a tenant created
// through /v1/tenants is replicated through the log; its key quota holds exactly at the limit and
// refuses one over with 429 quota_exceeded naming tenant, quota, limit and use (only that tenant);
// concurrent writers racing for the last keys never pass the limit; a limit lowered below use keeps
// the data, refuses growth and lets deletes through; a stale version is 412; bad input is 400.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { http, startTestCell, type TestCell } from './harness.js';
import { baton } from './cli-run.js';

let cell: TestCell;
const url = (i = 0): string => cell.cell.clientUrls()[i] as string;
const putJson = (body: unknown): RequestInit => ({ method: 'PUT', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

before(async () => {
  cell = await startTestCell({ size: 3 });
}, { timeout: 120_000 });

after(async () => {
  await cell?.cell.stopAll();
});

test('key quota: at the limit applied, one over 429 for that tenant only, racing writers never over, lowered limit keeps data', { timeout: 90_000 }, async () => {
  const created = await http(`${url()}/v1/tenants/acme`, putJson({ prefixes: ['/acme/'], limits: { maxKeys: 3 } }));
  assert.equal(created.status, 200, JSON.stringify(created.body));
  assert.equal(created.body.version, 1);
  assert.equal((await http(`${url()}/v1/tenants/beta`, putJson({ prefixes: ['/beta/'] }))).status, 200);

  for (const k of ['a', 'b', 'c']) assert.equal((await http(`${url(1)}/v1/kv/acme/${k}`, { method: 'PUT', body: 'v' })).status, 201);
  const over = await http(`${url(2)}/v1/kv/acme/d`, { method: 'PUT', body: 'v' });
  assert.equal(over.status, 429, JSON.stringify(over.body));
  assert.equal(over.body.error.code, 'quota_exceeded');
  assert.deepEqual([over.body.error.tenant, over.body.error.quota, over.body.error.limit, over.body.error.used], ['acme', 'keys', 3, 3]);
  assert.ok(Number(over.headers.get('retry-after')) >= 1, 'a Retry-After');
  assert.equal((await http(`${url()}/v1/kv/acme/a`, { method: 'PUT', body: 'overwrite' })).status, 200, 'an overwrite adds no key');
  assert.equal((await http(`${url()}/v1/kv/beta/x`, { method: 'PUT', body: 'v' })).status, 201, 'another tenant keeps writing');

  // Room for two more keys; twelve writers race for them from all three members.
  const raised = await http(`${url()}/v1/tenants/acme`, putJson({ prefixes: ['/acme/'], limits: { maxKeys: 5 } }));
  assert.equal(raised.status, 200, JSON.stringify(raised.body));
  const racers = await Promise.all(Array.from({ length: 12 }, (_, i) => http(`${url(i % 3)}/v1/kv/acme/race-${i}`, { method: 'PUT', body: 'v' })));
  assert.equal(racers.filter((r) => r.status === 201).length, 2, racers.map((r) => r.status).join(','));
  for (const refused of racers.filter((r) => r.status !== 201)) {
    assert.equal(refused.status, 429);
    assert.deepEqual([refused.body.error.tenant, refused.body.error.quota, refused.body.error.limit], ['acme', 'keys', 5]);
  }
  const listed = await http(`${url(1)}/v1/tenants`);
  assert.equal(listed.status, 200);
  const acme = listed.body.tenants.find((t: { name: string }) => t.name === 'acme');
  assert.deepEqual(acme.usage, { keys: 5, bytes: 13, leases: 0 });
  assert.equal(acme.limits.maxKeys, 5);

  // Lowered below use: the data stays, growth is refused, deletes work.
  assert.equal((await http(`${url()}/v1/tenants/acme`, putJson({ prefixes: ['/acme/'], limits: { maxKeys: 1 } }))).status, 200);
  assert.equal((await http(`${url()}/v1/kv/acme/b`)).status, 200, 'data kept');
  assert.equal((await http(`${url()}/v1/kv/acme/e`, { method: 'PUT', body: 'v' })).status, 429);
  assert.equal((await http(`${url()}/v1/kv/acme/b`, { method: 'DELETE' })).status, 200, 'deletes always allowed');

  // Removed: its keys count to no tenant and writes are free again.
  assert.equal((await http(`${url()}/v1/tenants/acme`, { method: 'DELETE' })).status, 200);
  assert.equal((await http(`${url()}/v1/kv/acme/e`, { method: 'PUT', body: 'v' })).status, 201);
  const after = (await http(`${url()}/v1/tenants`)).body.tenants.map((t: { name: string }) => t.name);
  assert.deepEqual(after, ['beta']);
});

test('bad tenant input is 400 and changes nothing; unknown tenant delete is refused', { timeout: 30_000 }, async () => {
  const before = (await http(`${url()}/v1/tenants`)).body.version;
  for (const body of [{ prefixes: '/x/' }, { prefixes: ['/x/'], limits: { maxKeys: -1 } }, { prefixes: ['/x/'], limits: { maxCats: 1 } }, { prefixes: ['/beta/'] }]) {
    const answer = await http(`${url()}/v1/tenants/bad`, putJson(body));
    assert.equal(answer.status, 400, `${JSON.stringify(body)}: ${JSON.stringify(answer.body)}`);
  }
  assert.equal((await http(`${url()}/v1/tenants/nobody`, { method: 'DELETE' })).status, 400);
  assert.equal((await http(`${url()}/v1/tenants`)).body.version, before, 'nothing changed');
});

test('baton tenant create|set|show|list|delete: limits and current use; bad flags refused', { timeout: 60_000 }, async () => {
  const at = ['--endpoints', url()];
  const created = await baton(['tenant', 'create', 'gamma', '--prefix', '/gamma/', '--prefix', '/g2/', '--max-keys', '2', '--writes-per-second', '50', ...at]);
  assert.equal(created.code, 0, created.stderr);
  assert.match(created.stdout, /tenant gamma created/);
  assert.notEqual((await baton(['tenant', 'create', 'gamma', '--prefix', '/gamma/', ...at])).code, 0, 'create refuses an existing name');
  assert.equal((await http(`${url()}/v1/kv/g2/a`, { method: 'PUT', body: 'hello' })).status, 201);
  const shown = await baton(['tenant', 'show', 'gamma', ...at]);
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, /prefixes \/gamma\/,\/g2\//);
  assert.match(shown.stdout, /keys\s+\|\s+1\s+\|\s+2\s/);
  assert.match(shown.stdout, /bytes\s+\|\s+5\s+\|\s+unlimited/);
  assert.match(shown.stdout, /writes\/s \(this node\)\s+\|\s+\d+\s+\|\s+50\s/, 'the rate used on the member that answered');
  const set = await baton(['tenant', 'set', 'gamma', '--max-keys', 'none', '--max-bytes', '5', ...at]);
  assert.equal(set.code, 0, set.stderr);
  const json = JSON.parse((await baton(['tenant', 'show', 'gamma', '-w', 'json', ...at])).stdout);
  assert.deepEqual([json.limits.maxKeys, json.limits.maxBytes, json.limits.writesPerSecond, json.prefixes], [null, 5, 50, ['/gamma/', '/g2/']], 'set keeps what it was not given');
  assert.equal((await http(`${url()}/v1/kv/gamma/b`, { method: 'PUT', body: 'x' })).status, 429, 'the lowered byte limit holds');
  assert.notEqual((await baton(['tenant', 'set', 'gamma', '--max-keys', '-3', ...at])).code, 0);
  assert.notEqual((await baton(['tenant', 'set', 'nobody', '--max-keys', '3', ...at])).code, 0);
  assert.match((await baton(['tenant', 'list', ...at])).stdout, /gamma/);
  assert.equal((await baton(['tenant', 'delete', 'gamma', ...at])).code, 0);
  assert.doesNotMatch((await baton(['tenant', 'list', ...at])).stdout, /gamma/);
});
