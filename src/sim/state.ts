import { badRequest, modelNotFound } from './errors.js';
import type { SchedulingPolicy } from './fields.js';
import { SimMetrics } from './metrics.js';
import { Scheduler, type SchedulerSettings } from './scheduler.js';
import { loadScript, parseScript, type ScriptTurn } from './script.js';
import type { LoadedModelOptions, ResolvedModel, SimModel, SimulatorOptions } from './types.js';

export type { ResolvedModel } from './types.js';

/** Everything a request handler needs, shared by one simulator instance. */
export interface SimState {
  models: Map<string, ResolvedModel>;
  modelList: ResolvedModel[];
  ttftMs: number;
  itlMs: number;
  failureRate: number;
  defaultMaxTokens: number;
  /** Date.now() from which the simulator answers; a comparison, not a timer. */
  readyAt: number;
  metrics: SimMetrics;
  /**
   * vLLM's `--scheduling-policy`: what a request's `priority` may be, and how a loaded model orders
   * its queue.
   */
  schedulingPolicy: SchedulingPolicy;
  /** Requests generating right now, so close() can stop them. */
  /** The requests under way, each cancelled when the simulator stops (`Job`). */
  jobs: Set<{ cancel(): void }>;
}

const API_NAMES = { chat: 'Chat Completions API', embedding: 'Embeddings API' } as const;

/**
 * Validates options and fills defaults; throws on values that cannot work.
 *
 * @example
 * const state = createState({ models: [{ name: 'sim-chat', task: 'chat' }] });
 */
export function createState(options: SimulatorOptions): SimState {
  if (!Array.isArray(options.models) || options.models.length === 0) {
    throw new TypeError('startSimulator: at least one model is required');
  }
  const modelList = options.models.map(resolveModel);
  const models = new Map<string, ResolvedModel>();
  for (const model of modelList) {
    if (models.has(model.name)) throw new TypeError(`startSimulator: duplicate model name "${model.name}"`);
    models.set(model.name, model);
  }
  const failureRate = options.failureRate ?? 0;
  if (!(failureRate >= 0 && failureRate <= 1)) throw new RangeError('startSimulator: failureRate must be within 0..1');
  const metrics = new SimMetrics(modelList);
  const schedulingPolicy = options.schedulingPolicy ?? 'fcfs';
  if (schedulingPolicy !== 'fcfs' && schedulingPolicy !== 'priority')
    throw new TypeError(`startSimulator: schedulingPolicy must be 'fcfs' or 'priority'`);
  if (options.loaded) {
    const settings = schedulerSettings(options.loaded, schedulingPolicy);
    for (const model of modelList)
      if (model.task === 'chat') metrics.schedulers.set(model.name, new Scheduler(settings));
  }
  return {
    models,
    modelList,
    ttftMs: nonNegative('ttftMs', options.ttftMs ?? 0),
    itlMs: nonNegative('itlMs', options.itlMs ?? 0),
    failureRate,
    defaultMaxTokens: positiveInt('defaultMaxTokens', options.defaultMaxTokens ?? 16),
    readyAt: Date.now() + nonNegative('startupDelayMs', options.startupDelayMs ?? 0),
    metrics,
    schedulingPolicy,
    jobs: new Set(),
  };
}

/**
 * The model a request names, checked against the API it called. Without a
 * "model" field the first model serving that API answers, as vLLM defaults to
 * its only served model.
 *
 * @example
 * const model = findModel(state, body.model, 'chat');
 */
export function findModel(state: SimState, requested: unknown, task: ResolvedModel['task']): ResolvedModel {
  let model: ResolvedModel | undefined;
  if (requested === undefined || requested === null) {
    model = state.modelList.find((m) => m.task === task) ?? state.modelList[0];
  } else if (typeof requested === 'string') {
    model = state.models.get(requested);
    if (!model) throw modelNotFound(requested);
  } else {
    throw modelNotFound(requested);
  }
  if (!model || model.task !== task) throw badRequest(`The model does not support ${API_NAMES[task]}`);
  return model;
}

/** A loaded model's settings with defaults (see LoadedModelOptions), checked. */
function schedulerSettings(loaded: LoadedModelOptions, policy: SchedulingPolicy): SchedulerSettings {
  const timeScale = loaded.timeScale ?? 1;
  if (!(Number.isFinite(timeScale) && timeScale > 0))
    throw new RangeError('startSimulator: loaded.timeScale must be a number > 0');
  return {
    maxNumSeqs: positiveInt('loaded.maxNumSeqs', loaded.maxNumSeqs ?? 256),
    blockSize: positiveInt('loaded.blockSize', loaded.blockSize ?? 16),
    numGpuBlocks: positiveInt('loaded.numGpuBlocks', loaded.numGpuBlocks ?? 2048),
    prefillMsPerToken: nonNegative('loaded.prefillMsPerToken', loaded.prefillMsPerToken ?? 0.1),
    decodeMsPerStep: nonNegative('loaded.decodeMsPerStep', loaded.decodeMsPerStep ?? 10),
    decodeMsPerSeq: nonNegative('loaded.decodeMsPerSeq', loaded.decodeMsPerSeq ?? 0.25),
    timeScale,
    policy,
  };
}

function resolveModel(model: SimModel): ResolvedModel {
  if (typeof model.name !== 'string' || model.name.length === 0) {
    throw new TypeError('startSimulator: every model needs a name');
  }
  if (model.task !== 'chat' && model.task !== 'embedding') {
    throw new TypeError(`startSimulator: model "${model.name}" has unknown task "${String(model.task)}"`);
  }
  return {
    name: model.name,
    task: model.task,
    maxModelLen: positiveInt(`${model.name}.maxModelLen`, model.maxModelLen ?? 4096),
    reasoning: model.task === 'chat' && model.reasoning === true,
    embeddingDimensions: positiveInt(`${model.name}.embeddingDimensions`, model.embeddingDimensions ?? 64),
    toolParser: model.toolCallParser === undefined ? 'hermes' : model.toolCallParser,
    script: readScript(model),
  };
}

// A script is read once, at start, so a broken file fails the start rather than a request.
function readScript(model: SimModel): ScriptTurn[] | null {
  if (model.script === undefined || model.task !== 'chat') return null;
  if (typeof model.script === 'string') return loadScript(model.script);
  return parseScript(JSON.stringify(model.script), `of ${model.name}`);
}

function nonNegative(name: string, value: number): number {
  if (!(Number.isFinite(value) && value >= 0)) throw new RangeError(`startSimulator: ${name} must be a number >= 0`);
  return value;
}

function positiveInt(name: string, value: number): number {
  if (!(Number.isInteger(value) && value >= 1)) throw new RangeError(`startSimulator: ${name} must be an integer >= 1`);
  return value;
}
