// Service registration and discovery against a real 3-process cell: instances live on their
// session's lease; a discovered set is exact (list-at-R, then watch-after-R), keeps serving its
// last known state while its connection is cut, catches up afterwards, and lists again when the
// history it needed was compacted meanwhile.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { FaultProxy, freePorts, sleep, startTestCell, type TestCell } from './harness.js';
import { BatonClient, TooLargeError, type ServiceInstance, type ServiceSet } from '../../src/client/index.js';

let cell: TestCell;

before(async () => {
  cell = await startTestCell();
});

after(async () => {
  await cell?.close();
});

async function until(what: string, check: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

const ids = (set: ServiceSet): string[] => [...set.instances.keys()].sort();

test('register on a session lease; discover follows registrations and session ends', async () => {
  const a = new BatonClient({ endpoints: cell.cell.clientUrls() });
  const b = new BatonClient({ endpoints: cell.cell.clientUrls() });
  const watcher = new BatonClient({ endpoints: cell.cell.clientUrls() });
  try {
    const sessionA = await a.session({ ttlSeconds: 5 });
    const sessionB = await b.session({ ttlSeconds: 5 });
    await a.services(sessionA).register('payments', 'pod-a', { url: 'http://10.0.0.1:8080' });
    const set = watcher.services().discover('payments');
    const changes: ReadonlyMap<string, ServiceInstance>[] = [];
    set.on('change', (instances) => changes.push(instances));
    await set.ready;
    assert.deepEqual(ids(set), ['pod-a']);
    assert.deepEqual(set.instances.get('pod-a')?.metadata, { url: 'http://10.0.0.1:8080' });
    assert.equal(set.instances.get('pod-a')?.lease, sessionA.leaseId);

    const registration = await b.services(sessionB).register('payments', 'pod-b', { url: 'http://10.0.0.2:8080' });
    await until('pod-b', () => set.instances.has('pod-b'));
    assert.ok(set.revision >= registration.revision);

    await sessionA.close(); // revokes the lease: pod-a's key goes with it
    await until('pod-a gone', () => !set.instances.has('pod-a'));
    assert.deepEqual(ids(set), ['pod-b']);
    await registration.deregister();
    await until('empty', () => set.instances.size === 0);
    assert.ok(changes.length >= 4, `${changes.length} change events`);

    await assert.rejects(b.services(sessionB).register('payments/x', 'id', {}), { code: 'invalid_argument' });
    await assert.rejects(b.services(sessionB).register('payments', 'big', { blob: 'x'.repeat(5_000) }), TooLargeError);
    set.close();
  } finally {
    await Promise.all([a.close(), b.close(), watcher.close()]);
  }
});

test('a cut connection: the set serves its last known state, then catches up; compaction meanwhile → re-list', async () => {
  const target = cell.names[0] as string;
  const [port] = await freePorts(1);
  const proxy = await FaultProxy.start(port as number, Number(new URL(cell.cell.clientUrl(target)).port));
  const watcher = new BatonClient({ endpoints: [`http://127.0.0.1:${port}`], discover: false, retry: { deadlineMs: 60_000, attemptsMax: 100 } });
  const writer = new BatonClient({ endpoints: cell.cell.clientUrls() });
  try {
    const session = await writer.session({ ttlSeconds: 30 });
    const services = writer.services(session);
    await services.register('search', 'one', { n: 1 });
    const set = watcher.services().discover('search');
    await set.ready;
    assert.deepEqual(ids(set), ['one']);
    assert.equal(set.listings, 1);

    proxy.block();
    await services.register('search', 'two', { n: 2 });
    await sleep(500);
    assert.deepEqual(ids(set), ['one'], 'the last known set is still served while cut off');
    const three = await services.register('search', 'three', { n: 3 });
    // History the set's watch would resume from is compacted while it is away.
    await writer.compact(three.revision);
    proxy.unblock();
    await until('caught up', () => set.instances.size === 3, 20_000);
    assert.deepEqual(ids(set), ['one', 'three', 'two']);
    assert.ok(set.listings >= 2, `listed again after compaction (${set.listings} listings)`);
    assert.ok(set.revision >= three.revision);
    set.close();
    await session.close();
  } finally {
    await watcher.close();
    await writer.close();
    await proxy.close();
  }
});
