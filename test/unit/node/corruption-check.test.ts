// The leader's corruption check over stub members: the member whose HashKV differs from the
// majority is raised CORRUPT (the leader too), members not at the revision or with another
// compact revision sit the round out, and without a majority nothing is raised.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AlarmTable } from '../../../src/api/alarms.js';
import { hashKeySpace, type HashableStore } from '../../../src/mvcc/index.js';
import { CorruptionCheck } from '../../../src/node/corruption-check.js';

const store: HashableStore = {
  revision: 50,
  compactRevision: 10,
  range: () => ({ type: 'get', revision: 50, count: 0, more: false, kvs: [] }),
  events: () => [],
};
const mine = hashKeySpace(store).hash;

async function round(answers: Record<string, { status: number; body?: unknown }>): Promise<{ corrupt: number[]; alarms: string[] }> {
  const realFetch = globalThis.fetch;
  globalThis.fetch = (async (url: string | URL) => {
    const answer = answers[new URL(String(url)).host] ?? { status: 503 };
    return new Response(JSON.stringify(answer.body ?? {}), { status: answer.status });
  }) as typeof fetch;
  try {
    const alarms = new AlarmTable();
    const check = new CorruptionCheck({
      everyMs: 0,
      memberId: 1,
      isLeader: () => true,
      members: () => [{ id: 1, clientUrl: 'http://m1:1' }, { id: 2, clientUrl: 'http://m2:1' }, { id: 3, clientUrl: 'http://m3:1' }],
      store,
      alarms,
      log: { warn: () => {} },
    });
    return { corrupt: await check.checkOnce(), alarms: alarms.errors() };
  } finally {
    globalThis.fetch = realFetch;
  }
}

const at = (hash: number, revision = 50, compactRevision = 10): { status: number; body: unknown } =>
  ({ status: 200, body: { hash, revision, compactRevision } });

test('the odd member out is raised CORRUPT, the leader included; no majority, no alarm', async () => {
  assert.deepEqual(await round({ 'm2:1': at(mine), 'm3:1': at(mine) }), { corrupt: [], alarms: [] });
  assert.deepEqual(await round({ 'm2:1': at(mine), 'm3:1': at(mine + 1) }), { corrupt: [3], alarms: ['memberID:3 alarm:CORRUPT'] });
  assert.deepEqual((await round({ 'm2:1': at(7), 'm3:1': at(7) })).corrupt, [1], 'the leader disagrees with both');
  // Not at the revision yet (400), another compact revision: out of this round, 1 against 1 is no majority.
  assert.deepEqual(await round({ 'm2:1': { status: 400 }, 'm3:1': at(mine + 1) }), { corrupt: [], alarms: [] });
  assert.deepEqual(await round({ 'm2:1': at(mine + 1, 50, 20), 'm3:1': at(mine) }), { corrupt: [], alarms: [] });
});
