const NULLABLE_IN_OPENAI: ReadonlySet<string> = new Set(['content', 'refusal', 'logprobs', 'finish_reason']);

/**
 * Fields that say which engine answered, never shown to clients: `system_fingerprint` (vLLM's null,
 * llama.cpp's build string such as "b1-5b4ebc5"; the gateway sends none of its own) and llama.cpp's
 * `timings` (its prompt and generation speeds). Dropped wherever they appear: no OpenAI answer
 * nests a field of these names, and tool arguments and contents are strings.
 */
const ENGINE_ONLY: ReadonlySet<string> = new Set(['system_fingerprint', 'timings']);

/**
 * vLLM answers with every optional field present, many as null
 * (`annotations`, `function_call`, `system_fingerprint`, `prompt_tokens_details`, …),
 * where OpenAI's schema has them absent or non-null; strict clients choke on
 * that. Dropping null fields makes the body match the schema the SDKs are
 * generated from. The fields OpenAI itself sends as null are kept.
 *
 * Fields that name the engine (`ENGINE_ONLY`) are dropped too.
 *
 * Returns a copy, leaving out `omit` at the top level too: deleting fields in
 * place would turn each object into a slow dictionary for JSON.stringify, and a
 * stream does this for every chunk.
 *
 * @example
 * withoutNullFields({ content: null, refusal: null, annotations: null }); // { content: null, refusal: null }
 * withoutNullFields({ id: 'c1', usage: { prompt_tokens: 3 } }, 'usage'); // { id: 'c1' }
 */
export function withoutNullFields<T>(value: T, omit?: string): T {
  if (Array.isArray(value)) return value.map((item: unknown) => withoutNullFields(item)) as T;
  if (typeof value !== 'object' || value === null) return value;
  const record = value as Record<string, unknown>;
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(record)) {
    // A JSON "__proto__" key would set the copy's prototype, not a field: no engine sends one.
    if (key === omit || key === '__proto__' || ENGINE_ONLY.has(key)) continue;
    const field = record[key];
    if (field === null) {
      if (NULLABLE_IN_OPENAI.has(key)) copy[key] = null;
    } else {
      copy[key] = typeof field === 'object' ? withoutNullFields(field) : field;
    }
  }
  return copy as T;
}
