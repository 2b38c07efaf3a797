// Rolling restarts and upgrades under load, the procedure of docs/deploy.md ("Rolling restart and
// upgrade") run as an operator would (test/faults/roll.ts): kv and lock clients through the client
// library the whole time, the history checked for linearizability, durability and lock safety.
// What must hold: no operation fails after the client's retries, no checker violation, at most
// one leader change per restarted member, every member exits 0 on SIGTERM, and p99 latency
// during the roll within 2x the steady state before it (the bar is 2x plus 50 ms: on a loaded
// 2-core machine a steady p99 of 10-20 ms moves by tens of ms with no roll at all).
// rolling-restart-hosts.test.ts runs the same roll on three "hosts" (network namespaces);
// rolling-upgrade-roll.test.ts runs the procedure as an upgrade to this build and back.
import { test } from 'node:test';
import { assertRoll, runRoll } from '../faults/roll.js';
import { thisCli } from './old-build.js';

test('a rolling restart of all three members under kv and lock load: nothing fails, nothing violated', { timeout: 150_000 }, async (t) => {
  const summary = await runRoll({
    seed: 3001n,
    initialCli: () => thisCli,
    steps: ['n1', 'n2', 'n3'].map((name) => ({ name, cli: thisCli })),
    say: (line) => t.diagnostic(line),
  });
  for (const line of summary.lines) t.diagnostic(line);
  assertRoll(summary);
});
