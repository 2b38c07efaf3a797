// A write applied on the source whose answer was lost, then its namespace moved away: the client's
// retry with the same Request-ID gets the first answer from the source (which still holds the
// record) as from the destination (which got a copy with the move), not wrong_cell from the source
// (fault run across cells, seed 3: a put reported refused was read back). Real processes: a control
// plane and two one-member cells; requests sent to each cell directly (no router, no client
// library retries). A new Request-ID at the source is still 421 wrong_cell naming the destination,
// and the same Request-ID with another body is request_id_reused: no false "success".
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { http, moveAndWait, startTwoCells, type HttpAnswer, type TestCell } from './harness.js';

let control: TestCell;
let cell1: TestCell;
let cell2: TestCell;

before(async () => {
  [control, cell1, cell2] = await startTwoCells();
}, { timeout: 120_000 });

after(async () => {
  await Promise.all([control, cell1, cell2].map((cell) => cell?.close())); // also removes their data directories
});

const json = (body: unknown, requestId?: string): RequestInit => ({
  method: 'POST', body: JSON.stringify(body),
  headers: { 'content-type': 'application/json', ...(requestId === undefined ? {} : { 'request-id': requestId }) },
});
const putWith = (url: string, key: string, value: string, requestId: string): Promise<HttpAnswer> =>
  http(`${url}/v1/kv${key}`, { method: 'PUT', body: value, headers: { 'request-id': requestId } });
/** Compare-and-set: create `key` only if absent (a retry applied anew would take the failure branch). */
const createIfAbsent = (key: string, value: string) => ({ compare: [{ key, target: 'version', op: '==', value: 0 }], success: [{ put: { key, value } }], failure: [] });

test('a retry of a write applied before the move gets the first answer from the source and from the destination; a new Request-ID is wrong_cell', { timeout: 120_000 }, async () => {
  const controlUrl = control.cell.clientUrls()[0] as string;
  const source = cell1.cell.clientUrls()[0] as string;
  const destination = cell2.cell.clientUrls()[0] as string;
  assert.equal((await http(`${controlUrl}/v1/control/namespaces`, json({ prefix: '/rq/', cell: 'cell-1' }))).status, 200);

  // Applied on the source; the client never saw these answers.
  const put = await putWith(source, '/rq/k', 'once', 'rq-put-1');
  assert.equal(put.status, 201, JSON.stringify(put.body));
  const txn = await http(`${source}/v1/txn`, json(createIfAbsent('/rq/t', 'first'), 'rq-txn-1'));
  assert.equal(txn.status, 200, JSON.stringify(txn.body));
  assert.equal(txn.body.succeeded, true);

  await moveAndWait(controlUrl, '/rq/', 'cell-2');

  // The retries at the source: the first outcome (same revision), not 421.
  const putAtSource = await putWith(source, '/rq/k', 'once', 'rq-put-1');
  assert.equal(putAtSource.status, put.status, JSON.stringify(putAtSource.body));
  assert.deepEqual(putAtSource.body, put.body);
  const txnAtSource = await http(`${source}/v1/txn`, json(createIfAbsent('/rq/t', 'first'), 'rq-txn-1'));
  assert.equal(txnAtSource.status, 200, JSON.stringify(txnAtSource.body));
  assert.deepEqual(txnAtSource.body, txn.body, 'the txn\'s first branch, not its other one');

  // The destination answers the same from the record moved with the namespace.
  const putAtDestination = await putWith(destination, '/rq/k', 'once', 'rq-put-1');
  assert.equal(putAtDestination.status, put.status, JSON.stringify(putAtDestination.body));
  assert.deepEqual(putAtDestination.body, put.body);
  const txnAtDestination = await http(`${destination}/v1/txn`, json(createIfAbsent('/rq/t', 'first'), 'rq-txn-1'));
  assert.deepEqual(txnAtDestination.body, txn.body);

  // Written once each: on the destination, and cleaned from the source.
  const kvs = (await http(`${destination}/v1/kv/rq/?prefix=true`)).body.kvs as { key: string; version: number; modRevision: number }[];
  assert.deepEqual(kvs.map((kv) => [kv.key, kv.version]), [['/rq/k', 1], ['/rq/t', 1]]);
  assert.equal(kvs[0]?.modRevision, put.body.revision);

  // No false success: a Request-ID the source never applied is refused, naming the destination.
  const fresh = await putWith(source, '/rq/k', 'once', 'rq-put-2');
  assert.equal(fresh.status, 421, JSON.stringify(fresh.body));
  assert.equal(fresh.body.error.code, 'wrong_cell');
  assert.equal(fresh.body.error.cell, 'cell-2');
  const freshTxn = await http(`${source}/v1/txn`, json(createIfAbsent('/rq/t', 'first'), 'rq-txn-2'));
  assert.equal(freshTxn.status, 421, JSON.stringify(freshTxn.body));
  // The same Request-ID with another body: the existing conflict answer, at the source as at the destination.
  const reused = await putWith(source, '/rq/k', 'twice', 'rq-put-1');
  assert.equal(reused.status, 409, JSON.stringify(reused.body));
  assert.equal(reused.body.error.code, 'request_id_reused');
  assert.equal((await putWith(destination, '/rq/k', 'twice', 'rq-put-1')).body.error?.code, 'request_id_reused');
  assert.equal((await http(`${destination}/v1/kv/rq/k`)).body.kvs[0]?.version, 1);
});

test('moved there and back: the move back lists only the records stamped since the arrival, and every retry still gets its first answer', { timeout: 120_000 }, async () => {
  const controlUrl = control.cell.clientUrls()[0] as string;
  const first = cell1.cell.clientUrls()[0] as string;
  const second = cell2.cell.clientUrls()[0] as string;
  assert.equal((await http(`${controlUrl}/v1/control/namespaces`, json({ prefix: '/rb/', cell: 'cell-1' }))).status, 200);
  const before = await putWith(first, '/rb/a', 'one', 'rb-before');
  assert.equal(before.status, 201, JSON.stringify(before.body));

  await moveAndWait(controlUrl, '/rb/', 'cell-2');
  const there = (await http(`${controlUrl}/v1/control/namespaces/rb/`)).body;
  const arrival = there.arrivedFrom as { cell: string; requestsFromMs: number };
  assert.equal(arrival.cell, 'cell-1', JSON.stringify(there));
  // Written on cell-2 after its arrival: stamped at or after the clock read before the fence.
  const between = await putWith(second, '/rb/b', 'two', 'rb-between');
  assert.equal(between.status, 201, JSON.stringify(between.body));

  await moveAndWait(controlUrl, '/rb/', 'cell-1');
  const back = (await http(`${controlUrl}/v1/control/namespaces/rb/`)).body;
  assert.equal(back.move.requestsFromMs, arrival.requestsFromMs, 'the move back listed from the arrival');
  assert.equal(back.arrivedFrom.cell, 'cell-2');

  // cell-1 answers both retries with their first outcomes: its own record and the one moved back.
  for (const [key, value, id, answer] of [['/rb/a', 'one', 'rb-before', before], ['/rb/b', 'two', 'rb-between', between]] as const) {
    const retried = await putWith(first, key, value, id);
    assert.equal(retried.status, answer.status, JSON.stringify(retried.body));
    assert.deepEqual(retried.body, answer.body, `${id}: the first answer, not a second write`);
  }
  const kvs = (await http(`${first}/v1/kv/rb/?prefix=true`)).body.kvs as { key: string; version: number }[];
  assert.deepEqual(kvs.map((kv) => [kv.key, kv.version]), [['/rb/a', 1], ['/rb/b', 1]]);
});
