// One deterministic event loop over several simulated cells (each a World: its own Raft group,
// network, disks and nemesis) and the actors between them (clients, the routing layer, the move
// driver), which live on a queue of their own. Each step runs the earliest event of any queue
// (ties: the actors first, then the cells in order), after setting every world's clock to its
// time, so a call an actor makes into a cell schedules from the same instant everywhere.
import { AssertionError, assert } from '../../base/assert.js';
import { EventQueue } from '../event-queue.js';
import type { Violation } from '../types.js';
import type { World } from '../world.js';

export class CellsLoop {
  nowMs = 0;
  steps = 0;
  /** Proposal ids of the actors' calls: unique in the run, the same in every replay of it. */
  nextCommandId = 1;
  readonly violations: Violation[] = [];
  private readonly queue = new EventQueue<() => void>();

  constructor(
    readonly worlds: readonly World[],
    private readonly trace: ((line: string) => void) | undefined,
  ) {
    assert(worlds.length >= 1, 'a loop runs at least one cell');
  }

  report(invariant: string, detail: string): void {
    this.violations.push({ invariant, step: this.steps, timeMs: this.nowMs, detail });
    this.note(`VIOLATION ${invariant}: ${detail}`);
  }

  note(text: string): void {
    this.trace?.(`${String(this.nowMs).padStart(8)} actors ${text}`);
  }

  /** Every violation so far: the actors' and each cell's own (Raft safety, state hashes). */
  allViolations(): Violation[] {
    return [...this.violations, ...this.worlds.flatMap((world) => world.violations)];
  }

  at(atMs: number, run: () => void): void {
    assert(atMs >= this.nowMs, 'actors schedule nothing in the past');
    this.queue.push(atMs, run);
  }

  /** Resolves `ms` simulated ms from now (an actor's pause; never a wall-clock timer). */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.at(this.nowMs + Math.max(0, Math.ceil(ms)), resolve));
  }

  /** Runs the earliest event of any queue; false when there is none left. */
  step(): boolean {
    let chosen: World | null = null;
    let dueMs = this.queue.peekTime();
    for (const world of this.worlds) {
      const next = world.nextEventMs();
      if (next !== null && (dueMs === null || next < dueMs)) {
        chosen = world;
        dueMs = next;
      }
    }
    if (dueMs === null) return false;
    assert(dueMs >= this.nowMs, 'time never goes back');
    this.nowMs = dueMs;
    for (const world of this.worlds) world.nowMs = dueMs;
    this.steps++;
    if (chosen !== null) {
      chosen.runStep();
      return true;
    }
    const event = this.queue.pop();
    assert(event !== null, 'the actors\' queue had the earliest event');
    try {
      event.item();
    } catch (error) {
      const what = error instanceof AssertionError ? 'assertion failed' : 'exception';
      this.report(what, error instanceof Error ? `${error.message}\n${error.stack ?? ''}` : String(error));
    }
    return true;
  }
}
