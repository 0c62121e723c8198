export { startSimulator } from './server.js';
export type { RunningSimulator, SimModel, SimStats, SimulatorOptions } from './types.js';
