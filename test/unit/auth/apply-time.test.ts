// Writes decided at apply (slice 3 of docs/design/authorization.md, its core): an MvccStore with
// the authorizer decides each client command against the policy of the very state it applies on.
// A permission removed by an earlier entry cannot be used by a later one even when both were
// proposed while it held; anonymous commands are refused once the policy is on; the cell's own
// commands (no principal) apply; a refusal changes nothing and is the same on every replica;
// principals travel in the entry and are bounded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createAuthorizer, encodePolicyJson, parsePolicyJson } from '../../../src/auth/index.js';
import { EntryType } from '../../../src/raft/types.js';
import { MemoryEngine, MvccStore, decodeCommand, defaultMvccLimits, encodeCommand } from '../../../src/mvcc/index.js';
import type { ApplyOutcome, Command } from '../../../src/mvcc/index.js';

const text = (s: string): Uint8Array => new TextEncoder().encode(s);

function policy(enabled: boolean, jobsOps: string[]): Command {
  return {
    type: 'policySet',
    record: encodePolicyJson(parsePolicyJson({
      enabled,
      roles: { jobs: [{ prefix: '/jobs/', ops: jobsOps }] },
      bindings: { worker: ['jobs'] },
    })),
    ifVersion: -1,
  };
}

/** Entries as a log: both replicas apply the same bytes. */
function log(): { entry(op: Command, principal?: string): Uint8Array } {
  let at = 0;
  return {
    entry(op, principal) {
      at++;
      return encodeCommand({ proposedAtMs: 1_000 + at, source: 1, op, ...(principal === undefined ? {} : { principal }) }, defaultMvccLimits);
    },
  };
}

function replica(): { store: MvccStore; apply(data: Uint8Array): ApplyOutcome } {
  const store = new MvccStore(new MemoryEngine());
  store.setAuthorizer(createAuthorizer());
  let index = 0;
  return { store, apply: (data) => store.applyBatch([{ index: ++index, term: 1, type: EntryType.normal, data }])[0] as ApplyOutcome };
}

function withVersion(op: Command, version: number): Command {
  return op.type === 'policySet' ? { ...op, ifVersion: version } : op;
}

test('a permission removed by an earlier entry cannot be used by a later one', () => {
  const entries = log();
  // All proposed while the worker may write /jobs/: the edge would have allowed each.
  const stream = [
    entries.entry(withVersion(policy(true, ['write']), 0)),
    entries.entry({ type: 'put', key: '/jobs/1', value: text('a') }, 'worker'),
    entries.entry(withVersion(policy(true, ['read']), 1)), // write removed here
    entries.entry({ type: 'put', key: '/jobs/2', value: text('b') }, 'worker'),
  ];
  const outcomes = [replica(), replica()].map(({ store, apply }) => ({ store, outcomes: stream.map(apply) }));
  for (const { store, outcomes: [set, allowed, removed, denied] } of outcomes) {
    assert.equal(set?.type, 'applied');
    assert.equal(allowed?.type, 'applied');
    assert.equal(removed?.type, 'applied');
    assert.equal(denied?.type, 'failed');
    assert.equal(denied?.type === 'failed' ? denied.error.code : '', 'permission_denied');
    assert.throws(() => store.range({ type: 'get', key: '/jobs/2' }), /not found/, 'the refused put changed nothing');
    assert.equal(store.range({ type: 'get', key: '/jobs/1' }).count, 1);
  }
  assert.equal(outcomes[0]?.store.revision, outcomes[1]?.store.revision, 'every replica decides alike');
});

test("anonymous commands are refused once the policy is on; the cell's own apply; off, all apply", () => {
  const entries = log();
  const { apply } = replica();
  assert.equal(apply(entries.entry({ type: 'put', key: '/x', value: text('1') }, '')).type, 'applied', 'policy off');
  apply(entries.entry(withVersion(policy(true, ['write']), 0)));
  const anonymous = apply(entries.entry({ type: 'put', key: '/jobs/1', value: text('1') }, ''));
  assert.equal(anonymous.type === 'failed' ? anonymous.error.code : anonymous.type, 'permission_denied');
  assert.equal(apply(entries.entry({ type: 'put', key: '/jobs/1', value: text('1') })).type, 'applied', 'no principal: the cell itself');
  assert.equal(apply(entries.entry({ type: 'put', key: '/other', value: text('1') }, 'worker')).type, 'failed');
  assert.equal(apply(entries.entry({ type: 'put', key: '/other', value: text('1') }, 'root')).type, 'applied', 'root');
  const txn: Command = { type: 'txn', compare: [], success: [{ type: 'put', key: '/jobs/2', value: text('2') }], failure: [{ type: 'delete', key: '/other' }] };
  assert.equal(apply(entries.entry(txn, 'worker')).type, 'failed', 'the failure branch writes outside');
});

test('the principal travels in the entry and is bounded', () => {
  const data = encodeCommand({ proposedAtMs: 1, op: { type: 'put', key: '/k', value: text('v') }, principal: 'svc-a' }, defaultMvccLimits);
  assert.equal(decodeCommand(data, defaultMvccLimits).principal, 'svc-a');
  const none = encodeCommand({ proposedAtMs: 1, op: { type: 'put', key: '/k', value: text('v') } }, defaultMvccLimits);
  assert.equal(decodeCommand(none, defaultMvccLimits).principal, undefined);
  assert.throws(() => encodeCommand({ proposedAtMs: 1, op: { type: 'put', key: '/k', value: text('v') }, principal: 'x'.repeat(300) }, defaultMvccLimits), /principal/);
});
