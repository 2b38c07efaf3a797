export type {
  Applier,
  DriverBugs,
  FaultWeights,
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
export type { CoreFactory } from './types.js';
