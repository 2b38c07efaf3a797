// A rolling upgrade across one peer protocol step, with real processes: f266807 (peer protocol 2,
// the build before member health travelled on heartbeats) is built into a temporary directory; a
// cell starts with n1 and n2 on it and n3 on this build (protocol 3). Under a write load the
// leader is killed (-9) and restarted, then n1 and n2 are stopped and started again on this build
// one at a time, on their own data directories (the disk formats did not change). No acknowledged
// write is lost, writes succeed in every phase, and once every member runs this build health
// travels again (every member reports all three healthy). Needs git history with f266807 (skipped
// otherwise) or BATON_OLD_BUILD=DIR, a tree already built there (DIR/dist/src/cli/main.js).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findLeader, http, sleep, startTestCell } from './harness.js';

const oldCommit = 'f266807';
const repoRoot = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..', '..');

/** The old build's root (built here unless BATON_OLD_BUILD names one), or why there is none. */
function oldBuild(): { dir: string; cleanup: () => void } | string {
  const given = process.env.BATON_OLD_BUILD;
  if (given !== undefined && given !== '') {
    return existsSync(join(given, 'dist/src/cli/main.js')) ? { dir: given, cleanup: () => {} } : `no build in ${given}`;
  }
  try {
    execFileSync('git', ['-C', repoRoot, 'cat-file', '-e', `${oldCommit}^{commit}`], { stdio: 'ignore' });
  } catch {
    return `commit ${oldCommit} not in this checkout's history`;
  }
  const dir = mkdtempSync(join(tmpdir(), 'baton-old-'));
  const archive = execFileSync('git', ['-C', repoRoot, 'archive', oldCommit], { maxBuffer: 1 << 30 });
  execFileSync('tar', ['-x', '-C', dir], { input: archive });
  symlinkSync(join(repoRoot, 'node_modules'), join(dir, 'node_modules'));
  execFileSync(process.execPath, [join(repoRoot, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], { cwd: dir, stdio: 'ignore' });
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

const build = oldBuild();

test('a cell upgrades from peer protocol 2 to 3 one member at a time under writes', { skip: typeof build === 'string' ? build : false, timeout: 180_000 }, async (t) => {
  assert.ok(typeof build !== 'string');
  const oldCli = join(build.dir, 'dist/src/cli/main.js');
  const onOld = new Set(['n1', 'n2']);
  const cell = await startTestCell({ cliPathFor: (name) => (onOld.has(name) ? oldCli : join(repoRoot, 'dist/src/cli/main.js')) });
  try {
    const acked = new Map<string, { value: string; revision: number }>();
    let phase = 'mixed';
    const ackedIn = new Map<string, number>();
    let stop = false;
    const writer = async (id: number): Promise<void> => {
      for (let n = 0; !stop; n++) {
        const name = cell.names[(id + n) % cell.names.length] as string;
        if (!cell.cell.isRunning(name)) {
          await sleep(20);
          continue;
        }
        const key = `/u/${id}-${n}`;
        const value = `v${id}.${n}`;
        const during = phase;
        try {
          const res = await http(`${cell.cell.clientUrl(name)}/v1/kv${key}`, { method: 'PUT', body: value, timeoutMs: 4000 });
          if (res.status === 200 || res.status === 201) {
            acked.set(key, { value, revision: res.body.revision });
            ackedIn.set(during, (ackedIn.get(during) ?? 0) + 1);
          }
        } catch {
          // refused or timed out: not acknowledged
        }
      }
    };
    const writers = Array.from({ length: 6 }, (_, i) => writer(i));
    await sleep(1500);
    // The new member talks to the old ones in protocol 2 (it was refused in 3 and dialled again).
    assert.match(cell.cell.tail('n3', 2000), /older protocol version/);
    const sofar = Math.max(...[...acked.values()].map((a) => a.revision));
    const onNew = await http(`${cell.cell.clientUrl('n3')}/v1/kv/u/?prefix=true&consistency=serializable&minRevision=${sofar}`, { timeoutMs: 5000 });
    assert.equal(onNew.status, 200, 'the new member replicates in the mixed cell');
    phase = 'leader killed';
    const leader = await findLeader(cell);
    await cell.cell.kill9(leader);
    await sleep(2500);
    cell.cell.start(leader);
    await cell.cell.waitReady(30_000);
    for (const name of ['n1', 'n2']) {
      phase = `${name} upgraded`;
      cell.cell.signal(name, 'SIGTERM');
      await cell.cell.waitExit(name);
      onOld.delete(name);
      cell.cell.start(name);
      await cell.cell.waitReady(30_000);
      await sleep(1500);
    }
    stop = true;
    await Promise.all(writers);
    for (const during of ['mixed', 'leader killed', 'n1 upgraded', 'n2 upgraded']) {
      assert.ok((ackedIn.get(during) ?? 0) > 0, `writes acknowledged while ${during} (${JSON.stringify([...ackedIn])})`);
    }
    t.diagnostic(`leader killed: ${leader}; writes acknowledged by phase: ${JSON.stringify([...ackedIn])}`);
    const revisions = [...acked.values()].map((a) => a.revision);
    assert.equal(new Set(revisions).size, revisions.length, 'no revision acknowledged twice');
    const maxRevision = Math.max(...revisions);
    for (const name of cell.names) {
      const res = await http(`${cell.cell.clientUrl(name)}/v1/kv/u/?prefix=true&consistency=serializable&minRevision=${maxRevision}`);
      assert.equal(res.status, 200);
      const found = new Map<string, string>(res.body.kvs.map((kv: { key: string; value: string }) => [kv.key, kv.value]));
      for (const [key, { value }] of acked) assert.equal(found.get(key), value, `${key} on ${name}`);
    }
    // All on protocol 3: the leader's view travels again and every member reports it.
    const deadline = Date.now() + 10_000;
    for (;;) {
      const views = await Promise.all(cell.names.map(async (name) => {
        const status = await http(`${cell.cell.clientUrl(name)}/v1/cluster/status`);
        return (status.body.members as { name: string; healthy: boolean }[]).filter((m) => m.healthy).map((m) => m.name).sort().join(',');
      }));
      if (views.every((view) => view === 'n1,n2,n3')) break;
      if (Date.now() > deadline) assert.fail(`health after the upgrade: ${views.join(' | ')}`);
      await sleep(200);
    }
  } finally {
    await cell.close();
    build.cleanup();
  }
});
