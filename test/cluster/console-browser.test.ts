// The web console (docs/console.md) on a real 3-process cell. Without a browser: every node
// serves /ui/ with its content types, caching, CSP and no file outside the console's folder
// (raw request targets, so nothing normalizes them first). With Debian's chromium driven headless
// over the DevTools protocol: the page loads without a console error, a key written through the
// API appears in the page within 1 s, a held lock shows its holder and fencing token, a lease's
// TTL counts down, an election shows its leader, a key's history lists its versions, and a
// refused token is shown as the API's error; a tenant's use beside its limits follows writes under
// its prefix. Screenshots go to test-artifacts/console/.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findLeader, http, startTestCell, type TestCell } from './harness.js';
import { findChromium, HeadlessBrowser, noChromiumReason } from './headless-browser.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const artifacts = join(root, 'test-artifacts', 'console');
const chromium = findChromium();

let cell: TestCell;
let urls: string[];

before(async () => {
  cell = await startTestCell();
  urls = cell.cell.clientUrls();
  await findLeader(cell);
});
after(async () => {
  await cell?.cell.stopAll();
});

/** One request with its target sent byte for byte as given; the status line and the body. */
function rawGet(url: string, target: string): Promise<{ status: number; text: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      socket.write(`GET ${target} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nConnection: close\r\n\r\n`);
    });
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('end', () => resolve({ status: Number(/^HTTP\/1\.1 (\d+)/.exec(text)?.[1] ?? 0), text }));
    socket.on('error', reject);
    socket.setTimeout(10_000, () => socket.destroy(new Error(`no answer to ${target}`)));
  });
}

test('every node serves the console with its content types, caching and CSP', async () => {
  const built = readdirSync(join(root, 'dist', 'ui'));
  assert.ok(built.includes('index.html') && built.includes('app.js') && built.includes('console.css'), built.join(' '));
  for (const url of urls) {
    const page = await http(`${url}/ui/`);
    assert.equal(page.status, 200);
    assert.equal(page.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.match(String(page.body), /<title>Baton console<\/title>/);
    const csp = page.headers.get('content-security-policy') ?? '';
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'self'/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.equal(page.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(page.headers.get('cache-control'), 'no-cache');
    const etag = page.headers.get('etag');
    assert.ok(etag !== null && etag.length > 2);
    const again = await fetch(`${url}/ui/index.html`, { headers: { 'if-none-match': etag } });
    assert.equal(again.status, 304);
    const script = await http(`${url}/ui/app.js`);
    assert.equal(script.status, 200);
    assert.equal(script.headers.get('content-type'), 'text/javascript; charset=utf-8');
    const style = await http(`${url}/ui/console.css`);
    assert.equal(style.headers.get('content-type'), 'text/css; charset=utf-8');
    const bare = await fetch(`${url}/ui`, { redirect: 'manual' });
    assert.equal(bare.status, 308);
    assert.equal(bare.headers.get('location'), '/ui/');
  }
});

test('the leader\'s status names each member\'s replication progress (the console\'s member table); a follower\'s does not', async () => {
  const leader = await findLeader(cell);
  await http(`${cell.cell.clientUrl(leader)}/v1/kv/console/progress`, { method: 'PUT', body: 'x' });
  const status = await http(`${cell.cell.clientUrl(leader)}/v1/cluster/status`);
  assert.equal(status.status, 200);
  const members = status.body.members as { name: string; matchIndex?: number }[];
  assert.equal(members.length, 3);
  for (const member of members) {
    assert.ok(Number.isSafeInteger(member.matchIndex) && (member.matchIndex as number) >= 1, JSON.stringify(member));
    assert.ok((member.matchIndex as number) <= status.body.commitIndex + 1, JSON.stringify(status.body));
  }
  const follower = cell.names.find((name) => name !== leader) as string;
  const followerStatus = await http(`${cell.cell.clientUrl(follower)}/v1/cluster/status`);
  for (const member of followerStatus.body.members as { matchIndex?: number }[]) assert.equal(member.matchIndex, undefined);
});

test('no request target reaches a file outside the console folder', async () => {
  const targets = [
    '/ui/../package.json', '/ui/../../package.json', '/ui/%2e%2e/package.json', '/ui/.%2E/package.json',
    '/ui/..%2fpackage.json', '/ui/..%2f..%2f..%2fpackage.json', '/ui/%2e%2e%2f%2e%2e%2fpackage.json',
    '/ui/..%5c..%5cpackage.json', '/ui/..\\..\\package.json', '/ui//etc/passwd', '/ui/%2fetc%2fpasswd',
    '/ui/../../../../../../etc/passwd', '/ui/app.js%00.html', '/ui/./index.html', '/ui/../src/node/apis.js',
    '/ui/../dist/src/node/apis.js', '/ui/tsconfig.json',
  ];
  for (const target of targets) {
    const answer = await rawGet(urls[0] as string, target);
    assert.notEqual(answer.status, 200, `${target} answered 200`);
    assert.ok(answer.status >= 400 && answer.status < 500, `${target}: ${answer.status}`);
    assert.doesNotMatch(answer.text, /"name": "baton"|root:x:0|startApis/, target);
  }
  // The folder's own files are reachable, so the refusals above are not a console that serves nothing.
  assert.equal((await rawGet(urls[0] as string, '/ui/index.html')).status, 200);
});

test('in headless chromium: no console error; a key appears within 1 s; lock, lease and election shown', { timeout: 60_000 }, async (t) => {
  if (chromium === null) {
    t.skip(noChromiumReason());
    return;
  }
  mkdirSync(artifacts, { recursive: true });
  const started = performance.now();
  const browser = await HeadlessBrowser.launch(chromium);
  try {
    // A follower's console: its feed is served from its own applied state.
    await browser.open(`${urls[1]}/ui/`);
    await browser.waitFor<boolean>(`['feed-keys', 'feed-locks', 'feed-elections'].every((id) => document.getElementById(id).textContent === 'live')`, 10_000);
    await browser.waitFor<boolean>(`document.querySelectorAll('#members tr[data-member]').length === 3`, 10_000);

    // A key written through another member's API appears within 1 s of its answer.
    const written = await http(`${urls[0]}/v1/kv/console/k1`, { method: 'PUT', body: 'first' });
    assert.ok(written.status === 200 || written.status === 201, JSON.stringify(written.body));
    const putAt = performance.now();
    await browser.waitFor<boolean>(`document.querySelector('tr[data-key="/console/k1"]')?.textContent.includes('first') === true`, 3_000, 10);
    const appearedMs = performance.now() - putAt;
    t.diagnostic(`key appeared in the page ${appearedMs.toFixed(0)} ms after the PUT answered`);
    assert.ok(appearedMs < 1000, `the key appeared after ${appearedMs.toFixed(0)} ms`);
    await http(`${urls[2]}/v1/kv/console/k1`, { method: 'PUT', body: 'second' });
    await browser.waitFor<boolean>(`document.querySelector('tr[data-key="/console/k1"]')?.textContent.includes('second') === true`, 1_000, 10);

    // The key's history, newest first.
    await browser.evaluate(`document.querySelector('tr[data-key="/console/k1"] button').click()`);
    const history = await browser.waitFor<string>(`document.querySelector('#key-history table')?.textContent ?? ''`, 5_000);
    assert.ok(history.value.indexOf('second') >= 0 && history.value.indexOf('first') > history.value.indexOf('second'), history.value);

    // A held lock: its holder and fencing token.
    const lease = await http(`${urls[0]}/v1/leases`, { method: 'POST', body: JSON.stringify({ ttl: 30 }) });
    assert.equal(lease.status, 200, JSON.stringify(lease.body));
    const leaseId = lease.body.id as number;
    const acquired = await http(`${urls[0]}/v1/locks/console-lock/acquire`, { method: 'POST', body: JSON.stringify({ lease: leaseId, owner: 'worker-7', waitMs: 0 }) });
    assert.equal(acquired.status, 200, JSON.stringify(acquired.body));
    const token = acquired.body.fencingToken as number;
    const lockRow = await browser.waitFor<string>(`document.querySelector('tr[data-lock="console-lock"]')?.textContent ?? ''`, 3_000);
    assert.match(lockRow.value, /worker-7/);
    assert.equal(await browser.evaluate<string>(`document.querySelector('tr[data-lock="console-lock"] .token').textContent`), String(token));

    // An election's leader and term.
    const campaign = await http(`${urls[0]}/v1/elections/console-election/campaign`, { method: 'POST', body: JSON.stringify({ lease: leaseId, value: 'leader-a', waitMs: 0 }) });
    assert.equal(campaign.status, 200, JSON.stringify(campaign.body));
    const electionRow = await browser.waitFor<string>(`document.querySelector('tr[data-election="console-election"]')?.textContent ?? ''`, 3_000);
    assert.match(electionRow.value, new RegExp(`leader-a${campaign.body.term}`));

    // The lease's TTL counts down (and its keys are listed).
    const ttlOf = `parseFloat(document.querySelector('tr[data-lease="${leaseId}"] .ttl')?.textContent ?? 'NaN')`;
    const first = (await browser.waitFor<number>(ttlOf, 5_000)).value;
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    const second = await browser.evaluate<number>(ttlOf);
    t.diagnostic(`lease ${leaseId} TTL in the page: ${first} s, then ${second} s 1.2 s later`);
    assert.ok(first <= 30 && second < first && second > first - 3, `${first} then ${second}`);
    const leaseRow = await browser.waitFor<string>(`document.querySelector('tr[data-lease="${leaseId}"]')?.textContent.includes('/locks/console-lock/') ? document.querySelector('tr[data-lease="${leaseId}"]').textContent : ''`, 5_000);
    assert.match(leaseRow.value, /\/elections\/console-election\//);

    // Members and charts have data.
    const members = await browser.evaluate<string>(`document.getElementById('members').textContent`);
    assert.match(members, /leader/);
    assert.match(members, /this node/);
    await browser.waitFor<boolean>(`document.getElementById('chart-throughput').dataset.last !== ''`, 5_000);
    writeFileSync(join(artifacts, 'console.png'), await browser.screenshot());
    assert.deepEqual(browser.problems, [], 'the page logged errors');

    // Quota per tenant: a tenant created over HTTP, keys written under its prefix; the page shows
    // the new use beside the limits within a few seconds (the view is re-read every 3 s).
    await browser.waitFor<boolean>(`document.querySelector('#tenants .empty') !== null`, 10_000);
    const created = await http(`${urls[0]}/v1/tenants/acme`, { method: 'PUT', body: JSON.stringify({ prefixes: ['/acme/'], limits: { maxKeys: 10, maxBytes: 1000 } }) });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const tenantCells = (name: string): string => `[...(document.querySelector('tr[data-tenant="${name}"]')?.children ?? [])].map((td) => td.textContent)`;
    const empty = await browser.waitFor<string[]>(`(() => { const cells = ${tenantCells('acme')}; return cells.length === 5 ? cells : null; })()`, 5_000);
    assert.deepEqual(empty.value, ['acme', '/acme/', '0 / 10 (0.0 %)', '0 B / 1000 B (0.0 %)', '0 / unlimited']);
    for (const name of ['a', 'b', 'c']) {
      const put = await http(`${urls[2]}/v1/kv/acme/${name}`, { method: 'PUT', body: '12345' });
      assert.ok(put.status === 200 || put.status === 201, JSON.stringify(put.body));
    }
    const wroteAt = performance.now();
    const used = await browser.waitFor<string[]>(`(() => { const cells = ${tenantCells('acme')}; return cells[2] === '3 / 10 (30 %)' ? cells : null; })()`, 8_000, 50);
    const shownMs = performance.now() - wroteAt;
    t.diagnostic(`the tenant's new use appeared ${shownMs.toFixed(0)} ms after the last write answered`);
    assert.deepEqual(used.value.slice(2), ['3 / 10 (30 %)', '15 B / 1000 B (1.5 %)', '0 / unlimited']);
    assert.ok(shownMs < 6_000, `${shownMs} ms`);
    writeFileSync(join(artifacts, 'console-tenants.png'), await browser.screenshot());
    assert.deepEqual(browser.problems, [], 'the page logged errors');

    // The leader's console: every member's replication progress and peer round-trip time.
    const leader = await findLeader(cell);
    await browser.open(`${cell.cell.clientUrl(leader)}/ui/`);
    const progress = await browser.waitFor<string[]>(`(() => {
      const rows = [...document.querySelectorAll('#members tr[data-member]')];
      const cells = rows.map((row) => row.children[6].textContent);
      const rtts = rows.map((row) => row.children[7].textContent).filter((text) => text.endsWith('ms (mean)'));
      return rows.length === 3 && cells.every((text) => /^[0-9]+$/.test(text)) && rtts.length === 2 ? cells : null;
    })()`, 10_000);
    t.diagnostic(`the leader's console: members replicated to ${progress.value.join(', ')}`);
    writeFileSync(join(artifacts, 'console-leader.png'), await browser.screenshot());
    assert.deepEqual(browser.problems, [], 'the page logged errors');

    // A refused token: the API's own error is shown, nothing is worked around.
    await browser.evaluate(`sessionStorage.setItem('baton.console.token', 'not-a-token')`);
    await browser.open(`${cell.cell.clientUrl(leader)}/ui/`);
    const refused = await browser.waitFor<string>(`document.querySelector('#members .error')?.textContent ?? ''`, 5_000);
    assert.match(refused.value, /^401 unauthenticated/);
    assert.match((await browser.waitFor<string>(`document.querySelector('#tenants .error')?.textContent ?? ''`, 5_000)).value, /^401 unauthenticated/);
    assert.equal(await browser.evaluate<number>(`document.querySelectorAll('tr[data-tenant]').length`), 0);
    assert.equal(await browser.evaluate<number>(`document.querySelectorAll('tr[data-key]').length`), 0);
    writeFileSync(join(artifacts, 'console-refused.png'), await browser.screenshot());
    t.diagnostic(`browser part took ${((performance.now() - started) / 1000).toFixed(1)} s`);
  } finally {
    await browser.close();
  }
});
