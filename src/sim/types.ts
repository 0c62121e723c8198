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
}

export interface SimStats {
  running: number;
  waiting: number;
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
