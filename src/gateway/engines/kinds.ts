// Which server answers for an engine, and what the gateway may rely on from
// it. Every path the gateway relied on was vLLM's (and the simulator's, written
// to behave like it); llama.cpp's `llama-server` differs where billing and
// routing look (docs/engines.md has the table and the tests behind it).

/** `vllm` (and the simulator), llama.cpp's `llama-server`, or another OpenAI-compatible server. */
export type EngineKind = 'vllm' | 'llamacpp' | 'openai-compatible';

export const ENGINE_KINDS = ['vllm', 'llamacpp', 'openai-compatible'] as const;

/**
 * Request fields an engine may accept yet not act on: `response_format: {type: "json_object"}`
 * (JSON mode), vLLM's `guided_json` (a JSON schema as a body field) and a named `tool_choice` (call
 * this function).
 */
export const CONTROL_FIELDS = ['json_object', 'guided_json', 'named_tool_choice'] as const;
export type ControlField = (typeof CONTROL_FIELDS)[number];

export interface EngineTraits {
  /**
   * Its usage counts the completion tokens of every choice (vLLM), or of one only (llama.cpp: `n:
   * 2` reports half).
   */
  usageCountsEveryChoice: boolean;
  /**
   * Whether its stream reports running usage (vLLM's `continuous_usage_stats`), so a stream cut
   * short is billed from its count.
   */
  runningUsage: boolean;
  /**
   * How it counts a chat prompt with its chat template applied, for a stream that ends before any
   * usage; null: it cannot.
   */
  promptCount: 'vllm-tokenize' | 'llamacpp-tokenize' | null;
  /**
   * Of `CONTROL_FIELDS`, those it is known to accept (answers 200) without acting on them: the
   * gateway passes them on and docs/engines.md's table says so (test/gateway/engines/kinds.test.ts
   * holds the two together). Not refused: the answer is still a normal answer, and a refusal would
   * break clients that work today.
   */
  ignores: readonly ControlField[];
}

export const ENGINE_TRAITS: Record<EngineKind, EngineTraits> = {
  vllm: { usageCountsEveryChoice: true, runningUsage: true, promptCount: 'vllm-tokenize', ignores: [] },
  // Issue 51's trial: json_object and guided_json were not enforced (answered 200, output
  // unconstrained); a named tool_choice was answered as auto.
  llamacpp: {
    usageCountsEveryChoice: false,
    runningUsage: false,
    promptCount: 'llamacpp-tokenize',
    ignores: ['json_object', 'guided_json', 'named_tool_choice'],
  },
  // Nothing known: bill what it reports, estimate what it does not; what it honours was not
  // measured.
  'openai-compatible': { usageCountsEveryChoice: true, runningUsage: false, promptCount: null, ignores: [] },
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
