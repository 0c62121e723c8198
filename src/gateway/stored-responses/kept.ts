type Json = Record<string, unknown>;

/**
 * What a stored response keeps of what the client sent: what a later turn
 * sends to the engine (`requests/responses/items.ts`'s `gatherItems` reads the
 * input items) and what `GET /v1/responses/{id}` and its `input_items` give
 * back, in the fields of OpenAI's spec. What the translation drops (reasoning
 * items and their `encrypted_content`, references, built-in tools' calls,
 * files, fields no item type has) is not stored: a client's megabytes of them
 * would cost storage and every later read, for nothing the model sees.
 *
 * The rules follow `gatherItems`: a test translates items and their kept form
 * and compares (`test/gateway/stored-responses/kept.test.ts`).
 *
 * @example
 * keptInputItem({ id: 'rs_1', type: 'reasoning', encrypted_content: '…' }); // null
 */
export function keptInputItem(item: Json): Json | null {
  switch (item.type) {
    case 'message':
      return keptMessage(item);
    case 'function_call':
      return withStrings(item, { type: 'function_call' }, ['id', 'call_id', 'name', 'namespace', 'status'], {
        arguments: argumentsText(item.arguments),
      });
    case 'custom_tool_call':
      return withStrings(item, { type: 'custom_tool_call' }, ['id', 'call_id', 'name', 'namespace', 'status'], {
        input: typeof item.input === 'string' ? item.input : '',
      });
    case 'function_call_output':
    case 'custom_tool_call_output':
      return withStrings(item, { type: item.type }, ['id', 'call_id', 'status'], { output: outputOf(item.output) });
    // The summary a compaction carries is what the engine is sent (`compaction-item.ts`).
    case 'compaction':
    case 'compaction_summary':
      return withStrings(item, { type: 'compaction' }, ['id', 'encrypted_content'], {});
    default:
      return null;
  }
}

/**
 * The content parts of the Responses API that carry text (a refusal's in `refusal`): what a message
 * keeps and what a turn sends the engine as text.
 */
export const TEXT_PARTS: ReadonlySet<string> = new Set([
  'input_text',
  'output_text',
  'text',
  'summary_text',
  'refusal',
]);
const IMAGE_DETAILS: ReadonlySet<string> = new Set(['low', 'high', 'auto']);

function keptMessage(item: Json): Json {
  const kept = withStrings(item, { type: 'message' }, ['id', 'role', 'status'], {});
  // Text as text: the create route has made it a part already, as `input_items` lists it.
  if (typeof item.content === 'string') return Object.assign(kept, { content: item.content });
  const content: Json[] = [];
  for (const part of Array.isArray(item.content) ? (item.content as unknown[]) : []) {
    if (!isObject(part)) continue;
    if (TEXT_PARTS.has(part.type as string)) {
      const text = withStrings(part, { type: part.type }, ['text', 'refusal'], {});
      if (part.type === 'output_text') text.annotations = [];
      content.push(text);
    } else if (item.role === 'user' && part.type === 'input_image' && typeof part.image_url === 'string') {
      const detail = IMAGE_DETAILS.has(part.detail as string) ? part.detail : 'auto';
      content.push({ type: 'input_image', image_url: part.image_url, detail });
    }
  }
  kept.content = content;
  return kept;
}

/**
 * The response object as stored: the fields that echo the client's request
 * (`tools`, `tool_choice`, `metadata`, `reasoning`, `text`, the sampling
 * numbers) as the engine used them and OpenAI's spec bounds them; every field
 * the gateway made itself (`output`, `usage`, `status`, …) as it is.
 */
export function keptResponse(response: Json): Json {
  const kept: Json = {};
  for (const [field, value] of Object.entries(response)) {
    const echo = ECHOED[field];
    kept[field] = echo ? echo(value) : value;
  }
  return kept;
}

const numberOrNull = (value: unknown) => (typeof value === 'number' ? value : null);
const REASONING_EFFORTS: ReadonlySet<string> = new Set(['none', 'minimal', 'low', 'medium', 'high', 'xhigh']);
const REASONING_SUMMARIES: ReadonlySet<string> = new Set(['auto', 'concise', 'detailed']);

/** The request's fields a response repeats, each as it is kept. */
const ECHOED: Record<string, (value: unknown) => unknown> = {
  instructions: (value) => (typeof value === 'string' ? value : null),
  max_output_tokens: numberOrNull,
  temperature: numberOrNull,
  top_p: numberOrNull,
  parallel_tool_calls: (value) => (typeof value === 'boolean' ? value : true),
  user: (value) => (typeof value === 'string' ? value.slice(0, USER_CHARS) : undefined),
  metadata: keptMetadata,
  reasoning: (value) => {
    const reasoning = isObject(value) ? value : {};
    return {
      effort: REASONING_EFFORTS.has(reasoning.effort as string) ? reasoning.effort : null,
      summary: REASONING_SUMMARIES.has(reasoning.summary as string) ? reasoning.summary : null,
    };
  },
  text: (value) => ({ format: keptFormat(isObject(value) ? value.format : undefined) }),
  tool_choice: (value) => {
    if (value === 'auto' || value === 'none' || value === 'required') return value;
    if (isObject(value) && (value.type === 'function' || value.type === 'custom') && typeof value.name === 'string')
      return { type: value.type, name: value.name };
    return 'auto';
  },
  tools: (value) => (Array.isArray(value) ? keptTools(value) : []),
};

/** OpenAI's bounds of `metadata`: 16 pairs, keys of 64 characters, values of 512. */
const METADATA_PAIRS = 16;
const METADATA_KEY_CHARS = 64;
const METADATA_VALUE_CHARS = 512;
/** OpenAI's `user` (now `safety_identifier`) is a short id; more than this is not kept. */
const USER_CHARS = 256;

function keptMetadata(value: unknown): Json {
  const kept: Json = {};
  if (!isObject(value)) return kept;
  let pairs = 0;
  for (const key in value) {
    const entry = value[key];
    if (key.length > METADATA_KEY_CHARS || typeof entry !== 'string' || entry.length > METADATA_VALUE_CHARS) continue;
    kept[key] = entry;
    if (++pairs === METADATA_PAIRS) break;
  }
  return kept;
}

function keptFormat(format: unknown): Json {
  if (!isObject(format) || (format.type !== 'json_object' && format.type !== 'json_schema')) return { type: 'text' };
  if (format.type === 'json_object') return { type: 'json_object' };
  const kept = withStrings(format, { type: 'json_schema' }, ['name', 'description'], { schema: format.schema });
  if (typeof format.strict === 'boolean') kept.strict = format.strict;
  return kept;
}

/**
 * The tools the engine was given (functions, custom tools, namespaces of them), with the fields it
 * read.
 */
function keptTools(tools: unknown[]): Json[] {
  const kept: Json[] = [];
  for (const tool of tools) {
    if (!isObject(tool)) continue;
    if (tool.type === 'namespace' && Array.isArray(tool.tools)) {
      const namespace = withStrings(tool, { type: 'namespace' }, ['name', 'description'], {});
      namespace.tools = keptTools(tool.tools.filter((inner) => !isObject(inner) || inner.type !== 'namespace'));
      kept.push(namespace);
    } else if (tool.type === 'function') {
      const fn = withStrings(tool, { type: 'function' }, ['name', 'description'], {
        parameters: tool.parameters ?? null,
      });
      fn.strict = typeof tool.strict === 'boolean' ? tool.strict : null;
      kept.push(fn);
    } else if (tool.type === 'custom') kept.push(withStrings(tool, { type: 'custom' }, ['name', 'description'], {}));
  }
  return kept;
}

/** `into` with `from`'s fields that are strings among `fields`, then `extra`. */
function withStrings(from: Json, into: Json, fields: string[], extra: Json): Json {
  for (const field of fields) if (typeof from[field] === 'string') into[field] = from[field];
  return Object.assign(into, extra);
}

/** As `items.ts` sends a call's arguments: text, `{}` when empty. */
function argumentsText(args: unknown): string {
  if (typeof args === 'string') return args || '{}';
  return JSON.stringify(args ?? {});
}

/**
 * A call's output as `items.ts` reads it: a string as it is, content parts' text parts, anything
 * else as JSON.
 */
function outputOf(output: unknown): unknown {
  if (typeof output === 'string') return output;
  if (output === undefined || output === null) return '';
  if (!Array.isArray(output)) return JSON.stringify(output);
  const parts: Json[] = [];
  for (const part of output as unknown[])
    if (isObject(part) && TEXT_PARTS.has(part.type as string))
      parts.push(withStrings(part, { type: part.type }, ['text', 'refusal'], {}));
  return parts;
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
