// A member cut off from the others by fault proxies (real TCP between real processes) cannot
// serve linearizable reads or take writes: it answers 503, while serializable reads still work
// and say they may be stale. The majority keeps serving; after healing the member catches up.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findLeader, http, sleep, startTestCell } from './harness.js';

test('a partitioned minority member answers 503 to linearizable reads and writes', async () => {
  const cell = await startTestCell({ proxies: true });
  try {
    await http(`${cell.cell.clientUrl('n1')}/v1/kv/p`, { method: 'PUT', body: 'before' });
    const leader = await findLeader(cell);
    const minority = cell.names.find((n) => n !== leader) as string;
    cell.isolate(minority);
    await sleep(2000); // past the election timeout: it no longer believes in a leader
    const url = cell.cell.clientUrl(minority);
    const read = await http(`${url}/v1/kv/p`);
    assert.equal(read.status, 503, JSON.stringify(read.body));
    assert.equal(read.body.error.code, 'unavailable');
    assert.ok(read.headers.get('retry-after') !== null);
    const write = await http(`${url}/v1/kv/p`, { method: 'PUT', body: 'minority' });
    assert.equal(write.status, 503, JSON.stringify(write.body));
    const stale = await http(`${url}/v1/kv/p?consistency=serializable`);
    assert.equal(stale.status, 200);
    assert.equal(stale.body.consistency, 'serializable');
    // The majority still serves.
    const majority = cell.names.find((n) => n !== minority) as string;
    const ok = await http(`${cell.cell.clientUrl(majority)}/v1/kv/p`, { method: 'PUT', body: 'majority' });
    assert.equal(ok.status, 200);
    cell.healAll();
    const deadline = Date.now() + 10_000;
    let healed;
    do {
      await sleep(200);
      healed = await http(`${url}/v1/kv/p`).catch(() => null);
    } while ((healed?.status !== 200 || healed.body.kvs[0].value !== 'majority') && Date.now() < deadline);
    assert.equal(healed?.body.kvs[0].value, 'majority');
  } finally {
    await cell.close();
  }
});
