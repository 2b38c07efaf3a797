// A cell whose members start on an older build (old-build.ts) and are moved to this build one by
// one, for the store-format upgrade tests: the steps those tests share, so each test reads as the
// upgrade it checks.
import assert from 'node:assert/strict';
import { findLeader, http, sleep, startTestCell, type TestCell } from './harness.js';
import { thisCli } from './old-build.js';

export interface MixedCell {
  readonly cell: TestCell;
  /** SIGTERM, then the member comes back on this build and the cell is ready again. */
  restartOnThisBuild(name: string): Promise<void>;
}

/** Three members, all on `oldCli` until restarted on this build. */
export async function startMixedCell(oldCli: string): Promise<MixedCell> {
  const onOld = new Set(['n1', 'n2', 'n3']);
  const cell = await startTestCell({ cliPathFor: (name) => (onOld.has(name) ? oldCli : thisCli) });
  return {
    cell,
    async restartOnThisBuild(name) {
      cell.cell.signal(name, 'SIGTERM');
      await cell.cell.waitExit(name);
      onOld.delete(name);
      cell.cell.start(name);
      await cell.cell.waitReady(60_000);
    },
  };
}

export async function memberStatus(cell: TestCell, name: string): Promise<Record<string, any>> {
  const res = await http(`${cell.cell.clientUrl(name)}/v1/cluster/status`, { timeoutMs: 5_000 });
  assert.equal(res.status, 200);
  return res.body;
}

/** Hands leadership to `name` (so the member that must hold back an upgrade is the proposer). */
export async function makeLeader(cell: TestCell, name: string): Promise<void> {
  const id = (await memberStatus(cell, name)).member as number;
  for (let attempt = 0; (await findLeader(cell)) !== name; attempt++) {
    assert.ok(attempt < 20, `${name} never became the leader`);
    await http(`${cell.cell.clientUrl(name)}/v1/cluster/leader`, { method: 'POST', body: JSON.stringify({ to: id }), timeoutMs: 10_000 });
    await sleep(500);
  }
}

/** Waits until every member reports store format `format` (30 s at most); the ms it took. */
export async function everyMemberAtFormat(cell: TestCell, format: number): Promise<number> {
  const started = Date.now();
  for (;;) {
    const formats = await Promise.all(cell.names.map(async (name) => (await memberStatus(cell, name)).storeFormat as number));
    if (formats.every((f) => f === format)) return Date.now() - started;
    assert.ok(Date.now() - started < 30_000, `formats 30 s after the last restart: ${formats.join(',')}`);
    await sleep(200);
  }
}

/** The same state on every member at `revision`, whichever format each record was written in. */
export async function assertContentHashesAgree(cell: TestCell, revision: number): Promise<void> {
  const hashes = await Promise.all(cell.names.map(async (name) => {
    for (let i = 0; ; i++) {
      const res = await http(`${cell.cell.clientUrl(name)}/v1/maintenance/hashkv?revision=${revision}`, { timeoutMs: 10_000 });
      if (res.status === 200) return res.body.hash as number;
      assert.ok(i < 50, `hashkv on ${name}: ${JSON.stringify(res.body)}`);
      await sleep(100);
    }
  }));
  assert.equal(new Set(hashes).size, 1, `content hashes: ${hashes.join(', ')}`);
}
