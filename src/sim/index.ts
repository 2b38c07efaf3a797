// The deterministic cluster simulator. A seed draws a scenario (3 or 5 voters plus learners,
// network, disk, fault mix, workload, core knobs) and replays it exactly; checkers run inside
// every step, and a liveness phase follows the faults.
//
//   npm run sim -- --seeds 1000 [--seed-start S]   sweep; prints the replay command per failure
//   npm run sim -- --seed S --trace                one line per event
//   npm run sim -- --seeds 50 --fault-phase-ms 60000   a soak
//   npm run sim -- --seeds 200 --driver server     members run src/driver/driver.ts
//   npm run sim -- --seeds 200 --workload leases   lease holders on the production lease service
//   BATON_SEEDS=20000 npm test                     the sharded sweep in test/sim, bigger
//
// Layout: simulate.ts (a run), world.ts (event loop, members), sim-node.ts (the sim's driver
// and the checkers' taps), server-driver.ts (the production driver's doors), delivery.ts,
// network.ts, disk.ts (the world models), nemesis.ts (faults), workload.ts (client),
// checker.ts + mirror-log.ts (safety), catch-up.ts (the liveness deadline's allowance for the
// log the faults left behind), register.ts (the default state machine), lease-*.ts (the lease
// workload: holders, the service inside a member, forwarding, and the lease checker).
export type {
  Applier,
  DriverBugs,
  FaultWeights,
  LeaseBugs,
  LeaseStats,
  MvccBugs,
  Scenario,
  ScriptedFault,
  SimEvent,
  SimOptions,
  SimStateMachine,
  SimResult,
  SimStats,
  SimTimeMs,
  Violation,
  WriteCommand,
} from './types.js';
export { simulate, simulateAsync, livenessBudgetMsDefault } from './simulate.js';
export { seedsToRun, parseSeed } from './seeds.js';
export { RegisterMachine, encodeWrite, decodeWrite, registerStateMachine } from './register.js';
export { mvccStateMachine } from './mvcc-machine.js';
export type { CoreFactory } from './types.js';
export { drawSweep, plainSweepOptions, sweepLockShare } from './sweep.js';
export type { SweepDraw } from './sweep.js';
