// The routing layer of the cells world, as src/router and the client library route: a cached
// namespace -> cell assignment (refreshed from the control plane's map now and then, like the
// router's watch of it, so it is often stale across a move), each command sent to the cached
// cell; `wrong_cell` corrects the cache from its details (a newer epoch only) and the command is
// sent again at once; a landing destination's 503 is retried shortly. Same Request-ID throughout:
// a refused attempt applied nothing.
import { assert } from '../../base/assert.js';
import type { Command } from '../../mvcc/index.js';
import type { CellsLoop } from './cells-loop.js';
import type { SimControl } from './sim-control.js';
import type { CallOutcome, SimCell } from './sim-cell.js';
import type { CellsStats } from './types.js';

const refreshEveryMs = 400;
/** Attempts of one command (wrong_cell hops, landing and no-leader retries). */
const attemptsMax = 12;
const retryMs = 15;

export type RoutedOutcome = CallOutcome & { readonly cell: string };

export class SimRouter {
  private readonly cache = new Map<string, { cell: string; epoch: number }>();

  constructor(
    private readonly control: SimControl,
    private readonly loop: CellsLoop,
    private readonly stats: CellsStats,
  ) {
    this.refresh();
  }

  startRefreshing(): void {
    const again = (): void => {
      this.refresh();
      this.loop.at(this.loop.nowMs + refreshEveryMs, again);
    };
    this.loop.at(this.loop.nowMs + refreshEveryMs, again);
  }

  private refresh(): void {
    for (const n of this.control.map.namespaces) this.correct(n.prefix, n.cell, n.epoch);
  }

  /** The cell the cache names for `prefix` now. */
  cellOf(prefix: string): string {
    const routed = this.cache.get(prefix);
    assert(routed !== undefined, `namespace ${prefix} is in the map`);
    return routed.cell;
  }

  /** The epoch of the cached assignment of `prefix`. */
  epochOf(prefix: string): number {
    return this.cache.get(prefix)?.epoch ?? 0;
  }

  /** Takes an owner a refusal named, if its epoch is newer than the cached one. */
  correct(prefix: string, cell: string, epoch: number): void {
    const held = this.cache.get(prefix);
    if (held === undefined || epoch > held.epoch) this.cache.set(prefix, { cell, epoch });
  }

  /** Sends `op` (keys of namespace `prefix` only) to its cell, following wrong_cell. */
  async send(prefix: string, op: Command, requestId: string): Promise<RoutedOutcome> {
    let last: RoutedOutcome | null = null;
    for (let attempt = 0; attempt < attemptsMax; attempt++) {
      const routed = this.cache.get(prefix);
      assert(routed !== undefined, `namespace ${prefix} is in the map`);
      const cell = this.control.cells.get(routed.cell) as SimCell;
      const answer = await cell.propose(op, requestId);
      last = { ...answer, cell: cell.id };
      if (answer.kind === 'applied' || answer.kind === 'unknown') return last;
      if (answer.kind === 'notSent') {
        await this.loop.sleep(retryMs);
        continue;
      }
      const details = answer.error.details;
      if (answer.error.code === 'wrong_cell' && typeof details['cell'] === 'string' && details['cell'] !== '') {
        this.stats.wrongCellFollowed++;
        this.correct(prefix, details['cell'], Number(details['epoch']));
        continue; // at once, no sleep
      }
      if (answer.error.code === 'unavailable' && details['landingFrom'] !== undefined) {
        this.stats.landingRetries++;
        await this.loop.sleep(retryMs);
        continue;
      }
      return last;
    }
    // Every attempt was refused or not sent: nothing applied.
    assert(last !== null && last.kind !== 'applied' && last.kind !== 'unknown', 'only definite non-answers end the loop');
    return last;
  }
}
