// Watches on a real 3-process cell: an SSE watch on a follower sees acknowledged puts in order;
// a reader that stops reading is ended with slow_consumer while a fast watcher on the same node
// keeps its latency and the node's anonymous memory stays bounded; a watch whose node is killed
// (-9) resumes on another node, and on the restarted one, with no gap and no duplicate.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { findLeader, http, startTestCell, sleep, type TestCell, within } from './harness.js';
import { SseClient } from '../unit/watch/clients.js';

let cell: TestCell;
// Small watcher queues (the nodes inherit the environment): a paused reader overflows sooner.
const queueBytesMax = 512 * 1024;
before(async () => {
  process.env['BATON_WATCH_BUFFERED_BYTES_MAX'] = String(queueBytesMax);
  cell = await startTestCell();
});
after(async () => {
  await cell.close();
});

const url = (name: string): string => cell.cell.clientUrl(name);

/** A mutation retried with one Request-ID on 5xx (the cell is slow on a busy 2-core machine). */
async function mutate(name: string, path: string, init: { method: string; body: string | Buffer }): Promise<any> {
  const requestId = `watch-test-${Math.random().toString(36).slice(2)}`;
  for (let attempt = 0; ; attempt++) {
    let answer;
    try {
      answer = await http(`${url(name)}${path}`, { ...init, headers: { 'Request-ID': requestId }, timeoutMs: 15_000 });
    } catch (error) {
      if (attempt >= 20) throw error;
      await sleep(200);
      continue;
    }
    if (answer.status === 200 || answer.status === 201) return answer.body;
    if (attempt >= 20 || answer.status < 500) throw new Error(`${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
    await sleep(200);
  }
}

async function put(name: string, key: string, value: string | Buffer): Promise<number> {
  return (await mutate(name, `/v1/kv${key}`, { method: 'PUT', body: value })).revision as number;
}

async function followers(): Promise<{ leader: string; followers: string[] }> {
  const leader = await findLeader(cell);
  return { leader, followers: cell.names.filter((n) => n !== leader) };
}

/** Resident anonymous memory (heap, buffers; not LMDB's file mapping) of one member, in MiB. */
function rssAnonMiB(name: string): number {
  const marker = `${cell.dataDir}/${name}`;
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    if (!cmdline.includes(marker)) continue;
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = Number(/RssAnon:\s+(\d+)/.exec(status)?.[1] ?? NaN);
    return kib / 1024;
  }
  throw new Error(`no process for ${name}`);
}

const revisionsOf = (client: SseClient): number[] =>
  client.messages.flatMap((b) => b.events ?? []).map((e: any) => e.kv.modRevision as number);

test('an SSE watch on a follower sees acknowledged puts in order, from the past and live', async () => {
  const { leader, followers: [serving] } = await followers();
  const acked: number[] = [];
  acked.push(await put(leader, '/order/k', 'first'));
  const watch = new SseClient(`${url(serving as string)}/v1/watch?key=/order/&prefix=true&startRevision=${acked[0]}`);
  for (let i = 0; i < 10; i++) acked.push(await put(i % 2 === 0 ? leader : (serving as string), `/order/k${i % 3}`, `v${i}`));
  await watch.until((m) => revisionsOf(watch).length === acked.length, 15_000);
  assert.deepEqual(revisionsOf(watch), acked);
  watch.close();
});

test('a watch resuming from the next revision gets its headers at once, before any event', async () => {
  const name = cell.names[1] as string;
  const status = await http(`${url(name)}/v1/cluster/status`);
  const next = (status.body.revision as number) + 1;
  const abort = new AbortController();
  const started = performance.now();
  const timer = setTimeout(() => abort.abort(), 3_000);
  try {
    // No event comes and no progress is asked for: only the headers can answer.
    const response = await fetch(`${url(name)}/v1/watch?key=/headers-at-once/&prefix=true&startRevision=${next}`, { signal: abort.signal });
    const ms = performance.now() - started;
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'text/event-stream; charset=utf-8');
    assert.ok(ms < 2_000, `headers after ${ms.toFixed(0)} ms`);
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
});

test('a reader that stops reading ends with slow_consumer; a fast watcher keeps low latency; memory stays bounded', async () => {
  const { leader, followers: [serving, control] } = await followers();
  const node = serving as string;
  const slow = new SseClient(`${url(node)}/v1/watch?key=/big/&prefix=true`);
  const fast = new SseClient(`${url(node)}/v1/watch?key=/fast`);
  await slow.until((m) => m.length === 1);
  await fast.until((m) => m.length === 1);
  slow.response.pause();
  // The control follower applies the same writes with no watcher: the difference is the watches'.
  const rssBefore = rssAnonMiB(node);
  const controlBefore = rssAnonMiB(control as string);
  let rssPeak = rssBefore;
  let controlPeak = controlBefore;
  const sampler = setInterval(() => {
    rssPeak = Math.max(rssPeak, rssAnonMiB(node));
    controlPeak = Math.max(controlPeak, rssAnonMiB(control as string));
  }, 100);
  const value = Buffer.alloc(120 * 1024, 'b').toString();
  const latencies: number[] = [];
  let bigRevision = 0;
  const rounds = 14;
  try {
    // 14 transactions of 11 x 120 KiB = 18 MiB for the paused reader: several times its queue
    // (512 KiB here) plus what the sockets can hold (a few MiB on loopback).
    for (let i = 0; i < rounds; i++) {
      const success = Array.from({ length: 11 }, (_, k) => ({ put: { key: `/big/${k}`, value } }));
      const txn = await mutate(leader, '/v1/txn', { method: 'POST', body: JSON.stringify({ success }) });
      bigRevision = txn.revision;
      for (let j = 0; j < 3; j++) {
        const revision = await put(leader, '/fast', `${i}.${j}`);
        const acked = performance.now();
        await fast.until((m) => m.some((b) => b.revision >= revision), 10_000);
        latencies.push(performance.now() - acked);
      }
    }
  } finally {
    clearInterval(sampler);
  }
  const rssAfter = rssAnonMiB(node);
  latencies.sort((a, b) => a - b);
  const p50 = latencies[Math.floor(latencies.length / 2)] as number;
  const p99 = latencies[Math.floor(latencies.length * 0.99)] as number;
  console.log(`fast watcher latency put-ack->receipt p50 ${p50.toFixed(1)} ms p99 ${p99.toFixed(1)} ms; ` +
    `serving node RssAnon before ${rssBefore.toFixed(0)} MiB, peak ${rssPeak.toFixed(0)} MiB, after ${rssAfter.toFixed(0)} MiB; ` +
    `control follower (no watchers) ${controlBefore.toFixed(0)} -> peak ${controlPeak.toFixed(0)} MiB ` +
    `(${((rounds * 11 * value.length) / 2 ** 20).toFixed(0)} MiB written to a paused reader)`);
  assert.equal(revisionsOf(fast).length, rounds * 3, 'the fast watcher got every put');
  assert.ok(p50 < 500, `fast watcher p50 ${p50} ms`);
  const watchGrowth = rssPeak - rssBefore - (controlPeak - controlBefore);
  assert.ok(watchGrowth < 48, `the paused reader did not pin its backlog (${watchGrowth.toFixed(0)} MiB over the control)`);
  slow.response.resume();
  await slow.done;
  const end = slow.messages.at(-1);
  assert.equal(end?.error?.code, 'slow_consumer');
  const seen = revisionsOf(slow);
  assert.ok(seen.length > 0 && seen.at(-1) === end.error.lastRevision, 'everything up to lastRevision arrived');
  assert.ok(end.error.lastRevision < bigRevision);
  fast.close();
});

test('a watch resumes after its node is killed, on another node and on the restarted one, without gap or duplicate', async () => {
  const { leader, followers: [victim, other] } = await followers();
  const start = (await put(leader, '/resume/k', 'start')) + 0;
  const acked: number[] = [start];
  let first = new SseClient(`${url(victim as string)}/v1/watch?key=/resume/&prefix=true&startRevision=${start}`);
  first.done.catch(() => {}); // a killed node resets the connection
  for (let i = 0; i < 10; i++) acked.push(await put(leader, `/resume/k${i % 2}`, `a${i}`));
  await first.until((m) => revisionsOf(first).length === acked.length, 10_000);
  await cell.cell.kill9(victim as string);
  for (let i = 0; i < 10; i++) acked.push(await put(leader, `/resume/k${i % 2}`, `b${i}`));
  const seen = revisionsOf(first);
  const last = Math.max(...first.messages.map((b) => b.revision ?? 0));
  const second = new SseClient(`${url(other as string)}/v1/watch?key=/resume/&prefix=true&startRevision=${last + 1}`);
  await second.until((m) => seen.length + revisionsOf(second).length >= acked.length, 10_000);
  assert.deepEqual([...seen, ...revisionsOf(second)], acked, 'resumed on another node');
  second.close();
  cell.cell.start(victim as string);
  await cell.cell.waitReady(30_000, [victim as string]);
  first = new SseClient(`${url(victim as string)}/v1/watch?key=/resume/&prefix=true&startRevision=${start}`);
  await first.until((m) => revisionsOf(first).length >= acked.length, 15_000);
  assert.deepEqual(revisionsOf(first), acked, 'replayed on the restarted node');
  first.close();
});

test('SIGTERM ends a watch cleanly with unavailable and the last revision', async () => {
  const { leader, followers: [victim] } = await followers();
  const revision = await put(leader, '/term/k', 'x');
  const watch = new SseClient(`${url(victim as string)}/v1/watch?key=/term/k&startRevision=${revision}`);
  await watch.until((m) => revisionsOf(watch).length === 1, 10_000);
  cell.cell.signal(victim as string, 'SIGTERM');
  await watch.done;
  const end = watch.messages.at(-1);
  assert.equal(end?.error?.code, 'unavailable');
  assert.ok(end.error.lastRevision >= revision);
  assert.equal(await cell.cell.waitExit(victim as string), 0, 'a clean exit');
});

test('a member that comes back alone, knowing no leader, ends its watches instead of serving a stale state', async () => {
  // It starts knowing no leader and hears of none. A voter campaigns, so its driver reports "no
  // leader" and the 5 s rule starts; node.ts also starts that rule at boot, for a member that never
  // campaigns (a learner cut off before it heard a leader: the simulator's seed 2229), which this
  // process test does not stage.
  const [alone, ...others] = cell.names as [string, ...string[]];
  for (const name of cell.names) await cell.cell.kill9(name);
  cell.cell.start(alone);
  const startedMs = Date.now();
  for (;;) {
    const answer = await http(`${url(alone)}/v1/status`, { timeoutMs: 1_000 }).catch(() => null);
    if (answer !== null) break;
    assert.ok(Date.now() - startedMs < 30_000, 'the member answers HTTP');
    await sleep(100);
  }
  const watch = new SseClient(`${url(alone)}/v1/watch?key=/&prefix=true&startRevision=1`);
  const ended = await within(watch.done.then(() => true, () => true), 15_000, () => false);
  watch.close();
  assert.ok(ended, 'the watch ended within 15 s (the node ends watches 5 s after it knows no leader)');
  if (watch.status === 200) {
    const end = watch.messages.at(-1);
    assert.equal(end?.error?.code, 'unavailable', JSON.stringify(end));
  } else {
    assert.equal(watch.status, 503, 'refused at once: it already knew no leader for 5 s');
  }
  for (const name of others) cell.cell.start(name);
  await cell.cell.waitReady(60_000);
});
