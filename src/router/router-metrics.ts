// The router's metrics, in one place (docs/design/cells.md): forwards per cell, wrong_cell answers
// per cell (stale routing the router corrected or passed on), and the age of its cell map; for
// the stream (/v1/stream): frames per cell, wrong_cell answers and re-sends, connections open.
import { Counter, Gauge, Registry } from '../metrics/registry.js';

export class RouterMetrics {
  readonly registry = new Registry();
  private readonly forwards = this.registry.add(new Counter('baton_router_forwards_total', 'Requests forwarded, by owning cell.'));
  private readonly wrongCells = this.registry.add(new Counter('baton_router_wrong_cell_total', 'wrong_cell answers received, by the cell that answered.'));
  private readonly streamFrames = this.registry.add(new Counter('baton_router_stream_frames_total', 'Stream (/v1/stream) frames forwarded to a cell, by cell (re-sends after wrong_cell included).'));
  private readonly streamWrongCells = this.registry.add(new Counter('baton_router_stream_wrong_cell_total', 'wrong_cell answers to stream frames (watches ended by a move included), by the cell that answered.'));
  private readonly streamRetries = this.registry.add(new Counter('baton_router_stream_retries_total', 'Stream frames re-sent after a wrong_cell answer, by the cell they were re-sent to.'));
  /** One label object per cell: the registry keys label texts by object. */
  private readonly labels = new Map<string, { cell: string }>();

  constructor(cacheAgeMs: () => number, streams: () => { connections: number; upstreams: number } = () => ({ connections: 0, upstreams: 0 })) {
    this.registry.add(new Gauge('baton_router_cell_map_age_seconds', 'Seconds since the control plane last confirmed the cached cell map (-1: never).', () => {
      const ms = cacheAgeMs();
      return ms < 0 ? -1 : ms / 1000;
    }));
    this.registry.add(new Gauge('baton_router_stream_connections', 'Client stream (/v1/stream) connections open on this router.', () => streams().connections));
    this.registry.add(new Gauge('baton_router_stream_upstreams', 'Stream connections from this router to cells (at most one per client connection and cell).', () => streams().upstreams));
  }

  streamFrame(cell: string): void {
    this.streamFrames.inc(this.label(cell));
  }

  streamWrongCell(cell: string): void {
    this.streamWrongCells.inc(this.label(cell));
  }

  streamRetry(cell: string): void {
    this.streamRetries.inc(this.label(cell));
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
