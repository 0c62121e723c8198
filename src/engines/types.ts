/**
 * The seam between the request path and whatever serves a model. Every engine
 * kind (the built-in simulator, a static vLLM URL, and later Docker containers)
 * implements `Engine` in a folder-free file of the same shape: `simulator.ts`,
 * `static.ts`, `docker.ts`.
 */

/** Where one request goes. `release` is called exactly once when the request ends. */
export interface UpstreamTarget {
  /** Base URL ending in `/v1`, e.g. `http://127.0.0.1:8000/v1`. Never shown to clients. */
  baseUrl: string;
  /** The name the engine serves the model under (vLLM's --served-model-name). */
  servedModelName: string;
  /** Extra headers for the upstream call, e.g. the engine's own API key. */
  headers: Record<string, string>;
  release(): void;
}

export interface Engine {
  readonly kind: 'simulator' | 'static';
  /** The catalog id this engine serves. */
  readonly modelId: string;
  /** A target for one request, or null when no replica is ready. */
  acquire(): UpstreamTarget | null;
  close(): Promise<void>;
}
