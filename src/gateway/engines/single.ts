import type { EngineKind } from './kinds.js';
import type { Engine, EngineTenancy, UpstreamTarget } from './types.js';

export interface SingleTargetOptions {
  kind: 'simulator' | 'static';
  modelId: string;
  baseUrl: string;
  servedModelName: string;
  headers?: Record<string, string>;
  /**
   * Which server answers; read at each request (a static engine finds out after it starts). Absent:
   * vLLM.
   */
  engineKind?: () => EngineKind | undefined;
  /**
   * How it treats the tenants that share it (the definition's `cache_sharing` and
   * `scheduling_policy`).
   */
  tenancy?: EngineTenancy;
}

/**
 * An engine with one replica the gateway does not run: the built-in simulator
 * or a vLLM server elsewhere. Always offered; if it is down, the upstream call
 * fails and the client gets `upstream_error`.
 *
 * @example
 * const engine = singleTargetEngine({ kind: 'static', modelId: 'qwen', baseUrl: 'http://127.0.0.1:8000/v1', servedModelName: 'qwen' });
 */
export function singleTargetEngine(options: SingleTargetOptions): Engine {
  const replicaId = `${options.modelId}/0`;
  const startedAt = new Date();
  let inFlight = 0;
  let served = 0;
  return {
    kind: options.kind,
    modelId: options.modelId,
    acquire(exclude) {
      if (exclude?.has(replicaId)) return null;
      inFlight += 1;
      served += 1;
      let released = false;
      const target: UpstreamTarget = {
        baseUrl: options.baseUrl,
        servedModelName: options.servedModelName,
        headers: options.headers ?? {},
        engineKind: options.engineKind?.(),
        tenancy: options.tenancy,
        replicaId,
        release() {
          if (released) return;
          released = true;
          inFlight -= 1;
        },
        markFailed() {},
      };
      return target;
    },
    status() {
      return {
        model: options.modelId,
        kind: options.kind,
        desiredReplicas: 1,
        dockerHost: null,
        minReplicas: 1,
        maxReplicas: 1,
        replicas: [
          {
            id: replicaId,
            state: 'ready',
            container: null,
            address: new URL(options.baseUrl).host,
            startedAt: startedAt.toISOString(),
            uptimeSeconds: Math.floor((Date.now() - startedAt.getTime()) / 1000),
            inFlight,
            served,
            restarts: 0,
            host: null,
            gpus: [],
          },
        ],
      };
    },
    close: async () => {},
  };
}
