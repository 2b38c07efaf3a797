// --canary (src/node/cell-canary.ts) on a real 3-process cell: only the leader runs the canary's
// probes, its SLIs on the leader's own /metrics (every probe succeeding, 0 violations) and none
// on the followers; kill -9 the leader and the new leader's canary starts and reports. In headless
// chromium (when there is one), the leader's console shows the SLIs and a follower's links to
// the leader's console. On a TLS cell (client certificates required) the leader's canary calls its
// cell over https with its member certificate.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { httpsRequest, type CellTls } from '../../src/node/testing/cell-tls.js';
import { issueClientCert } from '../../src/security/certs.js';
import { findLeader, sleep, startTestCell, type TestCell } from './harness.js';
import { findEtcdctl } from './etcdctl-path.js';
import { findChromium, HeadlessBrowser, noChromiumReason } from './headless-browser.js';

const probes = ['lock', 'election', 'lease', 'watch', 'stale_owner'];

interface Slis { running: number; ok: Record<string, number>; failed: Record<string, number>; violations: number; ratio: Record<string, number> }

async function metricsText(cell: TestCell, name: string): Promise<string> {
  const url = `${cell.cell.clientUrl(name)}/metrics`;
  const tls = cell.cell.tls;
  if (tls === null) return (await fetch(url, { signal: AbortSignal.timeout(3000) })).text();
  return (await httpsRequest(url, { ca: tls.ca.cert, client: tls.root, timeoutMs: 3000 })).body;
}

async function slisOf(cell: TestCell, name: string): Promise<Slis> {
  const text = await metricsText(cell, name);
  const value = (pattern: RegExp): number => Number(pattern.exec(text)?.[1] ?? NaN);
  const perProbe = (result: string): Record<string, number> => Object.fromEntries(probes.map((probe) =>
    [probe, value(new RegExp(`^baton_canary_probes_total\\{probe="${probe}",result="${result}"\\} (\\d+)$`, 'm')) || 0]));
  let violations = 0;
  for (const match of text.matchAll(/^baton_canary_violations_total\{probe="\w+"\} (\d+)$/gm)) violations += Number(match[1]);
  return {
    running: value(/^baton_canary_running (\d+)$/m),
    ok: perProbe('ok'),
    failed: perProbe('failed'),
    violations,
    ratio: Object.fromEntries(probes.map((probe) => [probe, value(new RegExp(`^baton_canary_success_ratio\\{probe="${probe}"\\} (\\S+)$`, 'm'))])),
  };
}

/** Polls `name`'s /metrics until every probe succeeded `times` times; the SLIs then. */
async function waitForProbes(cell: TestCell, name: string, times: number, timeoutMs: number): Promise<Slis> {
  const deadline = Date.now() + timeoutMs;
  let last: Slis | null = null;
  while (Date.now() < deadline) {
    last = await slisOf(cell, name).catch(() => null);
    if (last !== null && probes.every((probe) => (last as Slis).ok[probe] as number >= times)) return last;
    await sleep(200);
  }
  assert.fail(`${name}'s canary did not get ${times} successes of every probe in ${timeoutMs} ms: ${JSON.stringify(last)}`);
}

test('--canary: the leader runs the probes (SLIs on its /metrics, 0 violations); after kill -9 the new leader\'s canary reports', { timeout: 180_000 }, async (t) => {
  const cell = await startTestCell({ extraArgs: ['--canary'] });
  try {
    const leader = await findLeader(cell);
    const first = await waitForProbes(cell, leader, 3, 40_000);
    assert.equal(first.running, 1);
    assert.equal(first.violations, 0);
    t.diagnostic(`leader ${leader}: ok ${JSON.stringify(first.ok)} failed ${JSON.stringify(first.failed)} ratio ${JSON.stringify(first.ratio)}`);
    for (const probe of probes) assert.ok((first.ratio[probe] as number) >= 0.75, `${probe} success ratio ${first.ratio[probe]}`);
    // Followers run nothing: not running, and their counts (non-zero only if one led briefly
    // before) stay still while the leader's grow.
    const followers = cell.names.filter((name) => name !== leader);
    const before = await Promise.all(followers.map((name) => slisOf(cell, name)));
    await sleep(3_000);
    const later = await Promise.all(followers.map((name) => slisOf(cell, name)));
    followers.forEach((name, i) => {
      assert.equal(later[i]?.running, 0, `${name} does not run the canary`);
      assert.deepEqual(later[i]?.ok, before[i]?.ok, `${name} ran no probe`);
    });
    assert.ok(((await slisOf(cell, leader)).ok['lock'] as number) > (first.ok['lock'] as number), 'the leader\'s canary goes on');

    await consoleShowsCanary(t, cell, leader);

    const victim = await findLeader(cell); // the leader now (it may have moved on a loaded machine)
    const killedAt = Date.now();
    await cell.cell.kill9(victim);
    const next = await findLeader(cell, cell.names.filter((name) => name !== victim), 20_000);
    const elected = Date.now();
    // The new leader's canary starts, and every probe succeeds on it (its counters start at 0).
    const deadline = Date.now() + 40_000;
    let startedMs = -1;
    while (startedMs < 0 && Date.now() < deadline) {
      const slis = await slisOf(cell, next).catch(() => null);
      if (slis?.running === 1) startedMs = Date.now() - killedAt;
      else await sleep(100);
    }
    assert.ok(startedMs >= 0, `${next}'s canary started`);
    const after = await waitForProbes(cell, next, 2, 40_000);
    const reportingMs = Date.now() - killedAt;
    t.diagnostic(`kill -9 ${victim}: ${next} leads after ${elected - killedAt} ms, its canary runs after ${startedMs} ms, every probe succeeded twice after ${reportingMs} ms; ok ${JSON.stringify(after.ok)} failed ${JSON.stringify(after.failed)}`);
    assert.equal(after.violations, 0);
    assert.equal(after.running, 1);
    for (const other of cell.names.filter((name) => name !== victim && name !== next)) assert.equal((await slisOf(cell, other)).running, 0);
    // Each member's canary keeps its own names across its leaderships: the keys it leaves are
    // under one prefix per member that led, never one more per run.
    const keys = await (await fetch(`${cell.cell.clientUrl(next)}/v1/kv/canary-?prefix=true&keysOnly=true`)).json() as { kvs: { key: string }[] };
    const prefixes = [...new Set(keys.kvs.map((kv) => kv.key.split('/')[1]))].sort();
    t.diagnostic(`canary key prefixes in the cell: ${prefixes.join(', ')}`);
    assert.ok(prefixes.length >= 1 && prefixes.length <= 3 && prefixes.every((p) => /^canary-cell-1-m[0-9a-f]+$/.test(p as string)), prefixes.join(', '));
  } finally {
    await cell.close();
  }
});

async function consoleShowsCanary(t: { diagnostic(text: string): void; skip?: unknown }, cell: TestCell, leader: string): Promise<void> {
  const chromium = findChromium();
  if (chromium === null) {
    t.diagnostic(`console part skipped: ${noChromiumReason()}`);
    return;
  }
  const browser = await HeadlessBrowser.launch(chromium);
  try {
    await browser.open(`${cell.cell.clientUrl(leader)}/ui/`);
    const okRuns = await browser.waitFor<number[]>(`(() => {
      const rows = [...document.querySelectorAll('#canary tr[data-probe]')];
      const runs = rows.map((row) => Number(row.querySelector('.ok-runs').textContent));
      return rows.length === 5 && runs.every((n) => n >= 1) ? runs : null;
    })()`, 10_000);
    t.diagnostic(`the leader's console: canary runs ok per probe ${okRuns.value.join(', ')}`);
    assert.match(await browser.evaluate<string>(`document.querySelector('#canary [data-canary="here"]').textContent`), /0 violation\(s\)/);
    await browser.waitFor<boolean>(`document.getElementById('feed-keys').textContent === 'live' && !document.getElementById('tenants').textContent.includes('loading')`, 10_000);
    const artifacts = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'test-artifacts', 'console');
    mkdirSync(artifacts, { recursive: true });
    writeFileSync(join(artifacts, 'console-canary.png'), await browser.screenshot());
    const follower = cell.names.find((name) => name !== leader) as string;
    await browser.open(`${cell.cell.clientUrl(follower)}/ui/`);
    const link = await browser.waitFor<string>(`document.querySelector('#canary [data-canary="elsewhere"] a')?.getAttribute('href') ?? ''`, 10_000);
    assert.equal(link.value, `${cell.cell.clientUrl(leader)}/ui/`);
    // The canary lets leases lapse on purpose: one listed may be gone when its details are read
    // (404 logged by the browser for the fetch; the page shows the lease gone). Nothing else.
    const unexpected = browser.problems.filter((problem) => problem.kind !== 'log' || !/status of 404 \(Not Found\) \S+\/v1\/leases\/\d+$/.test(problem.text));
    assert.deepEqual(unexpected, [], 'the page logged errors');
  } finally {
    await browser.close();
  }
}

test('--canary on a TLS cell: the leader\'s canary calls its cell over https with its member certificate', { timeout: 120_000 }, async (t) => {
  const cell = await startTestCell({ tls: true, extraArgs: ['--canary'] });
  try {
    const deadline = Date.now() + 40_000;
    let runner: string | null = null;
    while (runner === null && Date.now() < deadline) {
      for (const name of cell.names) if ((await slisOf(cell, name).catch(() => null))?.running === 1) runner = name;
      if (runner === null) await sleep(200);
    }
    assert.ok(runner !== null, 'a member runs the canary');
    const slis = await waitForProbes(cell, runner, 3, 40_000);
    t.diagnostic(`${runner} over TLS: ok ${JSON.stringify(slis.ok)} failed ${JSON.stringify(slis.failed)}`);
    assert.equal(slis.violations, 0);
    for (const other of cell.names.filter((name) => name !== runner)) assert.equal((await slisOf(cell, other)).running, 0);
  } finally {
    await cell.close();
  }
});

async function leaderLosses(cell: TestCell, name: string): Promise<number> {
  return Number(/^baton_canary_leader_losses_total (\d+)$/m.exec(await metricsText(cell, name))?.[1] ?? NaN);
}

/** The member whose canary runs now (polls every member's /metrics). */
async function canaryRunner(cell: TestCell, timeoutMs: number): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    for (const name of cell.names) if ((await slisOf(cell, name).catch(() => null))?.running === 1) return name;
    await sleep(200);
  }
  assert.fail('no member runs the canary');
}

test('--canary on a TLS cell with authorization on: the leader\'s canary acts as its member (root on the native port); users are still refused its names', { timeout: 150_000 }, async (t) => {
  const cell = await startTestCell({ tls: true, extraArgs: ['--canary'] });
  try {
    const tls = cell.cell.tls as CellTls;
    const alice = issueClientCert(tls.ca, 'alice');
    let runner = await canaryRunner(cell, 40_000);
    await waitForProbes(cell, runner, 1, 40_000);
    const policy = { enabled: true, roles: { app: [{ prefix: '/app/', ops: ['read', 'write', 'watch', 'lease', 'lock', 'election'] }] }, bindings: { alice: ['app'] } };
    const set = await httpsRequest(`${cell.cell.clientUrl(runner)}/v1/auth/policy`, {
      ca: tls.ca.cert, client: tls.root, method: 'PUT', body: JSON.stringify(policy), headers: { 'content-type': 'application/json', 'if-version': '0' },
    });
    assert.equal(set.status, 200, set.body);
    // Authorization is on: a user without a grant on the canary's names is refused them.
    const denied = await httpsRequest(`${cell.cell.clientUrl(runner)}/v1/kv/canary-cell-1-m1/probe`, { ca: tls.ca.cert, client: alice, method: 'PUT', body: 'x' });
    assert.equal(denied.status, 403, denied.body);
    runner = await canaryRunner(cell, 10_000);
    const before = await slisOf(cell, runner);
    const deadline = Date.now() + 60_000;
    let now: Slis | null = null;
    const enough = (slis: Slis | null): slis is Slis => slis !== null && probes.every((probe) => (slis.ok[probe] as number) >= (before.ok[probe] as number) + 3);
    while (Date.now() < deadline) {
      now = await slisOf(cell, runner).catch(() => null);
      if (enough(now)) break;
      await sleep(250);
    }
    t.diagnostic(`${runner} with authorization on: ok ${JSON.stringify(now?.ok)} failed ${JSON.stringify(now?.failed)} (at enabling: ok ${JSON.stringify(before.ok)} failed ${JSON.stringify(before.failed)})`);
    assert.ok(enough(now), `every probe succeeded 3 more times with authorization on; ${runner}'s log:\n${cell.cell.tail(runner, 30)}`);
    assert.equal(now.violations, 0);
    assert.deepEqual(now.failed, before.failed, 'no probe failed once authorization was on');
    assert.match(cell.cell.tail(runner, 2000), /canary: this member leads: starting the cell's canary .*principal=member certificate \(root on the native port\)/);
  } finally {
    await cell.close();
  }
});

test('--canary on a plain-HTTP cell with authorization on: the canary has no identity, its probes are refused and it says why', { timeout: 150_000, skip: findEtcdctl() === null ? 'no etcdctl (apt-get install etcd-client)' : false }, async (t) => {
  const cell = await startTestCell({ grpc: true, extraArgs: ['--canary'] });
  try {
    const runner = await canaryRunner(cell, 40_000);
    await waitForProbes(cell, runner, 1, 40_000);
    const ctl = (args: string[]): void => {
      const run = spawnSync(findEtcdctl() as string, ['--endpoints', cell.cell.grpcEndpoint(runner), '--command-timeout', '5s', ...args], { env: { ...process.env, ETCDCTL_API: '3' }, encoding: 'utf8' });
      assert.equal(run.status, 0, `etcdctl ${args.join(' ')}: ${run.stdout}${run.stderr}`);
    };
    for (const args of [['user', 'add', 'root:rootpw'], ['role', 'add', 'root'], ['user', 'grant-role', 'root', 'root'], ['auth', 'enable']]) ctl(args);
    const before = await slisOf(cell, runner);
    const lossesBefore = await leaderLosses(cell, runner);
    const deadline = Date.now() + 30_000;
    let now = before;
    while (Date.now() < deadline) {
      now = await slisOf(cell, runner);
      if (probes.every((probe) => (now.failed[probe] as number) > (before.failed[probe] as number))) break;
      await sleep(250);
    }
    const log = cell.cell.tail(runner, 2000);
    t.diagnostic(`${runner} anonymous under authorization: failed ${JSON.stringify(now.failed)} ok ${JSON.stringify(now.ok)} (at enabling: failed ${JSON.stringify(before.failed)} ok ${JSON.stringify(before.ok)})`);
    t.diagnostic(log.split('\n').filter((line) => /canary: (this member leads|monitor_refused|the cell refuses)/.test(line)).join('\n'));
    assert.ok(probes.every((probe) => (now.failed[probe] as number) > (before.failed[probe] as number)), 'every probe is refused');
    assert.match(log, /canary: this member leads: starting the cell's canary .*principal=anonymous/);
    assert.equal(log.match(/ERROR canary: the cell refuses the canary's calls: it has no identity on the client port/g)?.length, 1, 'said once, not every second');
    assert.match(log, /WARN canary: monitor_refused .*status=403/);
    // Refused is not a lost leader: the monitor stops judging rather than count losses.
    assert.equal(await leaderLosses(cell, runner), lossesBefore, 'no leader loss counted for a refusal');
    assert.equal(now.violations, 0, 'refusals are failures, never violations');
  } finally {
    await cell.close();
  }
});
