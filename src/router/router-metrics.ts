// The router's metrics, in one place (docs/design/cells.md): forwards per cell, wrong_cell answers
// per cell (stale routing the router corrected or passed on), and the age of its cell map.
import { Counter, Gauge, Registry } from '../metrics/registry.js';

export class RouterMetrics {
  readonly registry = new Registry();
  private readonly forwards = this.registry.add(new Counter('baton_router_forwards_total', 'Requests forwarded, by owning cell.'));
  private readonly wrongCells = this.registry.add(new Counter('baton_router_wrong_cell_total', 'wrong_cell answers received, by the cell that answered.'));
  /** One label object per cell: the registry keys label texts by object. */
  private readonly labels = new Map<string, { cell: string }>();

  constructor(cacheAgeMs: () => number) {
    this.registry.add(new Gauge('baton_router_cell_map_age_seconds', 'Seconds since the control plane last confirmed the cached cell map (-1: never).', () => {
      const ms = cacheAgeMs();
      return ms < 0 ? -1 : ms / 1000;
    }));
  }

  forwarded(cell: string): void {
    this.forwards.inc(this.label(cell));
  }

  wrongCell(cell: string): void {
    this.wrongCells.inc(this.label(cell));
  }

  private label(cell: string): { cell: string } {
    let label = this.labels.get(cell);
    if (label === undefined) this.labels.set(cell, (label = { cell }));
    return label;
  }
}
