// The canary against the dev cell as `npm start` runs it (`baton dev`, here on free ports and with
// BATON_CANARY=true, which its members inherit): `baton canary --endpoints ...` passes (exit 0,
// every probe held, no leader loss), and the cell's own canary runs on exactly one member, its
// leader, with every probe succeeding. (A faulted cell: canary.test.ts and cell-canary.test.ts.)
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cliPath } from './cli-run.js';
import { freePorts, sleep } from './harness.js';

const scratch = mkdtempSync(join(tmpdir(), 'baton-dev-canary-'));
let dev: ChildProcess | null = null;
after(async () => {
  if (dev !== null && dev.exitCode === null) {
    dev.kill('SIGTERM');
    await new Promise((resolve) => dev?.once('exit', resolve));
  }
  rmSync(scratch, { recursive: true, force: true });
});

/** Starts `baton dev` on free ports; its ready line's client URLs, or null when a port was taken meanwhile. */
async function startDev(attempt: number): Promise<string[] | null> {
  const ports = await freePorts(9);
  const list = (from: number): string => ports.slice(from, from + 3).join(',');
  const child = spawn(process.execPath, [cliPath, 'dev', '--data-dir', join(scratch, `dev${attempt}`),
    '--client-ports', list(0), '--peer-ports', list(3), '--grpc-ports', list(6)], {
    stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, BATON_CANARY: 'true' },
  });
  dev = child;
  let out = '';
  let err = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ready line in 60 s:\n${out.slice(-2000)}\n${err.slice(-2000)}`)), 60_000);
    child.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const ready = /^Baton dev cell ready: (\S+)$/m.exec(out);
      if (ready !== null) {
        clearTimeout(timer);
        resolve((ready[1] as string).split(','));
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (code === 2 && /already in use/.test(err)) resolve(null);
      else reject(new Error(`baton dev exited ${code}:\n${err.slice(-2000)}`));
    });
  });
}

function runCanary(endpoints: readonly string[], durationS: number): Promise<{ code: number | null; lines: Record<string, any>[]; stderr: string }> {
  const child = spawn(process.execPath, [cliPath, 'canary', '--endpoints', endpoints.join(','), '--duration-s', String(durationS)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const timer = setTimeout(() => child.kill('SIGKILL'), (durationS + 30) * 1000);
  return new Promise((resolve) => child.once('exit', (code) => {
    clearTimeout(timer);
    const lines = out.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, any>);
    resolve({ code, lines, stderr });
  }));
}

test('the canary against `baton dev` (npm start): baton canary passes and the dev cell\'s leader runs its own', { timeout: 180_000 }, async (t) => {
  let endpoints: string[] | null = null;
  for (let attempt = 1; endpoints === null && attempt <= 3; attempt++) endpoints = await startDev(attempt);
  assert.ok(endpoints !== null && endpoints.length === 3, 'the dev cell started');

  const run = await runCanary(endpoints, 8);
  const summary = run.lines.find((line) => line.event === 'summary');
  t.diagnostic(`baton canary against baton dev: exit ${run.code}, ${JSON.stringify(summary?.probes)}`);
  assert.equal(run.code, 0, `${JSON.stringify(run.lines.filter((line) => line.event !== 'summary').slice(0, 10))}\n${run.stderr}`);
  assert.equal(summary?.passed, true);
  assert.equal(summary?.violations, 0);
  assert.equal(summary?.leaderLosses, 0);
  for (const probe of ['lock', 'election', 'lease', 'watch', 'stale_owner']) assert.ok(summary?.probes[probe].ok >= 4, `${probe}: ${JSON.stringify(summary?.probes[probe])}`);

  // The cell's own canary (BATON_CANARY=true): one member runs it, every probe has succeeded.
  const deadline = Date.now() + 30_000;
  let seen: { url: string; running: number; ok: number; violations: number }[] = [];
  while (Date.now() < deadline) {
    seen = await Promise.all(endpoints.map(async (url) => {
      const text = await (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(3000) })).text();
      const sum = (pattern: RegExp): number => [...text.matchAll(pattern)].reduce((total, match) => total + Number(match[1]), 0);
      return {
        url,
        running: sum(/^baton_canary_running (\d+)$/gm),
        ok: Math.min(...['lock', 'election', 'lease', 'watch', 'stale_owner'].map((probe) => sum(new RegExp(`^baton_canary_probes_total\\{probe="${probe}",result="ok"\\} (\\d+)$`, 'gm')))),
        violations: sum(/^baton_canary_violations_total\{probe="\w+"\} (\d+)$/gm),
      };
    }));
    if (seen.filter((member) => member.running === 1).length === 1 && seen.some((member) => member.running === 1 && member.ok >= 3)) break;
    await sleep(300);
  }
  t.diagnostic(`in-cell canary: ${JSON.stringify(seen)}`);
  assert.equal(seen.filter((member) => member.running === 1).length, 1, 'one member runs the cell\'s canary');
  assert.ok(seen.some((member) => member.running === 1 && member.ok >= 3), 'its probes succeed');
  assert.equal(seen.reduce((total, member) => total + member.violations, 0), 0);
});
