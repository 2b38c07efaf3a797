// Two drivers on real peer transports (loopback TCP): what a follower's disk completions free
// leaves in one socket write per turn, not one per completed Ready, and never before the write
// it acknowledges is durable. Under 100K renewals/s the leader had made a write per peer for
// every Ready (issue 31); each write is a system call on a machine whose cores are shared.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SeededRandom } from '../../../src/base/random.js';
import { createRaftNode, defaultRaftConfig } from '../../../src/raft/index.js';
import { NodeDriver } from '../../../src/driver/driver.js';
import type { Timers } from '../../../src/driver/types.js';
import { CountingMachine, HeldDisk } from './driver-doubles.js';
import { PeerTransport, type PeerStats } from '../../../src/transport/index.js';
import { until } from '../transport/tcp-helpers.js';

/** A disk whose writes complete when the test says so (all at once: one WAL group commit). */

// Real turns: soon is setImmediate, as in a node (src/node/node.ts).
const timers: Timers = {
  setTimeout: (callback, ms) => {
    const timer = setTimeout(callback, ms);
    timer.unref();
    return { cancel: () => clearTimeout(timer) };
  },
  monotonicMs: () => performance.now(),
  soon: (callback) => void setImmediate(callback),
};
const turn = () => new Promise((resolve) => setImmediate(resolve));

async function member(id: number) {
  const core = createRaftNode({ ...defaultRaftConfig, id }, {
    hardState: { term: 0, vote: 0, commit: 0 }, snapshot: null, entries: [],
    initialConfState: { voters: [1, 2], votersOutgoing: [], learners: [] }, appliedIndex: 0,
  }, new SeededRandom(BigInt(id)));
  const disk = new HeldDisk(false);
  const machine = new CountingMachine();
  let driver: NodeDriver<number> | null = null;
  const transport = await PeerTransport.start({
    memberId: id, clusterId: 'turn-flush', listen: { host: '127.0.0.1', port: 0 }, peers: new Map(),
    onMessages: (batch) => driver?.receive(batch),
    random: new SeededRandom(BigInt(id)),
  });
  driver = new NodeDriver(core, disk, machine, transport, timers,
    { requestTimeoutMs: 30_000, snapshotEntries: 1_000_000, readysInFlightMax: 8 },
    { onFatal: (error) => { throw error; } });
  driver.start([]);
  return { id, core, disk, machine, driver, transport };
}

test("a follower's acknowledgements of several completed writes leave in one socket write, after the writes", async () => {
  const leader = await member(1);
  const follower = await member(2);
  try {
    leader.transport.addPeer(2, follower.transport.address());
    follower.transport.addPeer(1, leader.transport.address());
    leader.core.campaign();
    leader.driver.tick();
    await until(() => leader.driver.isLeader && leader.core.status().commitIndex === leader.core.status().lastIndex &&
      follower.machine.applied === leader.core.status().lastIndex, 'a leader with its first entry everywhere');
    const base = leader.core.status().commitIndex;
    const toLeader = (): PeerStats => follower.transport.stats().peers.get(1) as PeerStats;
    const before = toLeader();

    // Four appends, each its own Ready on the follower, all four writes held on its disk.
    follower.disk.hold = true;
    const outcomes: Promise<number>[] = [];
    for (let i = 1; i <= 4; i++) {
      const outcome = leader.driver.propose(leader.driver.newProposalId(), new Uint8Array([i]));
      outcome.catch(() => {}); // awaited below; a failed assertion first stops the driver
      outcomes.push(outcome);
      await until(() => follower.disk.pending.length === i, `the follower's write ${i} handed to its disk`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(toLeader().sentMessages, before.sentMessages, 'no acknowledgement leaves before its write is durable');
    assert.equal(leader.core.status().commitIndex, base, 'nothing committed on the leader alone');

    // The four writes complete together (one group commit): their four acknowledgements are
    // queued in this turn and written once, at its end.
    // The completions run after this call's turn; the transport's flush is the turn after (the
    // leader's answers to them take a poll phase more, so nothing else is written meanwhile).
    follower.disk.completeAll();
    await turn();
    await turn();
    const after = toLeader();
    assert.ok(after.sentMessages - before.sentMessages >= 4, `an acknowledgement per write (${after.sentMessages - before.sentMessages})`);
    assert.equal(after.sentWrites - before.sentWrites, 1, 'one socket write for the whole turn');

    follower.disk.hold = false;
    assert.deepEqual(await Promise.all(outcomes), [base + 1, base + 2, base + 3, base + 4], 'all four committed and applied');
  } finally {
    leader.driver.stop();
    follower.driver.stop();
    await Promise.all([leader.transport.close(), follower.transport.close()]);
  }
});
