// The web console behind the API's own checks (docs/console.md, "Security"), in headless chromium
// against a real 3-process cell with TLS on every listener and authorization on: an anonymous
// visitor gets the page's files but every datum is refused (403 shown in each view, no key or
// value in the page); a user who signs in through the page's form reads exactly what its role
// allows (its prefix, live: a key written there appears within 1 s) and is refused the rest.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { httpsRequest, type CellTls } from '../../src/node/testing/cell-tls.js';
import { sleep, startTestCell, type TestCell } from './harness.js';
import { findChromium, HeadlessBrowser, noChromiumReason } from './headless-browser.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const artifacts = join(root, 'test-artifacts', 'console');
const chromium = findChromium();

let cell: TestCell;
let tls: CellTls;

/** As the root certificate (or anonymously, with `anonymous`). */
function call(name: string, method: string, path: string, body?: string, headers: Record<string, string> = {}, anonymous = false) {
  return httpsRequest(`${cell.cell.clientUrl(name)}${path}`, {
    ca: tls.ca.cert, method, headers, timeoutMs: 10_000,
    ...(anonymous ? {} : { client: tls.root }),
    ...(body === undefined ? {} : { body }),
  });
}

before(async () => {
  if (chromium === null) return;
  cell = await startTestCell({ tls: true, clientCertAuth: false, grpc: true });
  tls = cell.cell.tls as CellTls;
  for (const [key, value] of [['/app/x', 'visible-app-value'], ['/secret/y', 'hidden-secret-value']]) {
    // Until the cell has its first leader: 503, then the write.
    for (let attempt = 0; ; attempt++) {
      const put = await call('n1', 'PUT', `/v1/kv${key}`, value, { 'request-id': `console-${key}` });
      if (put.status === 200 || put.status === 201) break;
      assert.ok(put.status === 503 && attempt < 100, put.body);
      await sleep(100);
    }
  }
  // Users live in etcd's Auth API: its JSON gateway on the gRPC port, as root.
  const added = await httpsRequest(`https://${cell.cell.grpcEndpoint('n1')}/v3/auth/user/add`, {
    ca: tls.ca.cert, client: tls.root, method: 'POST', body: JSON.stringify({ name: 'alice', password: 'alice-password' }), timeoutMs: 10_000,
  });
  assert.equal(added.status, 200, added.body);
  const current = JSON.parse((await call('n1', 'GET', '/v1/auth/policy')).body) as { version: number };
  const policy = { enabled: true, roles: { app: [{ prefix: '/app/', ops: ['read', 'watch'] }] }, bindings: { alice: ['app'] } };
  const set = await call('n1', 'PUT', '/v1/auth/policy', JSON.stringify(policy), { 'content-type': 'application/json', 'if-version': String(current.version) });
  assert.equal(set.status, 200, set.body);
  // Every member enforces it before the browser comes.
  for (const name of cell.names) {
    for (let attempt = 0; (await call(name, 'GET', '/v1/kv/app/x', undefined, {}, true)).status !== 403; attempt++) {
      assert.ok(attempt < 50, `${name} still serves anonymous reads`);
      await sleep(100);
    }
  }
});
after(async () => {
  await cell?.cell.stopAll();
});

test('anonymous: the page loads but every view shows the refusal; a signed-in user sees its prefix, live, and nothing else', { timeout: 60_000 }, async (t) => {
  if (chromium === null) {
    t.skip(noChromiumReason());
    return;
  }
  mkdirSync(artifacts, { recursive: true });
  // The cell's CA is a throwaway one the browser does not know.
  const browser = await HeadlessBrowser.launch(chromium, ['--ignore-certificate-errors']);
  try {
    const url = `${cell.cell.clientUrl('n2')}/ui/`;
    assert.match(url, /^https:/);
    await browser.open(url);
    const members = await browser.waitFor<string>(`document.querySelector('#members .error')?.textContent ?? ''`, 10_000);
    assert.match(members.value, /^403 permission_denied/);
    const keys = await browser.waitFor<string>(`document.querySelector('#keys-list .error')?.textContent ?? ''`, 10_000);
    assert.match(keys.value, /^403 permission_denied/);
    // Quota per tenant is admin-only: refused in its place too.
    const tenants = await browser.waitFor<string>(`document.querySelector('#tenants .error')?.textContent ?? ''`, 10_000);
    assert.match(tenants.value, /^403 permission_denied/);
    const feed = await browser.waitFor<string>(`document.getElementById('feed-keys').textContent.includes('403') ? document.getElementById('feed-keys').textContent : ''`, 10_000);
    assert.match(feed.value, /permission_denied/);
    let text = await browser.evaluate<string>('document.body.textContent');
    assert.doesNotMatch(text, /visible-app-value|hidden-secret-value|\/app\/x|\/secret\/y/);
    writeFileSync(join(artifacts, 'console-anonymous.png'), await browser.screenshot());

    // Sign in through the page's own form: the token goes with every later call.
    await browser.evaluate(`(() => {
      document.getElementById('signin-name').value = 'alice';
      document.getElementById('signin-password').value = 'alice-password';
      document.getElementById('signin').requestSubmit();
    })()`);
    await browser.waitFor<boolean>(`sessionStorage.getItem('baton.console.token') !== null && document.querySelectorAll('#members tr[data-member]').length === 3`, 15_000);
    // The whole key space stays refused to alice; her prefix is hers.
    const refused = await browser.waitFor<string>(`document.querySelector('#keys-list .error')?.textContent ?? ''`, 10_000);
    assert.match(refused.value, /^403 permission_denied/);
    await browser.evaluate(`(() => {
      document.getElementById('keys-prefix').value = '/app/';
      document.getElementById('keys-form').requestSubmit();
    })()`);
    await browser.waitFor<boolean>(`document.querySelector('tr[data-key="/app/x"]')?.textContent.includes('visible-app-value') === true`, 10_000);
    await browser.waitFor<boolean>(`document.getElementById('feed-keys').textContent === 'live'`, 10_000);
    const put = await call('n3', 'PUT', '/v1/kv/app/z', 'written-while-watching');
    assert.ok(put.status === 200 || put.status === 201, put.body);
    const putAt = performance.now();
    await browser.waitFor<boolean>(`document.querySelector('tr[data-key="/app/z"]')?.textContent.includes('written-while-watching') === true`, 3_000, 10);
    const appearedMs = performance.now() - putAt;
    t.diagnostic(`alice's key appeared ${appearedMs.toFixed(0)} ms after the PUT answered`);
    assert.ok(appearedMs < 1000, `${appearedMs} ms`);
    text = await browser.evaluate<string>('document.body.textContent');
    assert.doesNotMatch(text, /hidden-secret-value|\/secret\/y/);
    // alice is no admin: the tenant table stays refused to her, shown in place.
    assert.match(await browser.evaluate<string>(`document.querySelector('#tenants .error')?.textContent ?? ''`), /^403 permission_denied/);
    writeFileSync(join(artifacts, 'console-signed-in.png'), await browser.screenshot());
    // Refusals are logged by the browser as failed loads; nothing else went wrong in the page.
    const unexpected = browser.problems.filter((problem) => problem.kind !== 'log' || !/status of 403/.test(problem.text));
    assert.deepEqual(unexpected, []);
  } finally {
    await browser.close();
  }
});
