// Batch lease grants (POST /v1/leases/batch, issue 31: sessions creatable in batches) on a real
// 3-process cell: a batch through a follower grants every lease once in one log entry
// (leaseGrantBatch, op 19: a new cell's store format allows it), each alive with its TTL on
// every member; the same batch retried with its Request-ID grants nothing more; bad counts and
// too-long Request-IDs are refused with the limit in the details; and the grant rate of batches
// against single grants in the same run is printed (a figure, not a bar: the machine is shared).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { BatonClient } from '../../src/client/index.js';
import { findLeader, http, startTestCell, type TestCell } from './harness.js';

let cell: TestCell;

before(async () => {
  cell = await startTestCell();
});

after(async () => {
  await cell?.close();
});

async function leaseCount(url: string): Promise<number> {
  let count = 0;
  for (let after = 0, page = 0; page < 100; page++) {
    const res = await http(`${url}/v1/leases?after=${after}&limit=10000`);
    assert.equal(res.status, 200);
    count += res.body.leases.length;
    if (!res.body.more) return count;
    after = res.body.leases.at(-1).id;
  }
  return count;
}

test('a batch grants every lease once through a follower, and a retry with its Request-ID grants nothing more', { timeout: 60_000 }, async () => {
  const leader = await findLeader(cell);
  const follower = cell.names.find((n) => n !== leader) as string;
  const url = cell.cell.clientUrl(follower);
  const before = await leaseCount(url);
  const send = () => http(`${url}/v1/leases/batch`, {
    method: 'POST', headers: { 'request-id': 'batch-test-1' }, body: JSON.stringify({ ttl: 60, count: 1000 }), timeoutMs: 20_000,
  });
  const commitIndex = async (): Promise<number> => (await http(`${cell.cell.clientUrl(leader)}/v1/cluster/status`)).body.commitIndex as number;
  const indexBefore = await commitIndex();
  const first = await send();
  assert.equal(first.status, 200, JSON.stringify(first.body));
  // One entry for the 1,000 grants (a lease checkpoint or two may commit meanwhile), not 1,000.
  const entries = (await commitIndex()) - indexBefore;
  assert.ok(entries >= 1 && entries <= 10, `the batch took ${entries} log entries`);
  const leases = first.body.leases as { id: number; ttl: number }[];
  assert.equal(leases.length, 1000);
  assert.ok(leases.every((l) => Number.isSafeInteger(l.id) && l.ttl === 60), JSON.stringify(leases.slice(0, 3)));
  assert.equal(new Set(leases.map((l) => l.id)).size, 1000, 'distinct ids');
  assert.ok(Number.isSafeInteger(first.body.revision), 'the answer names the revision');
  const again = await send();
  assert.equal(again.status, 200);
  assert.deepEqual((again.body.leases as { id: number }[]).map((l) => l.id), leases.map((l) => l.id), 'the retry answers the same leases');
  for (const name of cell.names) {
    const member = cell.cell.clientUrl(name);
    for (const { id } of [leases[0], leases[499], leases[999]] as { id: number }[]) {
      const info = await http(`${member}/v1/leases/${id}`);
      assert.equal(info.status, 200, `lease ${id} on ${name}`);
      assert.ok(info.body.ttl > 50 && info.body.grantedTtl === 60);
    }
  }
  assert.equal(await leaseCount(cell.cell.clientUrl(leader)), before + 1000, 'exactly 1000 more leases');
});

test('a batch refuses a count outside 1..1000 and a Request-ID without room for the grant suffix', async () => {
  const url = cell.cell.clientUrl('n1');
  for (const count of [0, 1001, 2.5, '10']) {
    const res = await http(`${url}/v1/leases/batch`, { method: 'POST', body: JSON.stringify({ ttl: 60, count }) });
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.equal(res.body.error.code, 'invalid_argument');
    assert.equal(res.body.error.limit, 1000);
  }
  const long = await http(`${url}/v1/leases/batch`, {
    method: 'POST', headers: { 'request-id': 'x'.repeat(126) }, body: JSON.stringify({ ttl: 60, count: 2 }),
  });
  assert.equal(long.status, 400, JSON.stringify(long.body));
  assert.equal(long.body.error.limit, 124);
  const tooShort = await http(`${url}/v1/leases/batch`, { method: 'POST', body: JSON.stringify({ ttl: 0.001, count: 2 }) });
  assert.equal(tooShort.status, 400, 'a TTL below the cell minimum is refused as for one lease');
});

test('the client grants in batches; the rate of batches against single grants, same run', { timeout: 120_000 }, async (t) => {
  const client = new BatonClient({ endpoints: cell.cell.clientUrls() });
  try {
    const batchStarted = performance.now();
    const batches = await Promise.all(Array.from({ length: 8 }, () => client.leaseGrantMany(60, 1000)));
    const batchSeconds = (performance.now() - batchStarted) / 1000;
    const granted = batches.flatMap((b) => b.leases).filter((l) => 'id' in l).length;
    assert.equal(granted, 8000);
    const singleStarted = performance.now();
    let singles = 0;
    await Promise.all(Array.from({ length: 64 }, async () => {
      while (singles < 2000) {
        singles++;
        await client.leaseGrant(60);
      }
    }));
    const singleSeconds = (performance.now() - singleStarted) / 1000;
    const batchRate = 8000 / batchSeconds;
    const singleRate = singles / singleSeconds;
    t.diagnostic(`grants/s: batches of 1000 (8 in flight) ${batchRate.toFixed(0)}, single grants (64 in flight) ${singleRate.toFixed(0)}: ${(batchRate / singleRate).toFixed(1)}x`);
  } finally {
    await client.close();
  }
});
