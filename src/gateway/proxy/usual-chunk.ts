/**
 * A JSON string as JSON allows it (no raw control characters, only JSON's escapes), and a JSON
 * integer of at most 16 digits.
 */
const STRING = String.raw`"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"`;
const INTEGER = String.raw`(?:0|[1-9]\d{0,15})`;

/**
 * vLLM's usual chunk, field for field, as its compact JSON reads: one
 * choice whose delta is one piece of text, no null OpenAI does not send, and
 * running usage or none. Nearly every chunk of a stream is one; the first
 * (with the role) and the last (with the finish reason) are not.
 */
const USUAL_CHUNK = new RegExp(
  `^\\{"id":(${STRING}),"object":"chat\\.completion\\.chunk","created":(${INTEGER}),"model":${STRING},` +
    `"choices":\\[\\{"index":0,"delta":\\{"(content|reasoning|reasoning_content)":(${STRING})\\},"logprobs":null,"finish_reason":null\\}\\]` +
    `(?:,"usage":\\{"prompt_tokens":(${INTEGER}),"total_tokens":(${INTEGER}),"completion_tokens":(${INTEGER})\\})?\\}$`,
);

/** A usual chunk's pieces, as the engine wrote them (JSON text, not parsed). */
export interface UsualChunk {
  /** The chunk's `id` (a JSON string) and `created` (a JSON integer). */
  id: string;
  created: string;
  /** The delta's one field. */
  key: 'content' | 'reasoning' | 'reasoning_content';
  /** Its text, a JSON string with the engine's escapes (`'""'` for none). */
  text: string;
  /** The running usage, when the chunk has one: the engine's digits, each a safe integer. */
  usage: { prompt: string; total: string; completion: string } | null;
}

/**
 * Reads a usual chunk without parsing it (parsing and writing each chunk
 * again was most of a stream's own CPU, docs/benchmark.md#cpu-per-request).
 * Null for any other chunk, or a usage no number here holds exactly: the
 * caller's general path, which parses the chunk, decides then.
 *
 * @example
 * readUsualChunk('{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":null,"finish_reason":null}]}');
 * // { id: '"c"', created: '1', key: 'content', text: '"Hi"', usage: null }
 */
export function readUsualChunk(data: string): UsualChunk | null {
  const match = USUAL_CHUNK.exec(data);
  if (!match) return null;
  const [, id, created, key, text, prompt, total, completion] = match;
  if (prompt === undefined)
    return { id: id!, created: created!, key: key as UsualChunk['key'], text: text!, usage: null };
  const exact = [prompt, total, completion].every((digits) => Number.isSafeInteger(Number(digits)));
  if (!exact) return null;
  return {
    id: id!,
    created: created!,
    key: key as UsualChunk['key'],
    text: text!,
    usage: { prompt, total: total!, completion: completion! },
  };
}
