import { tenancyOf } from './definition-fields.js';
import type { StaticDefinition } from './definitions.js';
import { engineKindProbe } from './kinds.js';
import { singleTargetEngine } from './single.js';
import type { Engine } from './types.js';

/**
 * A vLLM server that runs elsewhere, at one fixed URL (`url`). Always offered:
 * if it is down, the upstream call fails and the client gets `upstream_error`.
 * With `urls` or `dns` the servers are replicas with health checks and
 * routing instead (`servers.ts`).
 *
 * @example
 * const engine = createStaticEngine({ kind: 'static', model: 'qwen', url: 'http://127.0.0.1:8000' }, {});
 */
export function createStaticEngine(
  definition: StaticDefinition & { url: string },
  env: Record<string, string | undefined>,
): Engine {
  const baseUrl = normalizeBaseUrl(definition.url);
  const headers = staticHeaders(definition, env);
  // Not said: found out in the background (asked again at a request while the server never
  // answered); until then it is taken for vLLM.
  const kind = engineKindProbe(baseUrl.replace(/\/v1$/, ''), headers, definition.engine);
  kind.probe();
  return singleTargetEngine({
    kind: 'static',
    modelId: definition.model,
    baseUrl,
    servedModelName: definition.served_model_name ?? definition.model,
    headers,
    tenancy: tenancyOf(definition),
    engineKind: () => {
      kind.probe();
      return kind.current();
    },
  });
}

/** The engine's own API key (`api_key_env`) as a Bearer header, for each of its servers. */
export function staticHeaders(
  definition: StaticDefinition,
  env: Record<string, string | undefined>,
): Record<string, string> {
  if (!definition.api_key_env) return {};
  const apiKey = env[definition.api_key_env];
  if (!apiKey)
    throw new Error(`engine for ${definition.model}: environment variable ${definition.api_key_env} is not set`);
  return { authorization: `Bearer ${apiKey}` };
}

/**
 * Accepts `http://host:8000`, `http://host:8000/` or `http://host:8000/v1` and returns the `/v1`
 * form.
 */
function normalizeBaseUrl(url: string): string {
  const trimmed = url.replace(/\/+$/, '');
  return trimmed.endsWith('/v1') ? trimmed : `${trimmed}/v1`;
}
