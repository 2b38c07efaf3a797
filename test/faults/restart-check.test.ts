// The nemesis's check after a plain kill -9 restart (restart-check.ts), against a real HTTP server
// answering as the member would: a member that comes back regressed fails the run with its lines;
// one that comes back ok, or one an older copy is then restored on, does not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { TestCell } from '../cluster/harness.js';
import { RestartChecks } from './restart-check.js';

async function memberAnswering(data: () => string): Promise<{ cell: TestCell; close(): void }> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: data(), regressedBecause: 'member 2 heard term 5 from this member, whose disk says term 4' }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const cell = { cell: { clientUrl: () => url, tail: () => 'n1: its last line' } } as unknown as TestCell;
  return { cell, close: () => server.close() };
}

test('a member back regressed after a plain restart fails the run, with its own lines', async () => {
  const member = await memberAnswering(() => 'regressed');
  try {
    const said: string[] = [];
    const checks = new RestartChecks(member.cell, (what) => said.push(what));
    checks.restarted('n1');
    await assert.rejects(checks.settle(), /n1, restarted on its own data after kill -9, says its data went back in time \(member 2 heard term 5.*\n.*its last line/s);
    assert.equal(said.length, 1);
  } finally {
    member.close();
  }
});

test('a member back with its data ok, or one then restored from an older copy, passes', async () => {
  let answer = 'recovering';
  const member = await memberAnswering(() => answer);
  try {
    const ok = new RestartChecks(member.cell, () => undefined);
    ok.restarted('n1');
    setTimeout(() => (answer = 'ok'), 300);
    await ok.settle();
    answer = 'recovering';
    const restored = new RestartChecks(member.cell, () => undefined);
    restored.restarted('n1');
    restored.restoring('n1');
    answer = 'regressed';
    await restored.settle();
  } finally {
    member.close();
  }
});
