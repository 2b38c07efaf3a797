// A rolling upgrade across one peer protocol step, with real processes: f266807 (peer protocol 2,
// the build before member health travelled on heartbeats) is built into a temporary directory; a
// cell starts with n1 and n2 on it and n3 on this build (protocol 3). Under a write load the
// leader is killed (-9) and restarted, then n1 and n2 are stopped and started again on this build
// one at a time, on their own data directories (the disk formats did not change). No acknowledged
// write is lost, a write through every member that is up commits at every step (the leader
// killed, each member down, each upgraded), and once every member runs this build health travels
// again (every member reports all three healthy). Needs git history with f266807 (skipped
// otherwise) or BATON_OLD_BUILD=DIR, a tree already built there (DIR/dist/src/cli/main.js);
// BATON_UPGRADE_LOGS=FILE keeps the members' last log lines. A second test runs f266807's
// PeerTransport in this process against this build's: heartbeats both ways and a snapshot.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { RaftMessage } from '../../src/raft/index.js';
import type { IncomingSnapshot } from '../../src/transport/index.js';
import { startNode, until } from '../unit/transport/tcp-helpers.js';
import { findLeader, http, putSurely, sleep, startTestCell } from './harness.js';
import { oldBuild, repoRoot } from './old-build.js';

const oldCommit = 'f266807';

const build = oldBuild(oldCommit);
after(() => {
  if (typeof build !== 'string') build.cleanup();
});

test('a cell upgrades from peer protocol 2 to 3 one member at a time under writes', { skip: typeof build === 'string' ? build : false, timeout: 180_000 }, async (t) => {
  assert.ok(typeof build !== 'string');
  const oldCli = build.cli;
  const onOld = new Set(['n1', 'n2']);
  const cell = await startTestCell({ cliPathFor: (name) => (onOld.has(name) ? oldCli : join(repoRoot, 'dist/src/cli/main.js')) });
  try {
    const acked = new Map<string, { value: string; revision: number }>();
    let phase = 'mixed';
    const phaseStart = new Map<string, number>([[phase, Date.now()]]);
    const enter = (name: string): void => {
      phase = name;
      phaseStart.set(name, Date.now());
    };
    const ackedIn = new Map<string, number>();
    let stop = false;
    const writer = async (id: number): Promise<void> => {
      for (let n = 0; !stop; n++) {
        const name = cell.names[(id + n) % cell.names.length] as string;
        if (!cell.cell.isRunning(name)) {
          await sleep(20);
          continue;
        }
        const key = `/u/${id}-${n}`;
        const value = `v${id}.${n}`;
        const during = phase;
        try {
          const res = await http(`${cell.cell.clientUrl(name)}/v1/kv${key}`, { method: 'PUT', body: value, timeoutMs: 4000 });
          if (res.status === 200 || res.status === 201) {
            acked.set(key, { value, revision: res.body.revision });
            ackedIn.set(during, (ackedIn.get(during) ?? 0) + 1);
          }
        } catch {
          // refused or timed out: not acknowledged
        }
      }
    };
    const writers = Array.from({ length: 6 }, (_, i) => writer(i));
    await sleep(1500);
    // The new member talks to the old ones in protocol 2 (it was refused in 3 and dialled again).
    assert.match(cell.cell.tail('n3', 2000), /older protocol version/);
    const sofar = Math.max(...[...acked.values()].map((a) => a.revision));
    const onNew = await http(`${cell.cell.clientUrl('n3')}/v1/kv/u/?prefix=true&consistency=serializable&minRevision=${sofar}`, { timeoutMs: 5000 });
    assert.equal(onNew.status, 200, 'the new member replicates in the mixed cell');
    // Available at every step: a write through each member that is up commits (retried with one
    // Request-ID through an election). The load's own counts per phase are only a diagnostic: a
    // phase is about as long as the request timeout, so an election can leave one without any.
    const writeThroughEach = async (step: string, names: readonly string[]): Promise<void> => {
      for (const name of names) {
        const key = `/u/${step.replace(/ /g, '-')}-${name}`;
        const body = await putSurely(`${cell.cell.clientUrl(name)}/v1/kv${key}`, step);
        acked.set(key, { value: step, revision: body.revision });
      }
    };
    await writeThroughEach('mixed', cell.names);
    enter('leader killed');
    const leader = await findLeader(cell);
    await cell.cell.kill9(leader);
    await writeThroughEach('leader killed', cell.names.filter((n) => n !== leader));
    await sleep(1000);
    cell.cell.start(leader);
    await cell.cell.waitReady(30_000);
    for (const name of ['n1', 'n2']) {
      enter(`${name} upgraded`);
      cell.cell.signal(name, 'SIGTERM');
      await cell.cell.waitExit(name);
      await writeThroughEach(`${name} down`, cell.names.filter((n) => n !== name));
      onOld.delete(name);
      cell.cell.start(name);
      await cell.cell.waitReady(30_000);
      await writeThroughEach(`${name} upgraded`, cell.names);
      await sleep(1000);
    }
    const endMs = Date.now();
    stop = true;
    await Promise.all(writers);
    const starts = [...phaseStart.values(), endMs];
    const phases = [...phaseStart.keys()].map((name, i) => `${name}: ${ackedIn.get(name) ?? 0} in ${(starts[i + 1] as number) - (starts[i] as number)} ms`);
    t.diagnostic(`leader killed: ${leader}; writes acknowledged: ${phases.join(', ')}`);
    if (process.env.BATON_UPGRADE_LOGS !== undefined) {
      const { writeFileSync } = await import('node:fs');
      writeFileSync(process.env.BATON_UPGRADE_LOGS, cell.names.map((n) => `== ${n}\n${cell.cell.tail(n, 400)}`).join('\n'));
    }
    assert.ok((ackedIn.get('mixed') ?? 0) > 0, 'the load was acknowledged in the mixed cell');
    const revisions = [...acked.values()].map((a) => a.revision);
    assert.equal(new Set(revisions).size, revisions.length, 'no revision acknowledged twice');
    const maxRevision = Math.max(...revisions);
    for (const name of cell.names) {
      const res = await http(`${cell.cell.clientUrl(name)}/v1/kv/u/?prefix=true&consistency=serializable&minRevision=${maxRevision}`);
      assert.equal(res.status, 200);
      const found = new Map<string, string>(res.body.kvs.map((kv: { key: string; value: string }) => [kv.key, kv.value]));
      for (const [key, { value }] of acked) assert.equal(found.get(key), value, `${key} on ${name}`);
    }
    // All on protocol 3: the leader's view travels again and every member reports it.
    const deadline = Date.now() + 10_000;
    for (;;) {
      const views = await Promise.all(cell.names.map(async (name) => {
        const status = await http(`${cell.cell.clientUrl(name)}/v1/cluster/status`);
        return (status.body.members as { name: string; healthy: boolean }[]).filter((m) => m.healthy).map((m) => m.name).sort().join(',');
      }));
      if (views.every((view) => view === 'n1,n2,n3')) break;
      if (Date.now() > deadline) assert.fail(`health after the upgrade: ${views.join(' | ')}`);
      await sleep(200);
    }
  } finally {
    await cell.close();
  }
});

test('a protocol 2 transport (f266807) and this one exchange heartbeats both ways and a snapshot', { skip: typeof build === 'string' ? build : false }, async () => {
  assert.ok(typeof build !== 'string');
  const old = await import(pathToFileURL(join(build.dir, 'dist/src/transport/index.js')).href);
  const { SeededRandom } = await import(pathToFileURL(join(build.dir, 'dist/src/base/random.js')).href);
  const oldReceived: Record<string, unknown>[] = [];
  const snapshots: { index: number; bytes: number }[] = [];
  const oldNode = await old.PeerTransport.start({
    memberId: 2, clusterId: 'cluster-a', listen: { host: '127.0.0.1', port: 0 }, peers: new Map(),
    onMessages: (batch: Record<string, unknown>[]) => oldReceived.push(...batch),
    onSnapshot: async (incoming: IncomingSnapshot) => {
      let bytes = 0;
      for await (const chunk of incoming.chunks) bytes += chunk.length;
      snapshots.push({ index: incoming.meta.index, bytes });
    },
    reportUnreachable: () => {}, reportSnapshot: () => {},
    logger: { info: () => {}, warn: () => {} }, random: new SeededRandom(2n),
    limits: { reconnectDelayMsBase: 10, reconnectDelayMsMax: 100 },
  });
  assert.equal(old.protocolVersion, 2);
  const n1 = await startNode(1);
  n1.transport.addPeer(2, oldNode.address());
  oldNode.addPeer(1, n1.transport.address());
  try {
    // The old build's heartbeat has no contact field; this one's arrives there without its list.
    oldNode.send([{ type: 'heartbeat', from: 2, to: 1, term: 4, commit: 9, readRound: 0 }]);
    await until(() => n1.received.length > 0, 'the old member\'s heartbeat');
    assert.deepEqual(n1.received[0], { type: 'heartbeat', from: 2, to: 1, term: 4, commit: 9, readRound: 0, contact: null } satisfies RaftMessage);
    for (let i = 0; i < 50 && oldReceived.length === 0; i++) {
      n1.transport.send([{ type: 'heartbeat', from: 1, to: 2, term: 5, commit: 3, readRound: 1, contact: [1, 2] }]);
      await sleep(20);
    }
    await until(() => oldReceived.length > 0, 'this member\'s heartbeat at the old one');
    assert.deepEqual(oldReceived[0], { type: 'heartbeat', from: 1, to: 2, term: 5, commit: 3, readRound: 1 });
    // The snapshot channel: refused in 3, dialled again in 2, streamed whole.
    const data = Buffer.alloc(3 * 1024 * 1024, 7);
    const meta = { index: 100, term: 5, confState: { voters: [1, 2], votersOutgoing: [], learners: [] } };
    const ok = await n1.transport.sendSnapshot({ type: 'snapshot', from: 1, to: 2, term: 5, snapshot: { meta, data } }, {
      totalBytes: data.length, checksum: 0, chunks: async function* () { yield data; },
    });
    assert.equal(ok, true);
    await until(() => snapshots.length === 1, 'the snapshot at the old member');
    assert.deepEqual(snapshots, [{ index: 100, bytes: data.length }]);
  } finally {
    await n1.transport.close();
    await oldNode.close();
  }
});
