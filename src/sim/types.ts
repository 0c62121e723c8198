import type { ScriptTurn } from './script.js';

/** A model the simulator serves, like one vLLM process's `--served-model-name`. */
export interface SimModel {
  /** Served model name, what requests put in "model". */
  name: string;
  task: 'chat' | 'embedding';
  /** Default 4096. */
  maxModelLen?: number;
  /** Chat only: emits reasoning text before content. */
  reasoning?: boolean;
  /** Default 64. */
  embeddingDimensions?: number;
  /**
   * Chat only: vLLM's `--tool-call-parser` with `--enable-auto-tool-choice`, which lets
   * `tool_choice: "auto"` call tools. Default 'hermes'; null turns auto tool choice off
   * (a request with tools and "auto" is then vLLM's 400).
   */
  toolCallParser?: string | null;
  /** Chat only: scripted mode, a script file's path or its turns (see docs/tool-calling.md). */
  script?: string | ScriptTurn[];
}

export interface SimulatorOptions {
  models: SimModel[];
  /** Default '127.0.0.1'. */
  host?: string;
  /** Default 0 = random free port. */
  port?: number;
  /** Time to first token, default 0. */
  ttftMs?: number;
  /** Inter-token latency, default 0. */
  itlMs?: number;
  /** 0..1 probability a request answers 500, default 0. */
  failureRate?: number;
  /** /health answers 503 and /v1 routes 503 until this passes, default 0. */
  startupDelayMs?: number;
  /** Completion length when the request sets none, default 16. */
  defaultMaxTokens?: number;
  /**
   * vLLM's `--scheduling-policy`: 'fcfs' (default) refuses a request's non-zero `priority`;
   * 'priority' accepts it, and a loaded model serves its waiting queue by (priority, arrival),
   * preempting lower-priority running requests.
   */
  schedulingPolicy?: 'fcfs' | 'priority';
  /**
   * Chat models behave like a loaded vLLM (batch, queue, KV cache, prefix caching, GPU timings);
   * absent: every request runs at once with ttftMs/itlMs.
   */
  loaded?: LoadedModelOptions;
}

/**
 * A loaded vLLM's scheduler and speed. The default timings are of an 8B
 * model on one A100-class GPU: 0.1 ms a prefilled token (10k tokens/s), a
 * decode step of 10 ms plus 0.25 ms a running sequence.
 */
export interface LoadedModelOptions {
  /** vLLM's `--max-num-seqs`: the running batch's bound, default 256. */
  maxNumSeqs?: number;
  /** vLLM's `--block-size`: tokens a KV block holds, default 16. */
  blockSize?: number;
  /** vLLM's `--num-gpu-blocks-override`: KV blocks, default 2048. */
  numGpuBlocks?: number;
  /** Default 0.1. */
  prefillMsPerToken?: number;
  /** Default 10. */
  decodeMsPerStep?: number;
  /** Default 0.25. */
  decodeMsPerSeq?: number;
  /** Every simulated duration is multiplied by this, default 1 (0.1: ten times faster). */
  timeScale?: number;
}

export interface SimStats {
  running: number;
  waiting: number;
  /** Loaded model: prompt tokens looked up in the prefix cache, and those found (0 otherwise). */
  prefixQueries?: number;
  prefixHits?: number;
  aborted: number;
  completed: number;
  promptTokens: number;
  generationTokens: number;
}

export interface RunningSimulator {
  /** 'http://127.0.0.1:PORT' (no /v1). */
  url: string;
  port: number;
  /** Closes the server and all open connections, clears timers. */
  close(): Promise<void>;
  stats(): SimStats;
}

/** A model with every default filled in. */
export interface ResolvedModel {
  name: string;
  task: 'chat' | 'embedding';
  maxModelLen: number;
  reasoning: boolean;
  embeddingDimensions: number;
  /**
   * The tool parser auto tool choice uses; null: "auto" with tools is refused, as vLLM does without
   * it.
   */
  toolParser: string | null;
  /** Scripted mode's turns; null: generated answers. */
  script: ScriptTurn[] | null;
}
