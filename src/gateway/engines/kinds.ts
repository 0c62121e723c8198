// Which server answers for an engine, and what the gateway may rely on from
// it. Every path the gateway relied on was vLLM's (and the simulator's, written
// to behave like it); llama.cpp's `llama-server` differs where billing and
// routing look (docs/engines.md has the table and the tests behind it).

/** `vllm` (and the simulator), llama.cpp's `llama-server`, or another OpenAI-compatible server. */
export type EngineKind = 'vllm' | 'llamacpp' | 'openai-compatible';

export const ENGINE_KINDS = ['vllm', 'llamacpp', 'openai-compatible'] as const;

export interface EngineTraits {
  /** Its usage counts the completion tokens of every choice (vLLM), or of one only (llama.cpp: `n: 2` reports half). */
  usageCountsEveryChoice: boolean;
  /** Whether its stream reports running usage (vLLM's `continuous_usage_stats`), so a stream cut short is billed from its count. */
  runningUsage: boolean;
  /** How it counts a chat prompt with its chat template applied, for a stream that ends before any usage; null: it cannot. */
  promptCount: 'vllm-tokenize' | 'llamacpp-tokenize' | null;
}

export const ENGINE_TRAITS: Record<EngineKind, EngineTraits> = {
  vllm: { usageCountsEveryChoice: true, runningUsage: true, promptCount: 'vllm-tokenize' },
  llamacpp: { usageCountsEveryChoice: false, runningUsage: false, promptCount: 'llamacpp-tokenize' },
  // Nothing known: bill what it reports, estimate what it does not.
  'openai-compatible': { usageCountsEveryChoice: true, runningUsage: false, promptCount: null },
};

const PROBE_TIMEOUT_MS = 2_000;

/**
 * Finds out which server answers at `url` (without `/v1`): llama.cpp's server
 * answers `GET /props` with its generation settings, vLLM answers
 * `GET /version` with its version; anything else is another OpenAI-compatible
 * server. Null when the server did not answer at all (ask again later).
 * Used when an engine definition does not say (`engine`).
 *
 * @example
 * await detectEngineKind('http://127.0.0.1:8080', {}); // 'llamacpp'
 */
export async function detectEngineKind(url: string, headers: Record<string, string>): Promise<EngineKind | null> {
  const props = await getJson(`${url}/props`, headers);
  if (isObject(props) && 'default_generation_settings' in props) return 'llamacpp';
  const version = await getJson(`${url}/version`, headers);
  if (isObject(version) && 'version' in version) return 'vllm';
  return props === undefined && version === undefined ? null : 'openai-compatible';
}

function isObject(value: unknown): value is object {
  return typeof value === 'object' && value !== null;
}

/** The JSON answer, null for an answer that is not a JSON success, undefined when nothing answered. */
async function getJson(url: string, headers: Record<string, string>): Promise<unknown> {
  let response: Response;
  try {
    response = await fetch(url, { headers, signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
  } catch {
    return undefined;
  }
  if (!response.ok) {
    await response.body?.cancel();
    return null;
  }
  return await response.json().catch((): unknown => null);
}

/**
 * The kind of one server, found out once it answers: `current()` is what is
 * known (undefined until then), `probe()` asks when nothing is known and no
 * question is under way.
 */
export function engineKindProbe(url: string, headers: Record<string, string>, given?: EngineKind) {
  let known: EngineKind | undefined = given;
  let asking = false;
  return {
    current: () => known,
    probe(): void {
      if (known || asking) return;
      asking = true;
      void detectEngineKind(url, headers)
        .then((found) => {
          known = found ?? undefined;
        })
        .finally(() => {
          asking = false;
        });
    },
  };
}
