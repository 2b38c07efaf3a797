// The control plane's move metrics (docs/design/cells.md), fed by the mover on the control cell's
// leader: the write window of each move and where its time went, the time spent in each phase,
// moves finished by outcome, and the moves open now by phase (from the map this member applied).
import type { MoveObserver } from '../control/mover.js';
import type { MovePhase } from '../control/moves.js';
import { Counter, Histogram, LabelledGauge, type Registry } from '../metrics/registry.js';

/** 5 ms doubling to ~41 s: a window is tens to hundreds of ms, a copy may take seconds. */
const moveBuckets = Array.from({ length: 14 }, (_, i) => 0.005 * 2 ** i);

export function addMoveMetrics(registry: Registry, openMoves: () => readonly { phase: MovePhase }[]): MoveObserver {
  const window = registry.add(new Histogram('baton_move_window_seconds', 'Write window of each namespace move: the fence asked of the source until the destination took its table.', moveBuckets));
  const steps = registry.add(new Histogram('baton_move_window_step_seconds', 'The write window by step: fence, last_changes, flip, destination_table.', moveBuckets, false));
  const phases = registry.add(new Histogram('baton_move_phase_seconds', 'Time a move spent in each phase (copying, catching-up, fenced, flipped), recorded when it leaves it.', moveBuckets, false));
  const finished = registry.add(new Counter('baton_moves_total', 'Moves finished on this control member, by outcome (released, aborted).'));
  registry.add(new LabelledGauge('baton_moves_open', 'Moves open now, by phase (the cell map as this member applied it).', () => {
    const counts = new Map<string, number>();
    for (const move of openMoves()) counts.set(move.phase, (counts.get(move.phase) ?? 0) + 1);
    return [...counts].map(([phase, count]) => [{ phase }, count] as const);
  }));
  const stepNames: Record<string, string> = { fence: 'fence', lastChanges: 'last_changes', flip: 'flip', destinationTable: 'destination_table' };
  return {
    window(ms, parts) {
      window.observe(ms / 1000);
      for (const [part, partMs] of Object.entries(parts)) steps.child({ step: stepNames[part] ?? part }).observe(partMs / 1000);
    },
    left(phase, ms) {
      phases.child({ phase }).observe(ms / 1000);
    },
    finished(outcome) {
      finished.inc({ outcome });
    },
  };
}
