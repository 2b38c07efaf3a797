// Locks, the fencing check and elections on a real 3-process cell, through any member: tokens
// increase from holder to holder, try-lock names the holder, a waiter is granted only after its
// predecessor left, abandoned and timed-out waiters leave the queue, 100 contenders are served
// once each in queue order with one wake-up per release, and an election's observers see every
// change of leadership in order.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { sleep, startTestCell, type TestCell } from './harness.js';

interface Answer {
  readonly status: number;
  readonly text: string;
  readonly json: any;
}

/** fetch with a timeout and an optional caller's abort, answering status, text and parsed JSON. */
async function http(url: string, init: RequestInit & { timeoutMs?: number } = {}): Promise<Answer> {
  const timeout = AbortSignal.timeout(init.timeoutMs ?? 15_000);
  const signal = init.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
  const res = await fetch(url, { ...init, signal });
  const text = await res.text();
  let json: unknown = null;
  try {
    json = JSON.parse(text);
  } catch {
    // not JSON (metrics)
  }
  return { status: res.status, text, json };
}

let cell: TestCell;
let urls: string[];

before(async () => {
  cell = await startTestCell();
  urls = cell.cell.clientUrls();
});
after(async () => {
  for (const name of cell?.names ?? []) if (!cell.cell.isRunning(name)) console.error(`${name} died:\n${cell.cell.tail(name, 40)}`);
  await cell?.cell.stopAll();
});

const post = (url: string, body: unknown, init: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<Answer> =>
  http(url, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' }, ...init });

async function lease(ttl = 10): Promise<number> {
  const answer = await post(`${urls[0]}/v1/leases`, { ttl });
  assert.equal(answer.status, 200, answer.text);
  return answer.json.id as number;
}

async function metric(url: string, name: string): Promise<number> {
  const text = (await http(`${url}/metrics`)).text;
  let sum = 0;
  for (const line of text.split('\n')) if (line.startsWith(name) && !line.startsWith('#')) sum += Number(line.split(' ').at(-1));
  return sum;
}

test('acquire, try-lock, listing, fencing check and release, through different members', async () => {
  const [a, b] = [await lease(), await lease()];
  const first = await post(`${urls[0]}/v1/locks/report-42/acquire`, { lease: a, owner: 'worker-a' });
  assert.equal(first.status, 200, first.text);
  assert.match(first.json.key, /^\/locks\/report-42\/\d{12}$/);
  assert.equal(Number(first.json.key.slice(-12)), first.json.fencingToken);
  assert.equal(first.json.owner, 'worker-a');

  const tryLock = await post(`${urls[1]}/v1/locks/report-42/acquire`, { lease: b, owner: 'worker-b', waitMs: 0 });
  assert.equal(tryLock.status, 409, tryLock.text);
  assert.equal(tryLock.json.error.code, 'lock_held');
  assert.equal(tryLock.json.error.holder.owner, 'worker-a');
  assert.equal(tryLock.json.error.holder.fencingToken, first.json.fencingToken);

  const state = await http(`${urls[2]}/v1/locks/report-42`);
  assert.equal(state.status, 200, state.text);
  assert.equal(state.json.holder.key, first.json.key);
  assert.deepEqual(state.json.queue, [], 'the try-lock left no entry behind');
  assert.ok(Math.abs(state.json.holder.waitingSinceMs - Date.now()) < 60_000);

  // baton_fencing_checks_total{result} (docs/operations.md): counted by the member that answers.
  const checks = async (result: string): Promise<number> =>
    (await Promise.all(urls.map((url) => metric(url, `baton_fencing_checks_total{result="${result}"}`)))).reduce((a, b) => a + b, 0);
  const checksBefore = { valid: await checks('valid'), stale: await checks('stale') };
  const valid = await post(`${urls[1]}/v1/fencing/check`, { lock: 'report-42', token: first.json.fencingToken });
  assert.deepEqual([valid.status, valid.json.valid, valid.json.currentToken], [200, true, first.json.fencingToken]);
  const stale = await post(`${urls[1]}/v1/fencing/check`, { lock: 'report-42', token: first.json.fencingToken + 1 });
  assert.equal(stale.json.valid, false);

  const notMine = await post(`${urls[1]}/v1/locks/report-42/release`, { key: '/locks/report-42/999999999999' });
  assert.equal(notMine.status, 409);
  assert.equal(notMine.json.error.code, 'lock_not_held');
  const released = await post(`${urls[2]}/v1/locks/report-42/release`, { key: first.json.key });
  assert.equal(released.status, 200, released.text);
  const again = await post(`${urls[2]}/v1/locks/report-42/release`, { key: first.json.key });
  assert.equal(again.status, 409);
  const after = await post(`${urls[1]}/v1/fencing/check`, { lock: 'report-42', token: first.json.fencingToken });
  assert.deepEqual([after.json.valid, after.json.currentToken, after.json.holder], [false, null, null]);
  assert.deepEqual({ valid: await checks('valid') - checksBefore.valid, stale: await checks('stale') - checksBefore.stale }, { valid: 1, stale: 2 },
    'two stale tokens and one valid one counted');

  const second = await post(`${urls[1]}/v1/locks/report-42/acquire`, { lease: b, owner: 'worker-b', waitMs: 0 });
  assert.equal(second.status, 200, second.text);
  assert.ok(second.json.fencingToken > first.json.fencingToken, 'tokens strictly increase across holders');
});

test('bad input is a clear 400 or 404, never a crash', async () => {
  const cases: [string, unknown, number, string][] = [
    ['/v1/locks/x/acquire', { lease: 'one' }, 400, 'invalid_argument'],
    ['/v1/locks/x/acquire', { lease: 1, colour: 'red' }, 400, 'invalid_argument'],
    ['/v1/locks/x/acquire', { lease: 999_999, waitMs: 0 }, 404, 'lease_not_found'],
    ['/v1/locks/x/acquire', { lease: 1, waitMs: 10_000_000 }, 400, 'invalid_argument'],
    ['/v1/locks/x/release', { key: '/locks/y/000000000001' }, 400, 'invalid_argument'],
    ['/v1/fencing/check', { lock: 'x', token: 0 }, 400, 'invalid_argument'],
    [`/v1/locks/${'n'.repeat(200)}/acquire`, { lease: 1 }, 400, 'invalid_argument'],
  ];
  for (const [path, body, status, code] of cases) {
    const answer = await post(`${urls[0]}${path}`, body);
    assert.equal(answer.status, status, `${path} ${JSON.stringify(body)}: ${answer.text}`);
    assert.equal(answer.json.error.code, code);
  }
});

test('a waiter is granted after its predecessor leaves; timed-out and abandoned waiters leave the queue', async () => {
  const [a, b, c] = [await lease(), await lease(), await lease()];
  const holder = await post(`${urls[0]}/v1/locks/queue/acquire`, { lease: a, owner: 'a' });
  assert.equal(holder.status, 200);

  const timedOut = await post(`${urls[1]}/v1/locks/queue/acquire`, { lease: b, owner: 'b', waitMs: 500 });
  assert.equal(timedOut.status, 409, timedOut.text);
  assert.equal(timedOut.json.error.holder.owner, 'a');

  const abandon = new AbortController();
  const abandoned = post(`${urls[2]}/v1/locks/queue/acquire`, { lease: c, owner: 'c', waitMs: 20_000 }, { signal: abandon.signal }).catch(() => null);
  await waitFor(async () => (await http(`${urls[0]}/v1/locks/queue`)).json.queue.length === 1, 'c queued');
  abandon.abort();
  await abandoned;
  await waitFor(async () => (await http(`${urls[0]}/v1/locks/queue`)).json.queue.length === 0, 'the abandoned entry removed');

  const waiting = post(`${urls[2]}/v1/locks/queue/acquire`, { lease: b, owner: 'b', waitMs: 20_000 });
  await waitFor(async () => (await http(`${urls[0]}/v1/locks/queue`)).json.queue.length === 1, 'b queued');
  const released = await post(`${urls[0]}/v1/locks/queue/release`, { key: holder.json.key });
  const granted = await waiting;
  assert.equal(granted.status, 200, granted.text);
  assert.ok(granted.json.revision >= released.json.revision, 'granted at or after the predecessor left');
  assert.ok(granted.json.fencingToken > holder.json.fencingToken);
  assert.ok(granted.json.waitedMs > 0);
});

test('100 contenders: each acquires exactly once, in queue order, with one wake-up per release', async () => {
  const id = await lease(60);
  const total = async (name: string): Promise<number> =>
    (await Promise.all(urls.map((url) => metric(url, name)))).reduce((sum, value) => sum + value, 0);
  const wakeupsBefore = await total('baton_lock_wakeups_total');
  const queuedBefore = await total('baton_lock_grants_total{contended="true"}');
  const order: number[] = [];
  const contenders = Array.from({ length: 100 }, async (_, i) => {
    await sleep(i * 5); // spread the creates a little so the queue order is mostly the index order
    const answer = await post(`${urls[i % 3]}/v1/locks/crowd/acquire`, { lease: id, owner: `c${i}`, waitMs: 120_000 }, { timeoutMs: 130_000 });
    assert.equal(answer.status, 200, answer.text);
    order.push(answer.json.fencingToken);
    await post(`${urls[(i + 1) % 3]}/v1/locks/crowd/release`, { key: answer.json.key }).then((r) => assert.equal(r.status, 200, r.text));
  });
  await Promise.all(contenders);
  assert.equal(order.length, 100);
  assert.deepEqual(order, [...order].sort((x, y) => x - y), 'granted in queue (token) order');
  assert.equal(new Set(order).size, 100);
  const wakeups = (await total('baton_lock_wakeups_total')) - wakeupsBefore;
  const queued = (await total('baton_lock_grants_total{contended="true"}')) - queuedBefore;
  // Every contender that queued was woken exactly once, by its own predecessor's release: no herd.
  assert.ok(queued >= 50, `${queued} of 100 contenders queued`);
  assert.equal(wakeups, queued, `wake-ups ${wakeups} for ${queued} queued contenders`);
});

test('election: campaign, proclaim, observe in order, resign hands over with a higher term', async () => {
  const [a, b] = [await lease(), await lease()];
  const seen: { revision: number; leader: { value: string; term: number } | null }[] = [];
  const observer = new AbortController();
  const observing = (async () => {
    const res = await fetch(`${urls[2]}/v1/elections/primary/observe`, { signal: observer.signal });
    assert.equal(res.status, 200);
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const line = buffer.slice(0, end).replace(/^data: /, '');
        buffer = buffer.slice(end + 2);
        seen.push(JSON.parse(line));
      }
    }
  })().catch((error: Error) => {
    if (error.name !== 'AbortError') throw error;
  });
  await waitFor(async () => seen.length >= 1, 'the first observation');
  assert.equal(seen[0]?.leader, null);

  const won = await post(`${urls[0]}/v1/elections/primary/campaign`, { lease: a, value: 'http://a:1' });
  assert.equal(won.status, 200, won.text);
  const contender = post(`${urls[1]}/v1/elections/primary/campaign`, { lease: b, value: 'http://b:1', waitMs: 20_000 });
  const proclaimed = await post(`${urls[1]}/v1/elections/primary/proclaim`, { key: won.json.key, value: 'http://a:2' });
  assert.equal(proclaimed.status, 200, proclaimed.text);
  assert.equal(proclaimed.json.term, won.json.term);
  const leader = await http(`${urls[2]}/v1/elections/primary/leader`);
  assert.deepEqual([leader.json.leader.value, leader.json.leader.term], ['http://a:2', won.json.term]);
  const resigned = await post(`${urls[2]}/v1/elections/primary/resign`, { key: won.json.key });
  assert.equal(resigned.status, 200, resigned.text);
  const next = await contender;
  assert.equal(next.status, 200, next.text);
  assert.ok(next.json.term > won.json.term);
  const late = await post(`${urls[0]}/v1/elections/primary/proclaim`, { key: won.json.key, value: 'http://a:3' });
  assert.equal(late.status, 409, 'a resigned leader cannot proclaim');
  await waitFor(async () => seen.at(-1)?.leader?.value === 'http://b:1', 'the observer saw b lead');
  observer.abort();
  await observing;
  const values = seen.map((s) => s.leader?.value ?? null);
  assert.deepEqual(values, [null, 'http://a:1', 'http://a:2', 'http://b:1']);
  const revisions = seen.map((s) => s.revision);
  assert.deepEqual(revisions, [...revisions].sort((x, y) => x - y), 'changes arrive in revision order');
});

async function waitFor(condition: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await sleep(50);
  }
}

test('locks over /v1/stream: acquire and release as frames; closing the connection withdraws a waiting acquire', async () => {
  const { WebSocket } = await import('ws');
  const [a, b] = [await lease(), await lease()];
  const open = async (url: string) => {
    const ws = new WebSocket(`${url.replace('http', 'ws')}/v1/stream`);
    await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });
    const answers = new Map<string, (frame: any) => void>();
    ws.on('message', (data) => {
      const frame = JSON.parse(String(data));
      answers.get(String(frame.id))?.(frame);
    });
    const call = (id: string, body: Record<string, unknown>): Promise<any> =>
      new Promise((resolve) => {
        answers.set(id, resolve);
        ws.send(JSON.stringify({ id, ...body }));
      });
    return { ws, call };
  };
  const first = await open(urls[0] as string);
  const held = await first.call('1', { type: 'lockAcquire', name: 'streamed', lease: a, owner: 'a' });
  assert.equal(held.type, 'result', JSON.stringify(held));
  const second = await open(urls[1] as string);
  const waiting = second.call('1', { type: 'lockAcquire', name: 'streamed', lease: b, owner: 'b', waitMs: 20_000 });
  await waitFor(async () => (await http(`${urls[0]}/v1/locks/streamed`)).json.queue.length === 1, 'b queued over the stream');
  second.ws.close();
  await waitFor(async () => (await http(`${urls[0]}/v1/locks/streamed`)).json.queue.length === 0, 'the closed stream\'s entry withdrawn');
  void waiting;
  const checked = await first.call('2', { type: 'fencingCheck', lock: 'streamed', token: held.result.fencingToken });
  assert.equal(checked.result.valid, true);
  const released = await first.call('3', { type: 'lockRelease', name: 'streamed', key: held.result.key });
  assert.equal(released.result.released, true);
  const again = await first.call('4', { type: 'lockRelease', name: 'streamed', key: held.result.key });
  assert.equal(again.type, 'error');
  assert.equal(again.error.code, 'lock_not_held');

  // Election observation on the stream: the current leadership, then each change, in order.
  const pushes: any[] = [];
  first.ws.on('message', (data) => {
    const frame = JSON.parse(String(data));
    if (frame.id === 'obs' && frame.type === 'leadership') pushes.push(frame);
  });
  first.ws.send(JSON.stringify({ id: 'obs', type: 'observe', name: 'streamed-election' }));
  await waitFor(async () => pushes.length === 1, 'the first leadership push');
  assert.equal(pushes[0].leader, null);
  const won = await first.call('5', { type: 'campaign', name: 'streamed-election', lease: a, value: 'here' });
  assert.equal(won.type, 'result', JSON.stringify(won));
  await waitFor(async () => pushes.length === 2, 'the new leader pushed');
  assert.deepEqual([pushes[1].leader.value, pushes[1].leader.term], ['here', won.result.term]);
  const canceled = await first.call('obs', { type: 'observeCancel' });
  assert.equal(canceled.type, 'canceled');
  await first.call('6', { type: 'resign', name: 'streamed-election', key: won.result.key });
  await sleep(300);
  assert.equal(pushes.length, 2, 'nothing after the cancel');
  first.ws.close();
});
