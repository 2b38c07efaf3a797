// The older-copy fault: a member's data directory is copied while the member runs (SIGSTOP for
// the copy, so it is the image a crash at that moment would leave), the cell goes on with it for
// the fault's duration (it acknowledges more, maybe votes in a new term), then the member is
// killed, its directory replaced by the old copy, and started: an operator restoring last week's
// disk image. It must find out from its peers (src/raft/peer-ledger.ts) that it went back in time
// and stay out, never serving the past as current; the fault then repairs it as an operator
// would: removed from the cell, its directory wiped, added back as a new learner and promoted
// (membership-fault.ts). A restored member that never says so fails the run, unless it had
// promised nothing beyond the copy (the cell wrote nothing meanwhile) and catches up.
import { cpSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { http, sleep, type TestCell } from '../cluster/harness.js';
import { replaceMember } from './membership-fault.js';

/**
 * How long the restored member has to find out: its start (seconds on a loaded machine) and a
 * few election timeouts at the runner's ticks.
 */
const noticeMsMax = 30_000;

let copies = 0;

export async function olderCopy(cell: TestCell, victim: string, aheadMs: number, say: (what: string) => void): Promise<void> {
  const copy = join(cell.dataDir, `older-copy-${++copies}`);
  cell.cell.signal(victim, 'SIGSTOP');
  try {
    cpSync(cell.cell.dataDirOf(victim), copy, { recursive: true });
  } finally {
    cell.cell.signal(victim, 'SIGCONT');
  }
  say(`copied ${victim}'s data directory`);
  await sleep(aheadMs);
  await cell.cell.kill9(victim);
  rmSync(cell.cell.dataDirOf(victim), { recursive: true, force: true });
  cpSync(copy, cell.cell.dataDirOf(victim), { recursive: true });
  rmSync(copy, { recursive: true, force: true });
  cell.cell.start(victim);
  say(`${victim} restarted on the copy`);
  const started = Date.now();
  let last = '';
  while (Date.now() - started < noticeMsMax) {
    const status = await http(`${cell.cell.clientUrl(victim)}/v1/cluster/status`, { timeoutMs: 2_000 }).catch(() => null);
    last = status === null ? 'no answer' : `data ${status.body?.data}`;
    if (status?.body?.data === 'regressed') {
      say(`${victim} found it went back in time after ${Date.now() - started} ms: ${status.body.regressedBecause}`);
      await replaceMember(cell, victim, 0, say);
      return;
    }
    await sleep(100);
  }
  // Not found: right only if the copy lacked nothing the member had promised (the cell wrote
  // nothing it acknowledged meanwhile, e.g. the workload had stopped at the end of a run). Then it
  // simply catches up like any lagging follower; the history checkers judge what it served.
  const caughtUp = await caughtUpWithTheCell(cell, victim);
  if (last === 'data ok' && caughtUp !== null) {
    say(`${victim} restarted on the copy found nothing it had promised beyond it, and caught up (${caughtUp})`);
    return;
  }
  const running = cell.cell.isRunning(victim) ? 'running' : 'exited';
  throw new Error(`older-copy: ${victim}, restarted on a copy of its data taken ${aheadMs} ms earlier, ` +
    `did not find out within ${noticeMsMax} ms (last: ${last}; ${running}); its last lines:\n${cell.cell.tail(victim, 15)}`);
}

/** The member's revision equals what another member reports, within a few seconds; else null. */
async function caughtUpWithTheCell(cell: TestCell, victim: string): Promise<string | null> {
  const others = cell.names.filter((name) => name !== victim);
  for (let attempt = 0; attempt < 30; attempt++) {
    const mine = await http(`${cell.cell.clientUrl(victim)}/v1/cluster/status`, { timeoutMs: 2_000 }).catch(() => null);
    for (const other of others) {
      const theirs = await http(`${cell.cell.clientUrl(other)}/v1/cluster/status`, { timeoutMs: 2_000 }).catch(() => null);
      const revision = theirs?.body?.revision;
      if (typeof revision === 'number' && mine?.body?.revision === revision) return `revision ${revision} like ${other}`;
    }
    await sleep(200);
  }
  return null;
}
