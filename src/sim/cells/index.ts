// The cells world (issue 24): several data cells and the moves between them in one seeded loop.
//   simulate-cells.ts  a run: cells, control plane, routing layer, clients, move driver, checkers
//   cells-loop.ts      the event loop over the cells' worlds and the actors' queue
//   sim-cell.ts        calls into one cell (propose through a member's driver, linearizable read)
//   sim-control.ts     the cell map in the control cell (src/control's pure steps), pushes to the cells
//   cells-watchers.ts  checker 4 (opt-in): watch sequences per namespace exact across moves
//   sim-router.ts      routing by a cached map, following wrong_cell at once
//   sim-mover.ts       the move driver (the mover's commands, in the mover's order)
//   owner-checker.ts   one writer per namespace, revisions and the floor, from what cells apply
//   cells-workload.ts  clients; tokens grow, no acknowledged write lost
export { simulateCells } from './simulate-cells.js';
export type { CellsBugs, CellsOptions, CellsResult, CellsStats } from './types.js';
