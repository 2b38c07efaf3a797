// A rolling upgrade under load, the procedure of docs/deploy.md run by test/faults/roll.ts: from the
// previous release build (rollFrom, built from git history; skipped without it, or
// BATON_ROLL_FROM_BUILD=DIR names a tree built there) to this build one member at a time, and back
// again, with the same bar as a rolling restart (rolling-restart.test.ts). In `npm run test:long`.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { assertRoll, runRoll } from '../faults/roll.js';
import { oldBuild, thisCli } from './old-build.js';

/** The previous release: session 13's last commit. */
const rollFrom = '94d9781';

const previous = oldBuild(rollFrom, 'BATON_ROLL_FROM_BUILD');
// This roll goes back to the previous build, which cannot open a store moved to a newer format:
// this build's members hold the format (--store-upgrade off, through the environment the members
// inherit; the previous build does not read it), as docs/deploy.md says to for an undoable roll.
process.env.BATON_STORE_UPGRADE = 'off';
after(() => {
  if (typeof previous !== 'string') previous.cleanup();
});

test(`a rolling upgrade from ${rollFrom} to this build and back under load`, { skip: typeof previous === 'string' ? previous : false, timeout: 240_000 }, async (t) => {
  assert.ok(typeof previous !== 'string');
  const names = ['n1', 'n2', 'n3'];
  const summary = await runRoll({
    seed: 3002n,
    initialCli: () => previous.cli,
    steps: [...names.map((name) => ({ name, cli: thisCli })), ...names.map((name) => ({ name, cli: previous.cli }))],
    say: (line) => t.diagnostic(line),
  });
  for (const line of summary.lines) t.diagnostic(line);
  assertRoll(summary);
});
