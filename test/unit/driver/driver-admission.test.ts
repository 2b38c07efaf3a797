// An overloaded leader refuses new work instead of queueing more than it can commit within the
// clients' timeout: once its oldest uncommitted entry has waited past `uncommittedAgeMsMax`, its
// own proposals fail with OverloadedError (429) and forwarded ones are refused back to their
// follower (whose requests then fail at once, 429, instead of at their timeout); once the backlog
// commits, proposals are taken again. A leader's own urgent proposals are never shed by the bound.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OverloadedError, UnavailableError } from '../../../src/base/errors.js';
import { SeededRandom } from '../../../src/base/random.js';
import {
  createRaftNode, defaultRaftConfig, type RaftMessage,
} from '../../../src/raft/index.js';
import { NodeDriver } from '../../../src/driver/driver.js';
import { frameCommand, frameHead } from '../../../src/driver/entry-frame.js';
import type { Timers } from '../../../src/driver/types.js';
import type { DriverOptions } from '../../../src/driver/driver.js';
import { CountingMachine, HeldDisk } from './driver-doubles.js';


const flush = () => new Promise((resolve) => setImmediate(resolve));

async function settle(disk: HeldDisk): Promise<void> {
  for (let i = 0; i < 4; i++) {
    disk.completeAll();
    await flush();
  }
}

/**
 * Member 1 of a 3-voter cell, following member 2 (its heartbeat of term 1 said so): the driver,
 * its core and disk, and every message it sent. `voters: [1]` instead starts it alone, not following.
 */
async function startMember(seed: bigint, options: Partial<DriverOptions>, timers: Timers, voters: number[] = [1, 2, 3]) {
  const core = createRaftNode({ ...defaultRaftConfig, id: 1 }, {
    hardState: { term: 0, vote: 0, commit: 0 }, snapshot: null, entries: [],
    initialConfState: { voters, votersOutgoing: [], learners: [] }, appliedIndex: 0,
  }, new SeededRandom(seed));
  const disk = new HeldDisk();
  const sent: RaftMessage[] = [];
  const driver = new NodeDriver(core, disk, new CountingMachine(), { send: (m) => sent.push(...m) }, timers,
    { requestTimeoutMs: 10_000, snapshotEntries: 1_000_000, ...options }, { onFatal: (e) => { throw e; } });
  driver.start([]);
  if (voters.length > 1) {
    driver.receive([{ type: 'heartbeat', from: 2, to: 1, term: 1, commit: 0, readRound: 0, contact: [2] }]);
    await settle(disk);
  }
  return { core, disk, sent, driver };
}

test('an overloaded leader refuses proposals until its backlog commits', async () => {
  let nowMs = 0;
  const timers: Timers = { setTimeout: () => ({ cancel: () => {} }), monotonicMs: () => nowMs };
  const { core, disk, sent, driver } = await startMember(7n, { readysInFlightMax: 4, uncommittedAgeMsMax: 1_000 }, timers, [1]);
  core.campaign();
  driver.tick();
  await settle(disk);
  assert.equal(driver.isLeader, true);

  // The write of the first entry does not finish: it stays uncommitted while time passes.
  const first = driver.propose(driver.newProposalId(), new Uint8Array([1]));
  nowMs += 999;
  const second = driver.propose(driver.newProposalId(), new Uint8Array([2]));
  nowMs += 2;
  await assert.rejects(driver.propose(driver.newProposalId(), new Uint8Array([3])), OverloadedError);
  // An urgent command (a move's lease renewal carried over) is taken all the same.
  const urgent = driver.propose(driver.newProposalId(), new Uint8Array([4]), { urgent: true });
  const forwarded = frameCommand(new Uint8Array(16).fill(9), new Uint8Array(500));
  driver.receive([{ type: 'propose', from: 2, to: 1, term: 1, commands: [forwarded] }]);
  assert.equal(driver.forwardedRefused, 1, 'a forwarded proposal is not appended...');
  const refusal = sent.find((m) => m.type === 'proposeRefused');
  assert.ok(refusal?.type === 'proposeRefused', '...and goes back to its follower');
  assert.deepEqual({ from: refusal.from, to: refusal.to, reason: refusal.reason }, { from: 1, to: 2, reason: 'overloaded' });
  assert.deepEqual(refusal.commands.map((c) => Array.from(c)), [Array.from(frameHead(forwarded))], 'named by its frame head only');

  // The backlog commits: new proposals are welcome again.
  await settle(disk);
  assert.ok((await first) > 0 && (await second) > 0 && (await urgent) > 0);
  const third = driver.propose(driver.newProposalId(), new Uint8Array([5]));
  await settle(disk);
  assert.ok((await third) > 0);
});

test('a follower fails a forwarded proposal the moment the leader refuses it', async () => {
  const timers: Timers = { setTimeout: () => ({ cancel: () => {} }), monotonicMs: () => 0 };
  // Member 2 leads term 1 (its heartbeat says so); timers never fire, so only a refusal can answer.
  const { disk, sent, driver } = await startMember(8n, {}, timers);
  const full = driver.propose(driver.newProposalId(), new Uint8Array([1]));
  const moved = driver.propose(driver.newProposalId(), new Uint8Array([2]));
  await settle(disk);
  const forwards = sent.flatMap((m) => (m.type === 'propose' ? m.commands : []));
  assert.equal(forwards.length, 2, 'both forwarded to member 2');
  driver.receive([
    { type: 'proposeRefused', from: 2, to: 1, term: 1, reason: 'tooLarge', commands: [frameHead(forwards[0]!)] },
    // Garbage from a peer is ignored (no frame version, too short): nothing throws.
    { type: 'proposeRefused', from: 2, to: 1, term: 1, reason: 'tooLarge', commands: [new Uint8Array([7, 7]), new Uint8Array(17)] },
    { type: 'proposeRefused', from: 2, to: 1, term: 1, reason: 'notLeader', commands: [frameHead(forwards[1]!)] },
  ]);
  await assert.rejects(full, OverloadedError);
  await assert.rejects(moved, UnavailableError);
  driver.stop();
});

test('a follower bounds the bytes it has forwarded to the leader and not yet seen answered; writes wait their turn for room', async () => {
  let nowMs = 0;
  const timers: Timers = { setTimeout: () => ({ cancel: () => {} }), monotonicMs: () => nowMs };
  const { disk, sent, driver } = await startMember(9n, { forwardedBytesMax: 3_000, forwardWaitMsMax: 1_000 }, timers);
  const forwarded = () => sent.flatMap((m) => (m.type === 'propose' ? m.commands : []));
  const refuse = (commands: readonly Uint8Array[]) =>
    driver.receive([{ type: 'proposeRefused', from: 2, to: 1, term: 1, reason: 'notLeader', commands: commands.map((c) => frameHead(c)) }]);
  // A proposal bigger than the bound goes when nothing is outstanding (a maximal write is never refused for good)...
  const big = driver.propose(driver.newProposalId(), new Uint8Array(4_000));
  // ...and the next ones wait for room, in order, in a queue bounded in bytes too.
  const first = driver.propose(driver.newProposalId(), new Uint8Array(10));
  const second = driver.propose(driver.newProposalId(), new Uint8Array(2_000));
  await assert.rejects(driver.propose(driver.newProposalId(), new Uint8Array(2_000)), OverloadedError, 'past the queue\'s bytes: 429 at once');
  await settle(disk);
  assert.equal(forwarded().length, 1, 'only the first was forwarded: its bytes sit ahead of heartbeat answers');
  refuse(forwarded());
  await assert.rejects(big, UnavailableError);
  // Answered (here refused): the waiting ones go, oldest first.
  await settle(disk);
  const framing = forwarded()[0]!.byteLength - 4_000;
  assert.deepEqual(forwarded().slice(1).map((c) => c.byteLength - framing), [10, 2_000], 'sent in the order they came');

  // Nothing overtakes a waiting write: a small one that would fit waits behind it.
  const third = driver.propose(driver.newProposalId(), new Uint8Array(2_000));
  const fourth = driver.propose(driver.newProposalId(), new Uint8Array(10));
  await settle(disk);
  assert.equal(forwarded().length, 3, 'the third does not fit beside the 2,000 bytes out; the fourth waits behind it');
  refuse(forwarded().slice(1, 3));
  await assert.rejects(first, UnavailableError);
  await assert.rejects(second, UnavailableError);
  await settle(disk);
  assert.equal(forwarded().length, 5, 'room again: both sent');
  refuse(forwarded().slice(3));
  await assert.rejects(third, UnavailableError);
  await assert.rejects(fourth, UnavailableError);

  // A write that waited past the bound is refused, never sent (429: safe to retry as new).
  const blocker = driver.propose(driver.newProposalId(), new Uint8Array(4_000));
  const late = driver.propose(driver.newProposalId(), new Uint8Array(10));
  await settle(disk);
  nowMs += 1_001;
  driver.tick();
  await assert.rejects(late, OverloadedError);
  await settle(disk);
  assert.equal(forwarded().length, 6, 'only the blocker went');
  refuse(forwarded().slice(5));
  await assert.rejects(blocker, UnavailableError);
  driver.stop();
});

test('a follower that becomes leader proposes the writes waiting for room itself', async () => {
  const timers: Timers = { setTimeout: () => ({ cancel: () => {} }), monotonicMs: () => 0 };
  const { core, disk, sent, driver } = await startMember(10n, { forwardedBytesMax: 3_000 }, timers);
  const big = driver.propose(driver.newProposalId(), new Uint8Array(4_000));
  const waiting = driver.propose(driver.newProposalId(), new Uint8Array([42]));
  big.catch(() => undefined);
  await settle(disk);
  assert.equal(sent.filter((m) => m.type === 'propose').length, 1, 'the second waits for room');
  // Member 2 goes silent; this member campaigns and member 3 grants its (pre-)votes.
  core.campaign();
  for (let round = 0; round < 4 && !driver.isLeader; round++) {
    driver.flush();
    await settle(disk);
    const asked = sent.filter((m) => (m.type === 'preVote' || m.type === 'vote') && m.to === 3).at(-1);
    if (asked === undefined) continue;
    driver.receive([{ type: asked.type === 'vote' ? 'voteResponse' : 'preVoteResponse', from: 3, to: 1, term: asked.term, reject: false }]);
  }
  await settle(disk);
  assert.equal(driver.isLeader, true);
  driver.tick();
  await settle(disk);
  // Appended by this leader (after its term's empty entry), not forwarded.
  assert.equal(core.status().lastIndex, 2, 'the waiting write was proposed by the new leader');
  assert.equal(sent.filter((m) => m.type === 'propose').length, 1, 'and not forwarded');
  driver.stop();
  await assert.rejects(waiting); // stopped before it committed: outcome unknown
});
