// The node driver performs each Ready's I/O in Raft's order: nothing but the leader's appends
// leaves before the disk write completes, entries are applied only after they are durable,
// proposals resolve with the state machine's outcome, and unknown outcomes time out as such.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SeededRandom } from '../../../src/base/random.js';
import { TimeoutError } from '../../../src/base/errors.js';
import { createRaftNode, defaultRaftConfig, type Entry, type RaftMessage, type SnapshotMeta } from '../../../src/raft/index.js';
import { NodeDriver } from '../../../src/driver/driver.js';
import type { LogStore, StateMachine, WrittenSnapshot } from '../../../src/driver/types.js';
import { FakeTimers } from '../base/fake-timers.js';
import { HeldDisk } from './driver-doubles.js';

class EchoMachine implements StateMachine<string> {
  applied = 0;
  readonly log: string[] = [];
  appliedIndex(): number {
    return this.applied;
  }
  applyBatch(entries: readonly Entry[]): string[] {
    return entries.map((entry) => {
      this.applied = entry.index;
      const text = new TextDecoder().decode(entry.data);
      if (text !== '') this.log.push(text);
      return `applied:${text}`;
    });
  }
  snapshotData(): Uint8Array {
    return new Uint8Array();
  }
  restore(): void {}
}

function singleNode() {
  const core = createRaftNode({ ...defaultRaftConfig, id: 1 }, {
    hardState: { term: 0, vote: 0, commit: 0 }, snapshot: null, entries: [],
    initialConfState: { voters: [1], votersOutgoing: [], learners: [] }, appliedIndex: 0,
  }, new SeededRandom(3n));
  const disk = new HeldDisk();
  const machine = new EchoMachine();
  const sent: RaftMessage[] = [];
  const timers = new FakeTimers();
  const driver = new NodeDriver(core, disk, machine, { send: (m) => sent.push(...m) }, timers,
    { requestTimeoutMs: 1000, snapshotEntries: 1_000_000 }, { onFatal: (e) => { throw e; } });
  driver.start([]);
  return { core, disk, machine, driver, timers, sent };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

/** Elect the single member and let its first writes (term, no-op) reach the disk. */
async function electedSingleNode() {
  const node = singleNode();
  node.core.campaign();
  node.driver.tick();
  for (let i = 0; i < 2; i++) {
    node.disk.completeAll();
    await flush();
  }
  return node;
}
const id = (n: number) => new Uint8Array(16).fill(n);

test('a proposal is applied only after its entry is durable, and resolves with the outcome', async () => {
  const { disk, machine, driver } = await electedSingleNode();
  assert.equal(driver.isLeader, true);
  const outcome = driver.propose(id(1), new TextEncoder().encode('hello'));
  assert.deepEqual(machine.log, [], 'nothing applied before the disk write completes');
  assert.equal(disk.pending.length, 1);
  disk.completeAll();
  await flush();
  disk.completeAll();
  await flush();
  assert.deepEqual(machine.log, ['hello']);
  assert.equal(await outcome, 'applied:hello');
});

test('a proposal whose outcome is unknown rejects with a timeout', async () => {
  const { driver, timers } = await electedSingleNode();
  const outcome = driver.propose(id(2), new TextEncoder().encode('stuck'));
  timers.jump(1001); // the disk never answers
  await assert.rejects(outcome, TimeoutError);
});

test('a linearizable read resolves once applied reaches the read index', async () => {
  const { disk, driver } = await electedSingleNode();
  let done = false;
  const read = driver.linearizableRead().then(() => { done = true; });
  await flush();
  disk.completeAll();
  await flush();
  await read;
  assert.equal(done, true);
});

function backgroundSnapshotNode(extra: { startSnapshotBytes?: number } = {}) {
  const core = createRaftNode({ ...defaultRaftConfig, id: 1 }, {
    hardState: { term: 0, vote: 0, commit: 0 }, snapshot: null, entries: [],
    initialConfState: { voters: [1], votersOutgoing: [], learners: [] }, appliedIndex: 0,
  }, new SeededRandom(3n));
  const machine = new EchoMachine();
  const requests: { metaAt: (index: number) => SnapshotMeta | null; done: (w: WrittenSnapshot | null) => void }[] = [];
  const disk = new HeldDisk();
  const store: LogStore = {
    persist: (ready) => disk.persist(ready),
    saveSnapshot: async () => assert.fail('the background path is preferred'),
    snapshotInBackground: (metaAt) => new Promise((done) => requests.push({ metaAt, done })),
  };
  const driver = new NodeDriver(core, store, machine, { send: () => {} }, new FakeTimers(),
    { requestTimeoutMs: 1000, snapshotEntries: 10, snapshotLogRatio: 1, ...extra }, { onFatal: (e) => { throw e; } });
  driver.start([]);
  const settle = async () => {
    for (let i = 0; i < 3; i++) {
      disk.completeAll();
      await flush();
    }
  };
  const entry = new Uint8Array(100);
  const commitUpTo = async (index: number) => {
    for (let n = 0; machine.applied < index; n++) {
      const done = driver.propose(id(n % 250), entry);
      await settle();
      await done;
    }
  };
  const start = async () => {
    core.campaign();
    driver.tick();
    await settle();
  };
  return { core, driver, requests, commitUpTo, start };
}

test('background snapshots: the core is compacted only once the file is written, at the index its view saw, and a big snapshot waits for as much log', async () => {
  const { core, driver, requests, commitUpTo, start } = backgroundSnapshotNode();
  await start();
  await commitUpTo(10);
  assert.equal(requests.length, 1, 'due at index 10');
  await commitUpTo(13);
  // The thread's view opened later: it saw index 13, and the log still starts at 1 until the file is written.
  const first = requests[0]!;
  const meta = first.metaAt(13);
  assert.deepEqual(meta && { index: meta.index, voters: meta.confState.voters }, { index: 13, voters: [1] });
  assert.equal(core.status().firstIndex, 1);
  first.done({ meta: meta!, bytes: 2500 });
  await flush();
  assert.equal(core.status().firstIndex, 14, 'compacted to the written snapshot');
  // 2,500 bytes of snapshot: the next one waits for 2,500 bytes of log (25 entries after index 10),
  // then for the next multiple of 10: index 40.
  await commitUpTo(39);
  assert.equal(requests.length, 1);
  await commitUpTo(40);
  assert.equal(requests.length, 2);
  // A view that needs no snapshot (say a leader's overtook it) compacts nothing.
  requests[1]!.done(null);
  await flush();
  assert.equal(core.status().firstIndex, 14);
  driver.stop();
});

test('a restarted member waits for as much log as the snapshot it started from', async () => {
  const { driver, requests, commitUpTo, start } = backgroundSnapshotNode({ startSnapshotBytes: 1500 });
  await start();
  await commitUpTo(19);
  assert.equal(requests.length, 0, '1,500 bytes of snapshot: not before 15 entries of 100 bytes');
  await commitUpTo(20);
  assert.equal(requests.length, 1);
  driver.stop();
});
