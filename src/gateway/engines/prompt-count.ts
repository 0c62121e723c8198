import { ENGINE_TRAITS, type EngineKind } from './kinds.js';

/** What counting needs of a replica: where it is, its own headers and which server it is. */
export interface CountingTarget {
  /** Ending in `/v1`. */
  baseUrl: string;
  headers: Record<string, string>;
  engineKind?: EngineKind;
}

/**
 * Counting is one or two small calls to a replica that just served the request; past this, the
 * estimate stands.
 */
const COUNT_TIMEOUT_MS = 2_000;

/**
 * A chat prompt's tokens as the engine counts them, its chat template, system
 * prompt and tools included: for a stream that ended before the engine
 * reported any usage (llama.cpp reports none until the end), where bytes
 * divided by four missed the template (9–12 billed for 34–35 real). llama.cpp:
 * `POST /apply-template` then `POST /tokenize`; vLLM: `POST /tokenize` with the
 * messages. Null when the engine cannot count or did not answer in time.
 *
 * @example
 * await countChatPrompt({ baseUrl: 'http://127.0.0.1:8080/v1', headers: {}, engineKind: 'llamacpp' }, { messages });
 */
export async function countChatPrompt(
  target: CountingTarget,
  body: { model?: unknown; messages?: unknown; tools?: unknown },
): Promise<number | null> {
  const how = ENGINE_TRAITS[target.engineKind ?? 'vllm'].promptCount;
  if (how === null || !Array.isArray(body.messages)) return null;
  const root = target.baseUrl.replace(/\/v1$/, '');
  const signal = AbortSignal.timeout(COUNT_TIMEOUT_MS);
  const chat: Record<string, unknown> = { messages: body.messages };
  if (body.tools !== undefined) chat.tools = body.tools;
  try {
    if (how === 'vllm-tokenize') {
      chat.model = body.model;
      chat.add_generation_prompt = true;
      const answer = await postJson(`${root}/tokenize`, chat, target.headers, signal);
      return countOf(answer?.count);
    }
    const templated = await postJson(`${root}/apply-template`, chat, target.headers, signal);
    if (typeof templated?.prompt !== 'string') return null;
    const tokens = await postJson(
      `${root}/tokenize`,
      { content: templated.prompt, add_special: true, parse_special: true },
      target.headers,
      signal,
    );
    return Array.isArray(tokens?.tokens) ? tokens.tokens.length : null;
  } catch {
    return null;
  }
}

async function postJson(
  url: string,
  body: Record<string, unknown>,
  headers: Record<string, string>,
  signal: AbortSignal,
): Promise<Record<string, unknown> | null> {
  const response = await fetch(url, {
    method: 'POST',
    headers: Object.assign({ 'content-type': 'application/json' }, headers),
    body: JSON.stringify(body),
    signal,
  });
  if (!response.ok) {
    await response.body?.cancel();
    return null;
  }
  const parsed: unknown = await response.json();
  return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : null;
}

function countOf(value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : null;
}
