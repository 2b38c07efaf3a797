// The fault hooks a fault run drives through a control file: off unless both variables are set,
// a wall-clock offset that follows the file at run time (and is removed cleanly), and a WAL
// fdatasync that waits the file's delay. In-process: this file sets the environment before
// loading io-ops, which reads it once (node --test runs each file in its own process).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

const dir = mkdtempSync(join(tmpdir(), 'baton-fault-hooks-'));
const control = join(dir, 'control.json');
writeFileSync(control, JSON.stringify({ fsyncDelayMs: 0, clockOffsetMs: 0 }));
process.env['BATON_FAULT_INJECTION'] = '1';
process.env['BATON_FAULT_CONTROL'] = control;
const { faultControlPath, readFaultControl, realFileIo } = await import('../../src/wal/io-ops.js');
const { installFaultHooks } = await import('../../src/node/testing/fault-hooks.js');
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
test.after(() => rmSync(dir, { recursive: true, force: true }));

test('fault injection needs both variables', () => {
  assert.equal(faultControlPath({ BATON_FAULT_CONTROL: control }), null);
  assert.equal(faultControlPath({ BATON_FAULT_INJECTION: '1' }), null);
  assert.equal(faultControlPath({ BATON_FAULT_INJECTION: 'true', BATON_FAULT_CONTROL: control }), null);
  assert.equal(faultControlPath({ BATON_FAULT_INJECTION: '1', BATON_FAULT_CONTROL: control }), control);
  const warnings: string[] = [];
  const remove = installFaultHooks({ BATON_FAULT_CONTROL: control }, { warn: (m) => warnings.push(m) });
  remove();
  assert.match(warnings.join('\n'), /stays OFF/);
});

test('a missing or bad control file means no faults; values are bounded', () => {
  assert.deepEqual(readFaultControl(join(dir, 'absent.json')), { fsyncDelayMs: 0, clockOffsetMs: 0 });
  const bad = join(dir, 'bad.json');
  writeFileSync(bad, '{"fsyncDelayMs": "slow", "clockOffsetMs": -5');
  assert.deepEqual(readFaultControl(bad), { fsyncDelayMs: 0, clockOffsetMs: 0 });
  writeFileSync(bad, JSON.stringify({ fsyncDelayMs: -3, clockOffsetMs: -1e12 }));
  assert.deepEqual(readFaultControl(bad), { fsyncDelayMs: 0, clockOffsetMs: -24 * 3600 * 1000 });
});

test('the wall clock follows the control file at run time, and comes back when removed', async () => {
  const warnings: string[] = [];
  const remove = installFaultHooks(process.env, { warn: (m) => warnings.push(m) });
  try {
    assert.match(warnings[0] ?? '', /FAULT INJECTION ACTIVE/);
    assert.ok(Math.abs(Date.now() - new Date().getTime()) < 1_000);
    writeFileSync(control, JSON.stringify({ clockOffsetMs: -3_600_000 }));
    await sleep(300);
    const skew = new Date().getTime() - Date.now();
    assert.ok(skew > 3_599_000 && skew < 3_601_000, `the clock stepped back an hour (skew ${skew})`);
    assert.ok(warnings.some((m) => /wall clock offset -3600000 ms/.test(m)));
  } finally {
    remove();
    writeFileSync(control, JSON.stringify({}));
  }
  assert.ok(Math.abs(Date.now() - new Date().getTime()) < 1_000);
});

test('a WAL fdatasync waits the delay of the control file', async () => {
  const file = join(dir, 'segment');
  const fd = openSync(file, 'w');
  const timed = (): number => {
    const started = performance.now();
    realFileIo.datasync(fd);
    return performance.now() - started;
  };
  try {
    writeFileSync(control, JSON.stringify({ fsyncDelayMs: 300 }));
    await sleep(150);
    const slow = timed();
    writeFileSync(control, JSON.stringify({ fsyncDelayMs: 0 }));
    await sleep(150);
    timed(); // rereads the file
    const fast = timed();
    assert.ok(slow >= 290, `slow disk: ${slow.toFixed(1)} ms`);
    assert.ok(fast < slow - 200, `healed disk: ${fast.toFixed(1)} ms vs ${slow.toFixed(1)} ms`);
  } finally {
    closeSync(fd);
  }
});
