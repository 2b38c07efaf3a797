export type {
  Applier,
  DriverBugs,
  ApplierFactory,
  FaultWeights,
  Scenario,
  ScriptedFault,
  SimEvent,
  SimOptions,
  SimResult,
  SimStats,
  SimTimeMs,
  Violation,
} from './types.js';
export { simulate, livenessBudgetMsDefault } from './simulate.js';
export { seedsToRun, parseSeed } from './seeds.js';
export { RegisterMachine, encodeWrite, decodeWrite } from './register.js';
export type { CoreFactory } from './types.js';
