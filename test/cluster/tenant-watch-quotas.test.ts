// Tenants' watch quotas on a real 3-process cell (docs/api/tenants.md, issue #28): a tenant whose
// reader stalls is over its buffered watch bytes (maxWatchBytes) and its watcher ends as a slow
// consumer naming the quota, resumable with no gap, while another tenant's watchers on the same
// member see every event, their delivery p99 compared in the same phase with a watcher on a member
// without the stall; a watch past maxWatches or while the tenant is over its bytes is refused with
// the details (429 + Retry-After on HTTP, an error frame with retryAfterSeconds on the stream,
// etcd's rate-limit words on gRPC); eventsPerSecond paces delivery without losing or reordering an
// event; /metrics and `baton tenant show` show the use, the limits and the refusals.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { credentials, loadPackageDefinition, type GrpcObject, type ServiceClientConstructor } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { protoDir } from '../../src/api/grpc/proto.js';
import { SseClient, StreamClient } from '../unit/watch/clients.js';
import { baton } from './cli-run.js';
import { http, sleep, startTestCell, type TestCell } from './harness.js';

let cell: TestCell;
const url = (i = 0): string => cell.cell.clientUrls()[i] as string;
const putJson = (body: unknown): RequestInit => ({ method: 'PUT', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

before(async () => {
  cell = await startTestCell({ size: 3, grpc: true });
}, { timeout: 120_000 });

after(async () => {
  await cell?.cell.stopAll();
});

async function setTenant(name: string, limits: Record<string, number | null>): Promise<void> {
  const answer = await http(`${url()}/v1/tenants/${name}`, putJson({ prefixes: [`/${name}/`], limits }));
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  const version = answer.body.version as number;
  for (let i = 0; i < 3; i++) {
    for (let tries = 0; (await http(`${url(i)}/v1/tenants`)).body.version < version; tries++) {
      assert.ok(tries < 100, 'the tenant table reaches every member');
      await sleep(50);
    }
  }
}

/** The tenant as member `i` answers GET /v1/tenants: limits, stored use and its own admission use. */
async function tenantOn(i: number, name: string): Promise<any> {
  const answer = await http(`${url(i)}/v1/tenants`);
  return (answer.body.tenants as any[]).find((t) => t.name === name);
}

function metric(text: string, series: string): number | null {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? null : Number(line.split(' ')[1]);
}

/** Writes `value`-sized puts under `prefix` (4 in flight) until `done()` or the bounds; their revisions. */
async function writeUntil(prefix: string, value: string, done: () => Promise<boolean> | boolean, maxWrites: number, maxMs: number): Promise<number[]> {
  const deadline = performance.now() + maxMs;
  const revisions: number[] = [];
  let written = 0;
  let stop = false;
  await Promise.all(Array.from({ length: 4 }, async (_, w) => {
    while (!stop && written < maxWrites && performance.now() < deadline) {
      const answer = await fetch(`${url(1)}/v1/kv${prefix}w${w}`, { method: 'PUT', body: value, signal: AbortSignal.timeout(10_000) });
      const body = (await answer.json()) as { revision?: number };
      if (answer.status === 201 || answer.status === 200) {
        written++;
        revisions.push(body.revision as number);
      }
      if (written % 8 === 0 && (await done())) stop = true;
    }
  }));
  return revisions.sort((x, y) => x - y);
}

const percentile = (values: number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? Number.NaN;
};

/**
 * B's delivery while `load` runs: B puts 20 keys a second on member 1 (its value the send time),
 * three SSE watchers of B on member 0 (where A's reader stalls) and one on member 2 (the reference,
 * same phase, same machine load) record each event's arrival. Returns the delays (ms) of every
 * (watcher, event) pair, per member, and checks every watcher saw every event once, in order.
 */
async function measureB(tag: string, load: () => Promise<unknown>, minMs: number): Promise<{ member0: number[]; member2: number[] }> {
  const members = [0, 0, 0, 2];
  const watchers = members.map((m) => new SseClient(`${url(m)}/v1/watch?key=/b/&prefix=true`));
  for (const w of watchers) await w.until((m) => m.length >= 1, 10_000);
  const result = { member0: [] as number[], member2: [] as number[] };
  const arrivals = new Map<SseClient, number[]>();
  for (const [i, w] of watchers.entries()) {
    const delays = members[i] === 0 ? result.member0 : result.member2;
    arrivals.set(w, []);
    w.response.on('data', () => {
      // Messages are parsed as they arrive (SseClient.feed runs first): time the new ones.
      const now = performance.now();
      const seen = arrivals.get(w) as number[];
      for (const message of w.messages.slice(seen.length)) {
        seen.push(now);
        for (const event of message.events ?? []) delays.push(now - Number(event.kv.value.split(':')[1]));
      }
    });
  }
  let running = true;
  const sent: number[] = [];
  const writer = (async () => {
    for (let i = 0; running; i++) {
      const due = performance.now();
      const answer = await http(`${url(1)}/v1/kv/b/k${i % 10}`, { method: 'PUT', body: `${tag}:${due}` });
      assert.equal(answer.status === 200 || answer.status === 201, true, JSON.stringify(answer.body));
      sent.push(answer.body.revision as number);
      await sleep(Math.max(0, 50 - (performance.now() - due)));
    }
  })();
  const started = performance.now();
  await load();
  const left = minMs - (performance.now() - started);
  if (left > 0) await sleep(left);
  running = false;
  await writer;
  for (const w of watchers) {
    await w.until((m) => m.flatMap((b) => b.events ?? []).length >= sent.length || m.some((b) => b.error !== undefined), 20_000);
    const revisions = w.messages.flatMap((b) => b.events ?? []).map((e: any) => e.kv.modRevision);
    assert.equal(w.messages.find((b) => b.error !== undefined), undefined, 'B\'s watchers are never ended');
    assert.deepEqual(revisions, sent, 'every B watcher saw every B event, once, in order');
    w.close();
  }
  return result;
}

test('a stalled reader over maxWatchBytes ends resumable, naming the quota; B\'s watchers on the same member see every event, delivery p99 not hurt', { timeout: 240_000 }, async () => {
  const limit = 256 * 1024;
  await setTenant('a', { maxWatchBytes: limit, maxWatches: 8 });
  await setTenant('b', {});
  const value = 'x'.repeat(16 * 1024);
  // Without the stall: A writes the same load, no A watcher.
  const without = await measureB('without', () => writeUntil('/a/', value, () => false, 300, 6_000), 6_000);
  // With it: A's reader stops reading; A writes until member 0 ends it for its bytes.
  const start = (await http(`${url(0)}/v1/kv/a/start`, { method: 'PUT', body: 's' })).body.revision as number;
  const stalled = new SseClient(`${url(0)}/v1/watch?key=/a/&prefix=true&startRevision=${start + 1}`);
  await sleep(200);
  stalled.response.pause();
  let written: number[] = [];
  const withStall = await measureB('with', async () => {
    written = await writeUntil('/a/', value, async () => ((await tenantOn(0, 'a'))?.onThisNode?.slowWatchersEnded ?? 0) >= 1, 4_000, 90_000);
  }, 6_000);
  const a = await tenantOn(0, 'a');
  assert.ok(a.onThisNode.slowWatchersEnded >= 1, `A's stalled watcher was ended after ${written.length} writes`);
  const last = written.at(-1) as number;
  // The reader comes back: it gets what was already on its socket, then the end naming the quota.
  stalled.response.resume();
  await stalled.done;
  const end = stalled.messages.at(-1)?.error;
  assert.equal(end?.code, 'slow_consumer', JSON.stringify(end));
  assert.deepEqual([end.tenant, end.quota, end.limit], ['a', 'watch_bytes', limit]);
  assert.ok(end.used > limit, JSON.stringify(end));
  const seen = stalled.messages.flatMap((b) => b.events ?? []).map((e: any) => e.kv.modRevision as number);
  assert.ok(seen.length < written.length, 'it had not received everything');
  assert.ok(seen.every((r) => r <= end.lastRevision), 'nothing past the revision it names');
  // Resumed after lastRevision: every A event once, in order, no gap.
  const resumed = new SseClient(`${url(0)}/v1/watch?key=/a/&prefix=true&startRevision=${end.lastRevision + 1}`);
  await resumed.until((m) => m.flatMap((b) => b.events ?? []).some((e: any) => e.kv.modRevision >= last), 30_000);
  resumed.close();
  const all = [...seen, ...resumed.messages.flatMap((b) => b.events ?? []).map((e: any) => e.kv.modRevision as number)];
  assert.deepEqual(all.filter((r) => r <= last), written, 'A saw each of its writes once, in order, across the end and the resume');
  const show = (d: number[]): string => `p50 ${percentile(d, 50).toFixed(1)} p99 ${percentile(d, 99).toFixed(1)} ms (${d.length})`;
  console.log(`B delivery without the stall: member 0 ${show(without.member0)}, member 2 ${show(without.member2)}; with A stalled over its quota on member 0: member 0 ${show(withStall.member0)}, member 2 ${show(withStall.member2)}; A wrote ${written.length} x 16 KiB before its watcher ended`);
  // "Not hurt" is judged within the stalled phase, against B's watcher on member 2: both see the
  // same writes under the same machine load (a neighbouring test on two cores moves every figure
  // together), only member 0 carries A's stalled reader.
  const p99Stalled = percentile(withStall.member0, 99);
  const p99Reference = percentile(withStall.member2, 99);
  assert.ok(p99Stalled <= Math.max(2 * p99Reference, p99Reference + 100), `B's delivery p99 on member 0 (A stalled there) ${p99Stalled.toFixed(1)} ms vs ${p99Reference.toFixed(1)} ms on member 2 in the same phase`);
  const text = (await http(`${url(0)}/metrics`)).body as string;
  assert.ok((metric(text, 'baton_tenant_slow_watchers_total{tenant="a"}') ?? 0) >= 1);
  assert.equal(metric(text, 'baton_tenant_slow_watchers_total{tenant="b"}'), 0, 'never B\'s');
  assert.equal(metric(text, 'baton_tenant_quota_limit{tenant="a",quota="watch_bytes"}'), limit);
});

test('a watch past maxWatches, or while its tenant is over its buffered bytes, is refused with the details on HTTP, the stream and gRPC', { timeout: 180_000 }, async () => {
  await setTenant('q', { maxWatches: 2, maxWatchBytes: 64 * 1024 * 1024 });
  const start = (await http(`${url(0)}/v1/kv/q/start`, { method: 'PUT', body: 's' })).body.revision as number;
  const stalled = new SseClient(`${url(0)}/v1/watch?key=/q/&prefix=true&startRevision=${start + 1}`);
  await sleep(200);
  stalled.response.pause();
  const second = new SseClient(`${url(0)}/v1/watch?key=/q/other/`);
  await second.until((m) => m.length >= 1, 10_000);
  // Past the count: 429 with the details and a Retry-After.
  const third = await http(`${url(0)}/v1/watch?key=/q/x`, { timeoutMs: 10_000 });
  assert.equal(third.status, 429, JSON.stringify(third.body));
  assert.deepEqual([third.body.error.code, third.body.error.tenant, third.body.error.quota, third.body.error.limit, third.body.error.used], ['quota_exceeded', 'q', 'watches', 2, 2]);
  assert.ok(Number(third.headers.get('retry-after')) >= 1, 'a Retry-After');
  // On the stream: an error frame with the details and the guidance.
  const stream = await StreamClient.open(`${url(0).replace('http', 'ws')}/v1/stream`);
  stream.send({ id: 1, type: 'watch', key: '/q/y' });
  await stream.until((f) => f.some((x: any) => x.id === 1), 10_000);
  const frame = stream.of(1)[0];
  assert.equal(frame.type, 'error', JSON.stringify(frame));
  assert.deepEqual([frame.error.code, frame.error.quota, frame.error.limit], ['quota_exceeded', 'watches', 2]);
  assert.ok(frame.error.retryAfterSeconds >= 1, JSON.stringify(frame));
  stream.close();
  second.close();
  for (let tries = 0; (await tenantOn(0, 'q')).onThisNode.used.watches > 1; tries++) {
    assert.ok(tries < 100, 'the closed watch gives its slot back');
    await sleep(50);
  }
  // Bytes: the stalled reader's queue grows past what its kernel buffers hold.
  // The kernel's socket buffers grow under load (autotuning), so a queue seen past 128 KiB once can
  // still drain into them; write until two samples in a row are past it.
  const value = 'y'.repeat(16 * 1024);
  const buffered = async (): Promise<number> => ((await tenantOn(0, 'q')).onThisNode.used.watch_bytes ?? 0) as number;
  let used = 0;
  for (let rounds = 0; used <= 128 * 1024; rounds++) {
    assert.ok(rounds < 20, `buffered ${used} after ${rounds} rounds of writes`);
    await writeUntil('/q/', value, async () => (await buffered()) > 128 * 1024, 4_000, 90_000);
    used = await buffered();
  }
  await setTenant('q', { maxWatches: 2, maxWatchBytes: 64 * 1024 });
  const refused = await http(`${url(0)}/v1/watch?key=/q/z`, { timeoutMs: 10_000 });
  assert.equal(refused.status, 429, JSON.stringify(refused.body));
  assert.deepEqual([refused.body.error.tenant, refused.body.error.quota, refused.body.error.limit], ['q', 'watch_bytes', 64 * 1024]);
  assert.ok(refused.body.error.used > 64 * 1024, JSON.stringify(refused.body));
  assert.ok(Number(refused.headers.get('retry-after')) >= 1);
  // gRPC: the create is canceled with etcd's rate-limit words and the quota; the stream goes on.
  const definition = loadSync(['rpc.proto'], { includeDirs: [protoDir()], keepCase: true, longs: String, defaults: true, oneofs: true });
  const root = loadPackageDefinition(definition);
  const watch = new ((root['etcdserverpb'] as GrpcObject)['Watch'] as ServiceClientConstructor)(cell.cell.grpcEndpoint(cell.names[0] as string), credentials.createInsecure());
  const grpcStream = (watch as unknown as Record<string, Function>)['Watch']!.call(watch);
  const answers: Array<{ canceled: boolean; cancel_reason: string }> = [];
  grpcStream.on('data', (message: (typeof answers)[number]) => answers.push(message));
  grpcStream.on('error', () => undefined);
  try {
    grpcStream.write({ create_request: { key: Buffer.from('q/g') } });
    for (let tries = 0; answers.length < 1; tries++) {
      assert.ok(tries < 200, 'an answer on the watch stream');
      await sleep(50);
    }
    assert.equal(answers[0]?.canceled, true);
    assert.match(answers[0]?.cancel_reason ?? '', /^etcdserver: too many requests \(tenant q is over its watch_bytes quota/);
  } finally {
    grpcStream.end();
    watch.close();
  }
  // The next events shed the stalled watcher (the lowered limit): watches are admitted again.
  assert.equal((await http(`${url(1)}/v1/kv/q/after`, { method: 'PUT', body: 'v' })).status, 201);
  for (let tries = 0; (await tenantOn(0, 'q')).onThisNode.slowWatchersEnded < 1; tries++) {
    assert.ok(tries < 200, 'the stalled watcher is ended at the next events');
    await sleep(50);
  }
  const again = new SseClient(`${url(0)}/v1/watch?key=/q/z`);
  await again.until((m) => m.length >= 1, 10_000);
  assert.equal(again.status, 200);
  again.close();
  stalled.close();
  const shown = await baton(['tenant', 'show', 'q', '--endpoints', url(0)]);
  assert.equal(shown.code, 0, shown.stderr);
  // Refused here: two watches (HTTP, stream), two for the bytes (HTTP, gRPC).
  assert.match(shown.stdout, /watch bytes buffered \(this node\)\s*\|\s*\d+\s*\|\s*65536\s*\|\s*2\s*\|/);
  assert.match(shown.stdout, /watches \(this node\)\s*\|\s*\d+\s*\|\s*2\s*\|\s*2\s*\|/);
  assert.match(shown.stdout, /slow watchers ended here for watch bytes: 1/);
});

test('eventsPerSecond paces a tenant\'s delivery on a member: every event, in order, no faster than the rate; another member is not paced', { timeout: 120_000 }, async () => {
  const rate = 20;
  await setTenant('paced', { eventsPerSecond: rate });
  const start = (await http(`${url(0)}/v1/kv/paced/start`, { method: 'PUT', body: 's' })).body.revision as number;
  const watcher = new SseClient(`${url(0)}/v1/watch?key=/paced/&prefix=true&startRevision=${start + 1}`);
  await sleep(200);
  const arrivals: Array<{ revision: number; atMs: number }> = [];
  watcher.response.on('data', () => {
    const now = performance.now();
    for (const e of watcher.messages.flatMap((b) => b.events ?? []).slice(arrivals.length)) arrivals.push({ revision: e.kv.modRevision, atMs: now });
  });
  const total = 100;
  const revisions: number[] = [];
  await Promise.all(Array.from({ length: 8 }, async (_, w) => {
    for (let i = w; i < total; i += 8) {
      const answer = await http(`${url(1)}/v1/kv/paced/k${i}`, { method: 'PUT', body: String(i) });
      assert.equal(answer.status, 201, JSON.stringify(answer.body));
      revisions.push(answer.body.revision as number);
    }
  }));
  const writtenAt = performance.now();
  await watcher.until((m) => m.flatMap((b) => b.events ?? []).length >= total, 60_000);
  watcher.close();
  revisions.sort((x, y) => x - y);
  assert.deepEqual(arrivals.map((a) => a.revision), revisions, 'every event, once, in order');
  const span = (arrivals.at(-1)!.atMs - arrivals[0]!.atMs) / 1000;
  // A second's burst, then the rate: (100 - 20) / 20 = 4 s at least (a batch may owe a little).
  assert.ok(span >= (total - rate) / rate - 0.6, `delivered over ${span.toFixed(2)} s`);
  const afterFirstSecond = arrivals.filter((a) => a.atMs >= arrivals[0]!.atMs + 1000);
  if (afterFirstSecond.length > 10) {
    const rateSeen = (afterFirstSecond.length - 1) / ((afterFirstSecond.at(-1)!.atMs - afterFirstSecond[0]!.atMs) / 1000);
    assert.ok(rateSeen <= rate * 1.3, `after the burst ${rateSeen.toFixed(1)} events/s, limit ${rate}`);
  }
  // Member 2 keeps its own bucket: a watcher there was not held by member 0's (per node).
  const elsewhere = new SseClient(`${url(2)}/v1/watch?key=/paced/&prefix=true&startRevision=${start + 1}`);
  await elsewhere.until((m) => m.flatMap((b) => b.events ?? []).length >= rate, 10_000);
  elsewhere.close();
  const text = (await http(`${url(0)}/metrics`)).body as string;
  assert.ok((metric(text, 'baton_tenant_watch_paced_total{tenant="paced"}') ?? 0) > 0, 'the waits are counted');
  assert.equal(metric(text, 'baton_tenant_quota_limit{tenant="paced",quota="events_per_second"}'), rate);
  console.log(`paced: ${total} events written in ${((writtenAt - arrivals[0]!.atMs) / 1000).toFixed(2)} s after the first arrival, delivered over ${span.toFixed(2)} s at ${rate}/s`);
});
