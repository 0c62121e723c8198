import { gatherItems, inputItemsOf } from './items.js';

export { responsesRequestErrors } from './validate.js';

type Json = Record<string, unknown>;

/**
 * A Responses request as the engine's chat completions request. Translated
 * rather than passed to vLLM's own `/v1/responses`, for the reasons
 * `messages/translate.ts` gives (every engine kind serves chat completions; one
 * usage parser bills every protocol), and one more: a stored response lives
 * in the gateway's database, so any gateway replica continues it, where vLLM
 * keeps it in one engine process's memory.
 *
 * `earlier` is the conversation before this turn (`previous_response_id`'s
 * chain: each turn's input items, then its output items); earlier turns'
 * `instructions` are not carried, as OpenAI's are not. `input` is this turn's
 * items with their `item_reference`s resolved (`references.ts`), when it had any.
 *
 * What has no chat equivalent is dropped, never refused: reasoning items of
 * earlier turns, built-in tools (`web_search`, `file_search`, MCP, …: the
 * engine cannot run them), `include`, `prompt_cache_key`, `service_tier`,
 * `text.verbosity`, `store` and `metadata` (the gateway's, not the engine's).
 *
 * @example
 * chatBodyOf({ model: 'm', instructions: 'Be brief.', input: 'Hi' });
 * // { model: 'm', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }] }
 */
export function chatBodyOf(body: Json, earlier: Json[] = [], input: Json[] = inputItemsOf(body.input)): Json {
  const conversation = { system: [] as string[], messages: [] as Json[] };
  gatherItems(earlier, conversation);
  gatherItems(input, conversation);
  const system = [typeof body.instructions === 'string' ? body.instructions : '', ...conversation.system]
    .filter(Boolean)
    .join('\n\n');
  const chat: Json = {
    model: body.model,
    messages: system ? [{ role: 'system', content: system }, ...conversation.messages] : conversation.messages,
  };
  if (body.max_output_tokens !== undefined && body.max_output_tokens !== null) chat.max_tokens = body.max_output_tokens;
  for (const field of ['temperature', 'top_p', 'parallel_tool_calls', 'top_logprobs'])
    if (body[field] !== undefined && body[field] !== null) chat[field] = body[field];
  const effort = (body.reasoning as Json | null | undefined)?.effort;
  if (typeof effort === 'string') chat.reasoning_effort = effort;
  const format = responseFormatOf((body.text as Json | null | undefined)?.format);
  if (format) chat.response_format = format;
  const tools = Array.isArray(body.tools) ? chatTools(body.tools as Json[]) : [];
  if (tools.length > 0) {
    chat.tools = tools;
    const choice = toolChoiceOf(body.tool_choice);
    if (choice !== undefined) chat.tool_choice = choice;
  }
  if (body.stream === true) chat.stream = true;
  return chat;
}

/**
 * The request's function tools as chat's: a `namespace`'s functions flattened
 * as `<namespace>__<name>`; `custom` tools (free-form input) as a function
 * of one string, `input`; every other type dropped.
 */
function chatTools(tools: Json[]): Json[] {
  const out: Json[] = [];
  for (const tool of tools) {
    if (!isObject(tool)) continue;
    if (tool.type === 'function') out.push(chatFunction(tool, tool.name));
    else if (tool.type === 'custom') out.push(customFunction(tool, tool.name));
    else if (tool.type === 'namespace' && Array.isArray(tool.tools)) {
      for (const inner of tool.tools as unknown[]) {
        if (!isObject(inner)) continue;
        const name = `${String(tool.name)}__${String(inner.name)}`;
        if (inner.type === 'function') out.push(chatFunction(inner, name));
        else if (inner.type === 'custom') out.push(customFunction(inner, name));
      }
    }
  }
  return out;
}

function chatFunction(tool: Json, name: unknown): Json {
  const fn: Json = { name, parameters: tool.parameters ?? { type: 'object', properties: {} } };
  if (typeof tool.description === 'string') fn.description = tool.description;
  if (typeof tool.strict === 'boolean') fn.strict = tool.strict;
  return { type: 'function', function: fn };
}

function customFunction(tool: Json, name: unknown): Json {
  const parameters = {
    type: 'object',
    properties: { input: { type: 'string', description: 'The tool input, as free-form text.' } },
    required: ['input'],
  };
  return {
    type: 'function',
    function: { name, description: typeof tool.description === 'string' ? tool.description : '', parameters },
  };
}

/**
 * Which of the request's tools are custom (free-form), and which flattened names are a namespace's:
 * the answer gives them back as the client named them.
 */
export interface ToolNames {
  custom: Set<string>;
  namespaced: Map<string, { namespace: string; name: string }>;
}

export function toolNamesOf(body: Json): ToolNames {
  const names: ToolNames = { custom: new Set(), namespaced: new Map() };
  for (const tool of Array.isArray(body.tools) ? (body.tools as unknown[]) : []) {
    if (!isObject(tool)) continue;
    if (tool.type === 'custom') names.custom.add(String(tool.name));
    if (tool.type !== 'namespace' || !Array.isArray(tool.tools)) continue;
    for (const inner of tool.tools as unknown[]) {
      if (!isObject(inner)) continue;
      const flat = `${String(tool.name)}__${String(inner.name)}`;
      names.namespaced.set(flat, { namespace: String(tool.name), name: String(inner.name) });
      if (inner.type === 'custom') names.custom.add(flat);
    }
  }
  return names;
}

function toolChoiceOf(choice: unknown): unknown {
  if (choice === 'auto' || choice === 'none' || choice === 'required') return choice;
  if (!isObject(choice)) return undefined;
  if ((choice.type === 'function' || choice.type === 'custom') && typeof choice.name === 'string')
    return { type: 'function', function: { name: choice.name } };
  return 'auto';
}

function responseFormatOf(format: unknown): Json | undefined {
  if (!isObject(format)) return undefined;
  if (format.type === 'json_object') return { type: 'json_object' };
  if (format.type !== 'json_schema') return undefined;
  const schema: Json = { name: format.name ?? 'response', schema: format.schema };
  if (typeof format.strict === 'boolean') schema.strict = format.strict;
  if (typeof format.description === 'string') schema.description = format.description;
  return { type: 'json_schema', json_schema: schema };
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
