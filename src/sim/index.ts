export { startSimulator } from './server.js';
export type { RunningSimulator, SimModel, SimStats, SimulatorOptions, LoadedModelOptions } from './types.js';
export type { ScriptTurn } from './script.js';
