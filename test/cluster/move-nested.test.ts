// A namespace with namespaces nested in it moves without them (docs/design/cells.md "Nested
// namespaces"): every key belongs to the longest namespace that starts it, so moving /tree/ carries
// /tree/a but not /tree/keep/1 (nested, on the source) and clears nothing of /tree/far/ (nested, on
// the destination). Checked with real processes: after each move (there and back) every key is on
// the cell that owns its namespace with its value and revisions, and the nested namespaces'
// keys are where they were. Creating a namespace over a nested one of another cell counts and
// moves only its own keys (before, the count took the nested keys and refused it).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { http, moveAndWait, postJson as post, startTwoCells, type TestCell } from './harness.js';

let cells: [TestCell, TestCell, TestCell];
const controlUrl = (): string => cells[0].cell.clientUrls()[0] as string;
const urlOf = (cell: string): string => ((cell === 'cell-1' ? cells[1] : cells[2]).cell.clientUrls()[0] as string);

before(async () => {
  cells = await startTwoCells(); // control, cell-1, cell-2; the root namespace is cell-1's
}, { timeout: 120_000 });

after(async () => {
  await Promise.all((cells ?? []).map((cell) => cell.close()));
});

async function create(prefix: string, cell: string): Promise<void> {
  const created = await http(`${controlUrl()}/v1/control/namespaces`, post({ prefix, cell }));
  assert.equal(created.status, 200, `create ${prefix} on ${cell}: ${JSON.stringify(created.body)}`);
  assert.equal(created.body.cell, cell);
}

async function put(cell: string, key: string, value: string): Promise<number> {
  const res = await http(`${urlOf(cell)}/v1/kv${key}`, { method: 'PUT', body: value });
  assert.ok(res.status === 200 || res.status === 201, `put ${key} on ${cell}: ${JSON.stringify(res.body)}`);
  return res.body.revision as number;
}

/** The key as `cell` serves it (linearizable), or its refusal. */
async function read(cell: string, key: string): Promise<{ status: number; value?: string; modRevision?: number; code?: string }> {
  const res = await http(`${urlOf(cell)}/v1/kv${key}`);
  if (res.status !== 200) return { status: res.status, code: res.body.error?.code };
  return { status: 200, value: res.body.kvs[0].value, modRevision: res.body.kvs[0].modRevision };
}

test('a namespace moves there and back without the namespaces nested in it, on either side', { timeout: 120_000 }, async () => {
  await create('/tree/', 'cell-1');
  await create('/tree/keep/', 'cell-1'); // nested, on the source
  await create('/tree/far/', 'cell-2'); // nested, on the destination (a creation move)
  const revisions = new Map<string, number>();
  for (const key of ['/tree/a', '/tree/b', '/tree/kee', '/tree/keep0']) revisions.set(key, await put('cell-1', key, `v${key}`));
  const keepRevision = await put('cell-1', '/tree/keep/1', 'stays on cell-1');
  const farRevision = await put('cell-2', '/tree/far/1', 'stays on cell-2');

  for (const [to, from] of [['cell-2', 'cell-1'], ['cell-1', 'cell-2']] as const) {
    await moveAndWait(controlUrl(), '/tree/', to);
    for (const [key, revision] of revisions) {
      assert.deepEqual(await read(to, key), { status: 200, value: `v${key}`, modRevision: revision }, `${key} moved to ${to} as it was`);
      assert.equal((await read(from, key)).code, 'wrong_cell', `${from} refuses ${key} now`);
    }
    assert.deepEqual(await read('cell-1', '/tree/keep/1'), { status: 200, value: 'stays on cell-1', modRevision: keepRevision }, `after the move to ${to}`);
    assert.deepEqual(await read('cell-2', '/tree/far/1'), { status: 200, value: 'stays on cell-2', modRevision: farRevision }, `after the move to ${to}`);
    // The nested namespaces still take writes where they are, and the moved one where it went.
    await put('cell-1', '/tree/keep/2', `after ${to}`);
    await put('cell-2', '/tree/far/2', `after ${to}`);
    revisions.set('/tree/a', await put(to, '/tree/a', 'v/tree/a'));
  }
  // The source's old copy was cleared, the nested namespaces' keys were not: a prefix read of
  // /tree/keep/ on cell-1 and of /tree/far/ on cell-2 hold exactly what was written there.
  const keysOf = async (cell: string, prefix: string): Promise<string[]> =>
    ((await http(`${urlOf(cell)}/v1/kv${prefix}?prefix=true`)).body.kvs as { key: string }[]).map((kv) => kv.key);
  assert.deepEqual(await keysOf('cell-1', '/tree/keep/'), ['/tree/keep/1', '/tree/keep/2']);
  assert.deepEqual(await keysOf('cell-2', '/tree/far/'), ['/tree/far/1', '/tree/far/2']);
});

test('creating a namespace over a nested one of its parent cell counts and moves its own keys only', { timeout: 60_000 }, async () => {
  await create('/zone/inner/', 'cell-1');
  const innerRevision = await put('cell-1', '/zone/inner/1', 'inner');
  // /zone/ on cell-2: a move of /zone/'s own (empty) range from cell-1; /zone/inner/ stays.
  await create('/zone/', 'cell-2');
  assert.deepEqual(await read('cell-1', '/zone/inner/1'), { status: 200, value: 'inner', modRevision: innerRevision });
  await put('cell-2', '/zone/z', 'on cell-2');
  assert.equal((await read('cell-1', '/zone/z')).code, 'wrong_cell');
  // A key of /zone/ itself on the parent cell still refuses a creation over it (moved, not created).
  await create('/yard/inner/', 'cell-1');
  await put('cell-1', '/yard/own', 'keys of /yard/ on cell-1');
  const refused = await http(`${controlUrl()}/v1/control/namespaces`, post({ prefix: '/yard/', cell: 'cell-2' }));
  assert.equal(refused.status, 400, JSON.stringify(refused.body));
  assert.match(refused.body.error.message, /holds 1 keys under \/yard\//);
});

test('a read of a namespace\'s own keys is administration, and names only namespaces nested in it', { timeout: 30_000 }, async () => {
  const own = await http(`${urlOf('cell-1')}/v1/kv/tree/keep/?prefix=true`);
  assert.equal(own.status, 200);
  const bad = await http(`${urlOf('cell-1')}/v1/kv/zone/inner/?prefix=true&exclude=${encodeURIComponent('/other/')}`);
  assert.equal(bad.status, 400, JSON.stringify(bad.body));
  const notPrefix = await http(`${urlOf('cell-1')}/v1/kv/zone/inner/1?exclude=${encodeURIComponent('/zone/inner/x/')}`);
  assert.equal(notPrefix.status, 400, JSON.stringify(notPrefix.body));
});

test('a namespace\'s own keys a page at a time (a move\'s copy): each once, in order, nested ones left out, a page past the end empty', { timeout: 30_000 }, async () => {
  // /pages/ on cell-1 with /pages/in/ nested in it; keys on both sides of the nested range and
  // one of several UTF-8 bytes, so pages cross the hole and compare in byte order.
  await create('/pages/', 'cell-1');
  await create('/pages/in/', 'cell-1');
  const own = ['/pages/a', '/pages/b', '/pages/i', '/pages/in0', '/pages/io', '/pages/z', '/pages/zz', '/pages/zé']; // byte order: 'z' < 0xc3
  for (const key of [...own, '/pages/in/1', '/pages/in/2']) await put('cell-1', key, `v${key}`);
  const base = `${urlOf('cell-1')}/v1/kv/pages/?prefix=true&exclude=${encodeURIComponent('/pages/in/')}`;
  for (const limit of [1, 2, 3, 100]) {
    const seen: string[] = [];
    let after: string | null = null;
    for (let page = 0; page < 20; page++) {
      const res = await http(`${base}&paged=true&limit=${limit}${after === null ? '' : `&after=${encodeURIComponent(after)}`}`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const keys = (res.body.kvs as { key: string }[]).map((kv) => kv.key);
      assert.ok(keys.length <= limit);
      assert.equal(res.body.count, keys.length, 'a page counts its own keys');
      seen.push(...keys);
      if (!res.body.more) break;
      after = keys[keys.length - 1] as string;
    }
    assert.deepEqual(seen, own, `pages of ${limit}`);
  }
  const past = await http(`${base}&paged=true&limit=5&after=${encodeURIComponent('/pages/zé')}`);
  assert.equal(past.status, 200);
  assert.deepEqual([past.body.kvs.length, past.body.more], [0, false]);
  assert.ok(past.body.revision > 0, 'a page past the end still says its revision');
  for (const bad of ['&paged=true', `&after=${encodeURIComponent('/pages/a')}`, `&paged=true&limit=2&after=${encodeURIComponent('/other/a')}`]) {
    const refused = await http(`${base}${bad}`);
    assert.equal(refused.status, 400, `${bad}: ${JSON.stringify(refused.body)}`);
  }
  const notNamespace = await http(`${urlOf('cell-1')}/v1/kv/pages/a?paged=true&limit=2`);
  assert.equal(notNamespace.status, 400, JSON.stringify(notNamespace.body));
});
