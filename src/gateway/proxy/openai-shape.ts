const NULLABLE_IN_OPENAI = new Set(['content', 'refusal', 'logprobs', 'finish_reason']);

/**
 * vLLM answers with every optional field present, many as null
 * (`annotations`, `function_call`, `system_fingerprint`, `prompt_tokens_details`, …),
 * where OpenAI's schema has them absent or non-null; strict clients choke on
 * that. Dropping null fields makes the body match the schema the SDKs are
 * generated from. The fields OpenAI itself sends as null are kept.
 *
 * @example
 * withoutNullFields({ content: null, refusal: null, annotations: null }); // { content: null, refusal: null }
 */
export function withoutNullFields<T>(value: T): T {
  if (Array.isArray(value)) {
    for (const item of value) withoutNullFields(item);
  } else if (typeof value === 'object' && value !== null) {
    const record = value as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      if (record[key] === null) {
        if (!NULLABLE_IN_OPENAI.has(key)) delete record[key];
      } else if (typeof record[key] === 'object') {
        withoutNullFields(record[key]);
      }
    }
  }
  return value;
}
