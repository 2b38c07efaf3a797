// The peer ledger (src/raft/peer-ledger.ts): a member that restarts asks its peers what it promised
// them before it votes or acknowledges anything. A restart on its own data goes on as before; a
// restart on an older copy of its data (a term, a vote or acknowledged entries its disk no longer
// has) is found, and the member then never votes, campaigns or acknowledges again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SeededRandom } from '../../../src/base/random.js';
import {
  createRaftNode, defaultRaftConfig, EntryType,
  type Entry, type PeerRecord, type RaftApi, type RaftMessage,
} from '../../../src/raft/index.js';

const voters = [1, 2, 3];
const electionTicks = 10;

function entries(count: number, term: number): Entry[] {
  return Array.from({ length: count }, (_, i) => ({ index: i + 1, term, type: EntryType.normal, data: new Uint8Array([i]) }));
}

/** Member 1 restarted with this disk: term, vote, and `logLength` entries of that term. */
function restart(term: number, vote: number, logLength: number, ledgerCheck = true): RaftApi {
  return createRaftNode(
    { ...defaultRaftConfig, id: 1, electionTicks, ledgerCheck },
    { hardState: { term, vote, commit: 0 }, snapshot: null, entries: entries(logLength, term),
      initialConfState: { voters, votersOutgoing: [], learners: [] }, appliedIndex: 0 },
    new SeededRandom(5n),
  );
}

function sent(node: RaftApi): RaftMessage[] {
  const out: RaftMessage[] = [];
  while (node.hasReady()) {
    const ready = node.ready();
    out.push(...ready.appendMessages, ...ready.messages);
    node.advance(ready);
  }
  return out;
}

const nothing: PeerRecord = { term: 0, ackTerm: 0, ackIndex: 0, voteTerm: 0, votedFor: 0 };
const report = (from: number, term: number, record: PeerRecord): RaftMessage =>
  ({ type: 'ledgerReport', from, to: 1, term, record });
const voteRequest = (from: number, term: number): RaftMessage =>
  ({ type: 'vote', from, to: 1, term, lastIndex: 100, lastTerm: term, transfer: false });

test('a restarted member asks every peer first, and neither votes nor campaigns until they answer', () => {
  const node = restart(3, 2, 5);
  const queries = sent(node).filter((m) => m.type === 'ledgerQuery').map((m) => m.to).sort();
  assert.deepEqual(queries, [2, 3]);
  assert.equal(node.status().recovering, true);
  node.step(voteRequest(3, 4));
  assert.deepEqual(sent(node).filter((m) => m.type === 'voteResponse'), [], 'no vote while recovering');
  for (let i = 0; i < 5 * electionTicks; i++) node.tick();
  assert.equal(node.status().role, 'follower', 'no campaign while recovering');
  assert.equal(node.status().term, 3);
});

test('answers that match its disk: it goes on, votes and campaigns as before', () => {
  const node = restart(3, 2, 5);
  sent(node);
  node.step(report(2, 3, { term: 3, ackTerm: 3, ackIndex: 5, voteTerm: 3, votedFor: 2 }));
  assert.equal(node.status().recovering, true, 'member 3 has not answered yet');
  node.step(report(3, 3, nothing));
  assert.equal(node.status().recovering, false);
  assert.equal(node.status().regressed, null);
  node.step(voteRequest(3, 4));
  const answers = sent(node).filter((m) => m.type === 'voteResponse');
  assert.deepEqual(answers.map((m) => m.type === 'voteResponse' && m.reject), [false], 'votes again');
});

test('a peer that saw a newer term, a vote the disk lacks, or more acknowledged entries: regressed for good', () => {
  const cases: [string, PeerRecord, RegExp][] = [
    ['a newer term', { ...nothing, term: 4 }, /heard term 4 .* disk says term 3/],
    ['a vote the disk lacks', { ...nothing, term: 3, voteTerm: 3, votedFor: 3 }, /voted for 3 in term 3, and its disk says no vote/],
    ['a different vote', { ...nothing, term: 3, voteTerm: 3, votedFor: 2 }, /voted for 2 in term 3, and its disk says a vote for 3/],
    ['acknowledged entries', { ...nothing, term: 3, ackTerm: 3, ackIndex: 9 }, /acknowledged entry 9 of term 3 .* log ends at 5/],
  ];
  for (const [what, record, reason] of cases) {
    const vote = what === 'a different vote' ? 3 : 0;
    const node = restart(3, vote, 5);
    sent(node);
    node.step(report(2, 3, record));
    assert.match(node.status().regressed ?? 'not regressed', reason, what);
    assert.equal(node.status().recovering, false, what);
    // It stays out: no vote, no acknowledgement, no campaign, whatever comes.
    node.step(report(3, 3, nothing));
    node.step(voteRequest(3, 9));
    node.step({ type: 'append', from: 2, to: 1, term: 3, prevIndex: 5, prevTerm: 3, entries: [], commit: 5 });
    for (let i = 0; i < 5 * electionTicks; i++) node.tick();
    const out = sent(node);
    assert.deepEqual(out.filter((m) => m.type !== 'ledgerReport'), [], `${what}: says nothing`);
    assert.equal(node.status().term, 3, what);
    assert.notEqual(node.status().regressed, null, what);
  }
});

test('a peer that does not answer: after the wait it goes on with a majority, never alone', () => {
  const alone = restart(3, 2, 5);
  sent(alone);
  for (let i = 0; i < 20 * electionTicks; i++) alone.tick();
  assert.equal(alone.status().recovering, true, 'no answer at all: still waiting');
  assert.ok(sent(alone).some((m) => m.type === 'ledgerQuery'), 'and asking again');
  alone.step(report(2, 3, nothing));
  alone.tick();
  assert.equal(alone.status().recovering, false, 'one peer answered: with itself a majority of three');
  // The silent peer's answer, when it comes, is still checked.
  alone.step(report(3, 3, { ...nothing, term: 7 }));
  assert.match(alone.status().regressed ?? '', /heard term 7/);
});

test('a member remembers what each peer promised it and tells that peer when asked', () => {
  const node = restart(5, 1, 0, false);
  sent(node);
  node.step({ type: 'appendResponse', from: 2, to: 1, term: 5, index: 40, reject: false, rejectHint: 0, hintTerm: 0 });
  node.step({ type: 'vote', from: 3, to: 1, term: 6, lastIndex: 0, lastTerm: 0, transfer: false });
  node.step({ type: 'preVote', from: 2, to: 1, term: 9, lastIndex: 0, lastTerm: 0, transfer: false });
  sent(node);
  node.step({ type: 'ledgerQuery', from: 2, to: 1, term: 1 });
  node.step({ type: 'ledgerQuery', from: 3, to: 1, term: 1 });
  const reports = sent(node).filter((m) => m.type === 'ledgerReport');
  const of = (id: number) => reports.find((m) => m.to === id);
  assert.deepEqual(of(2)?.type === 'ledgerReport' && of(2)?.record,
    { term: 5, ackTerm: 5, ackIndex: 40, voteTerm: 0, votedFor: 0 }, 'a pre-vote term is no promise');
  assert.deepEqual(of(3)?.type === 'ledgerReport' && of(3)?.record,
    { term: 6, ackTerm: 0, ackIndex: 0, voteTerm: 6, votedFor: 3 }, 'a candidate voted for itself');
  assert.equal(node.status().term, 6, 'the queries changed no term');
});

test('a new member asks too (an older copy from before its first vote looks new), and goes on when nobody knows it', () => {
  const fresh = restart(0, 0, 0);
  assert.equal(fresh.status().recovering, true);
  sent(fresh);
  fresh.step(report(2, 0, nothing));
  fresh.step(report(3, 0, nothing));
  assert.equal(fresh.status().recovering, false);
  assert.equal(fresh.status().regressed, null);
  const restored = restart(0, 0, 0);
  sent(restored);
  restored.step(report(2, 1, { ...nothing, term: 1, voteTerm: 1, votedFor: 2 }));
  assert.match(restored.status().regressed ?? '', /heard term 1/);
  assert.equal(restart(3, 2, 5, false).status().recovering, false, 'the check switched off: at once');
});

test('a peer of an older build (no ledger messages in its protocol) is not waited for', () => {
  const node = restart(3, 2, 5);
  sent(node);
  node.reportNoLedger(2);
  assert.equal(node.status().recovering, true);
  node.reportNoLedger(3);
  assert.equal(node.status().recovering, false, 'nobody left to ask: it goes on');
});
