// `baton member replace OLD --name NEW ...` on a real 3-process cell under a write load, with the
// leader killed (-9) while the command waits for NEW to catch up: the command goes on by itself
// (the client fails over), promotes NEW, removes OLD, and the cell ends with NEW a voter, OLD
// gone, every acknowledged write readable; a rerun sees the replacement done; a replacement is
// refused while another learner is pending.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cliPath as cli } from './cli-run.js';
import { http, sleep, startTestCell, type TestCell } from './harness.js';

function runBaton(args: readonly string[], onLine: (line: string) => void): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cli, ...args]);
    let out = '';
    let partial = '';
    const take = (chunk: Buffer): void => {
      out += chunk.toString('utf8');
      partial += chunk.toString('utf8');
      const lines = partial.split('\n');
      partial = lines.pop() ?? '';
      lines.forEach(onLine);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

async function leaderOf(cell: TestCell, among: readonly string[]): Promise<string> {
  for (let i = 0; i < 100; i++) {
    for (const name of among) {
      const status = await http(`${cell.cell.clientUrl(name)}/v1/cluster/status`).catch(() => null);
      const leader = (status?.body?.members as { id: number; name: string }[] | undefined)?.find((m) => m.id === status?.body?.leader);
      if (leader !== undefined) return leader.name;
    }
    await sleep(50);
  }
  throw new Error('no leader');
}

test('member replace: grow first, the leader killed mid-way, shrink last; nothing acknowledged is lost', { timeout: 180_000 }, async () => {
  const cell = await startTestCell({ spares: 1 });
  const acked = new Map<string, string>();
  // Puts that got no answer (a timeout while the leader died) may still have committed, even after
  // a later acknowledged one: the final value is the last acknowledged one or one of these.
  const unsure = new Map<string, string[]>();
  let live = ['n1', 'n2', 'n3'];
  let stopping = false;
  const load = (async () => {
    for (let n = 0; n < 100_000 && !stopping; n++) {
      const name = live[n % live.length] as string;
      const key = `/load/k${n % 30}`;
      const answer = await http(`${cell.cell.clientUrl(name)}/v1/kv${key}`, { method: 'PUT', body: `v${n}` }).catch(() => null);
      if (answer !== null && (answer.status === 200 || answer.status === 201)) {
        acked.set(key, `v${n}`);
      } else {
        unsure.set(key, [...(unsure.get(key) ?? []), `v${n}`]);
        await sleep(20);
      }
    }
  })();
  try {
    const endpoints = cell.names.map((n) => cell.cell.clientUrl(n)).join(',');
    const victim = await leaderOf(cell, cell.names);
    const old = cell.names.find((n) => n !== victim) as string; // replace a follower; the leader dies meanwhile
    let killed = false;
    const run = runBaton(['member', 'replace', old, '--name', 'n4', '--peer-url', cell.cell.peerUrl('n4'), '--client-url', cell.cell.clientUrl('n4'),
      '--endpoints', endpoints, '--wait-s', '60'], (line) => {
      if (line.includes('added as a learner')) {
        cell.cell.start('n4', { join: true });
      }
      if (line.includes('waiting for n4') && !killed) {
        killed = true;
        void cell.cell.kill9(victim).then(() => {
          live = live.filter((n) => n !== victim);
        });
      }
    });
    const done = await run;
    assert.equal(done.code, 0, done.out);
    assert.ok(killed, 'the leader was killed during the replacement');
    assert.match(done.out, /3\/3 .* removed: n4 replaced it/);
    // The killed leader comes back as a member (it was not the one replaced).
    cell.cell.start(victim);
    live = [...cell.names.filter((n) => n !== old), 'n4'];
    await cell.cell.waitReady(45_000, live);
    const members = (await http(`${cell.cell.clientUrl('n4')}/v1/cluster/members`)).body.members as { name: string; role: string }[];
    assert.deepEqual(members.map((m) => `${m.name}:${m.role}`).sort(), live.map((n) => `${n}:voter`).sort());
    // A rerun: nothing to do.
    const again = await runBaton(['member', 'replace', old, '--name', 'n4', '--peer-url', cell.cell.peerUrl('n4'), '--client-url', cell.cell.clientUrl('n4'),
      '--endpoints', live.map((n) => cell.cell.clientUrl(n)).join(',')], () => {});
    assert.equal(again.code, 0, again.out);
    assert.match(again.out, /the replacement is done/);
    stopping = true;
    await load;
    assert.ok(acked.size > 0);
    for (const [key, value] of acked) {
      const read = await http(`${cell.cell.clientUrl('n4')}/v1/kv${key}`);
      const got = read.body.kvs?.[0]?.value as string | undefined;
      assert.ok(got === value || (got !== undefined && (unsure.get(key) ?? []).includes(got)),
        `${key} after the replacement: ${got}, not the acknowledged ${value} or a later unanswered put`);
    }
  } finally {
    stopping = true;
    await load;
    await cell.close();
  }
});
