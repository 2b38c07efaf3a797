// The peer ledger's file (src/node/ledger-file.ts): written whole and read back; a missing file is
// an empty ledger; a damaged one stops the node with the file's name, never read half.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LedgerFileKeeper, ledgerFileName, readLedgerFile, writeLedgerFile } from '../../../src/node/ledger-file.js';
import type { MemberId, PeerRecord } from '../../../src/raft/index.js';

const records: [MemberId, PeerRecord][] = [
  [2, { term: 7, ackTerm: 7, ackIndex: 1234, voteTerm: 6, votedFor: 1 }],
  [3, { term: 5, ackTerm: 0, ackIndex: 0, voteTerm: 5, votedFor: 3 }],
];

test('written and read back; no file is an empty ledger', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ledger-'));
  try {
    assert.deepEqual(readLedgerFile(dir), []);
    await writeLedgerFile(dir, records);
    assert.deepEqual(readLedgerFile(dir), records);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a damaged file names itself', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ledger-'));
  const path = join(dir, ledgerFileName);
  try {
    const cases: [string, RegExp][] = [
      ['{"version": 1, "peers": [', /not JSON/],
      ['{"version": 2, "peers": []}', /expected \{"version": 1/],
      ['{"version": 1, "peers": [{"id": 2, "term": -1, "ackTerm": 0, "ackIndex": 0, "voteTerm": 0, "votedFor": 0}]}', /peers\[0\]\.term is not a whole number/],
      ['{"version": 1, "peers": [{"id": 2, "term": 1, "ackTerm": 3, "ackIndex": 0, "voteTerm": 0, "votedFor": 0}]}', /term past its own term/],
    ];
    for (const [text, reason] of cases) {
      writeFileSync(path, text);
      assert.throws(() => readLedgerFile(dir), (error: Error) => error.message.includes(path) && reason.test(error.message), text);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the keeper writes only when the ledger changed, and once more at stop', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ledger-'));
  try {
    let version = 1;
    let current: [MemberId, PeerRecord][] = records.slice(0, 1);
    const keeper = new LedgerFileKeeper(dir, { ledger: () => ({ version, records: current }) }, (error) => assert.fail(error), 60_000);
    await keeper.save();
    assert.deepEqual(readLedgerFile(dir), current);
    writeFileSync(join(dir, ledgerFileName), '{"version": 1, "peers": []}');
    await keeper.save();
    assert.deepEqual(readLedgerFile(dir), [], 'same version: not written again');
    version = 2;
    current = records;
    await keeper.stop();
    assert.deepEqual(readLedgerFile(dir), records);
    assert.ok(readFileSync(join(dir, ledgerFileName), 'utf8').startsWith('{"version":1'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
