// After a plain kill -9 and restart, the member must come back as itself: its disk holds every
// vote and acknowledgement it gave (the WAL's fdatasync), so its peers' ledgers (src/raft/
// peer-ledger.ts) must find nothing missing. A member that says its data went back in time after
// a plain restart is a durability bug, or a ledger that records a promise never made durable: the
// run fails with the member's own lines. Checked in the background, so the fault schedule does not
// move; a later fault that restores an older copy on the member (which must be found regressed)
// ends the check.
import { http, sleep, type TestCell } from '../cluster/harness.js';

/** How long the restarted member has to answer its status with its data ok. */
const settleMsMax = 20_000;

export class RestartChecks {
  private readonly failures: string[] = [];
  private readonly pending = new Set<Promise<void>>();
  /** Per member, how many older copies were restored on it: a check started before one ends. */
  private readonly restores = new Map<string, number>();

  constructor(private readonly cell: TestCell, private readonly say: (what: string) => void) {}

  /** An older copy is about to be restored on `name`: checks running on it stop judging. */
  restoring(name: string): void {
    this.restores.set(name, (this.restores.get(name) ?? 0) + 1);
  }

  /** `name` was just started again on its own data after a kill -9. */
  restarted(name: string): void {
    const check = this.check(name, this.restores.get(name) ?? 0).finally(() => this.pending.delete(check));
    this.pending.add(check);
  }

  /** Waits for the checks in flight; throws if any member came back regressed. */
  async settle(): Promise<void> {
    await Promise.all(this.pending);
    if (this.failures.length > 0) throw new Error(this.failures.join('\n'));
  }

  private async check(name: string, restores: number): Promise<void> {
    const started = Date.now();
    const superseded = (): boolean => (this.restores.get(name) ?? 0) !== restores;
    while (Date.now() - started < settleMsMax && !superseded()) {
      const status = await http(`${this.cell.cell.clientUrl(name)}/v1/cluster/status`, { timeoutMs: 2_000 }).catch(() => null);
      if (superseded()) return;
      const data = status?.body?.data;
      if (data === 'ok') return;
      if (data === 'regressed') {
        const why = `${name}, restarted on its own data after kill -9, says its data went back in time ` +
          `(${String(status?.body?.regressedBecause)}); its last lines:\n${this.cell.cell.tail(name, 20)}`;
        this.failures.push(why);
        this.say(why.split('\n')[0] as string);
        return;
      }
      await sleep(200);
    }
  }
}
