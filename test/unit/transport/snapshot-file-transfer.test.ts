// File to file, as the server wires it (SnapshotTransfers over two transports and two snapshot
// stores on a real disk): a transfer cut mid-way leaves a partial file on the follower, the
// retry resumes from it (the follower logs where), and the follower steps a snapshot whose data
// file holds what the leader saved, with only the final verified file left in its directory.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SnapshotStore } from '../../../src/snap/index.js';
import { SnapshotTransfers } from '../../../src/snap/snapshot-transfer.js';
import type { SnapshotMessage } from '../../../src/transport/index.js';
import { startNode, until } from './tcp-helpers.js';
import { startRelay } from './relay.js';

const mebibyte = 1024 * 1024;
const confState = { voters: [1, 2], votersOutgoing: [], learners: [] };
const meta = { index: 500, term: 4, confState };

/** Relays to `port`; the first connection is cut once `cutAt` bytes went through. */
function cuttingRelay(port: number, cutAt: number) {
  return startRelay({ host: '127.0.0.1', port }, (connection) => {
    let forwarded = 0;
    return (chunk, client, upstream) => {
      forwarded += chunk.length;
      if (connection === 0 && forwarded >= cutAt) return void (client.destroy(), upstream.destroy());
      upstream.write(chunk);
    };
  });
}

test('a snapshot file transfer cut mid-way resumes from the follower\'s partial file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-snapx-'));
  const logs: string[] = [];
  const logger = { info: (m: string) => logs.push(m), warn: (m: string) => logs.push(m) };
  const quiet = { warn: () => {} };
  const leaderStore = new SnapshotStore(join(dir, 'n1'), { logger: quiet });
  const followerStore = new SnapshotStore(join(dir, 'n2'), { logger: quiet });
  const data = Buffer.alloc(12 * mebibyte);
  for (let i = 0; i < data.length; i += 4) data.writeUInt32LE((i * 2654435761) >>> 0, i);
  await leaderStore.save(meta, data);
  const stepped: SnapshotMessage[] = [];
  const leaderTransfers = new SnapshotTransfers(leaderStore, { reportSnapshot: () => {}, logger });
  const followerTransfers = new SnapshotTransfers(followerStore, {
    reportSnapshot: () => {}, logger,
  });
  const n1 = await startNode(1);
  const n2 = await startNode(2, {
    onSnapshot: (incoming) => followerTransfers.receive(incoming, (m) => stepped.push(m)),
  });
  n2.transport.addPeer(1, n1.transport.address());
  const relay = await cuttingRelay(n2.transport.address().port, 7 * mebibyte);
  n1.transport.addPeer(2, { host: '127.0.0.1', port: relay.port });
  try {
    const message: SnapshotMessage = {
      type: 'snapshot', from: 1, to: 2, term: 4, snapshot: { meta, data: new Uint8Array(0) },
    };
    const sender = leaderTransfers.peerSender(n1.transport);
    sender.send([message]);
    await until(() => n1.snapshotReports.length === 1, 'the cut transfer fails', 10_000);
    assert.deepEqual(n1.snapshotReports, [{ to: 2, ok: false }]);
    const partials = () => readdirSync(followerStore.dir).filter((n) => n.endsWith('.partial'));
    await until(() => partials().length === 1, 'a partial file kept');
    sender.send([message]);
    await until(() => n1.snapshotReports.length === 2, 'the retry ends', 10_000);
    assert.deepEqual(n1.snapshotReports[1], { to: 2, ok: true });
    const resumed = logs.map((l) => /resuming at byte (\d+) of (\d+)/.exec(l)).find((m) => m);
    assert.ok(resumed !== undefined && resumed !== null, logs.join('\n'));
    const resumedAt = Number(resumed[1]);
    // What was queued or in socket buffers at the cut is lost; everything written is kept.
    assert.ok(resumedAt > mebibyte && resumedAt < 7 * mebibyte, `resumed at ${resumedAt}`);
    assert.equal(stepped.length, 1);
    assert.deepEqual(stepped[0]?.snapshot.meta, meta);
    // The core gets metadata only; the state machine installs from the follower's verified file.
    assert.equal(stepped[0]?.snapshot.data.length, 0);
    const received = Buffer.concat([...followerStore.dataOf(meta)].map((c) => Buffer.from(c)));
    assert.ok(received.equals(data), 'data intact in the follower\'s file');
    assert.deepEqual(readdirSync(followerStore.dir), [readdirSync(leaderStore.dir)[0]]);
  } finally {
    await Promise.all([n1.transport.close(), n2.transport.close(), relay.close()]);
    rmSync(dir, { recursive: true, force: true });
  }
});
