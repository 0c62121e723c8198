import { randomUUID } from 'node:crypto';
import type { TokenUsage } from '../../billing/token-usage.js';
import { usageFrom } from '../../proxy/token-counts.js';
import { ownedItemId } from '../../stored-responses/ids.js';
import { stringOf } from './items.js';
import type { ToolNames } from './translate.js';

type Json = Record<string, unknown>;

/** An id as OpenAI writes them: a prefix (`resp`, `msg`, `fc`, `rs`, `ctc`) and 48 hex digits. */
export function itemId(prefix: string): string {
  return `${prefix}_${randomUUID().replaceAll('-', '')}${randomUUID().replaceAll('-', '').slice(0, 16)}`;
}

/**
 * The response object around its output: what the request asked for, echoed
 * as OpenAI does, and the status. `output` and `usage` (absent until the end) are the caller's.
 */
export function responseShell(body: Json, id: string, model: string, createdAt: number): Json {
  const text = (body.text ?? {}) as Json;
  const reasoning = (body.reasoning ?? {}) as Json;
  const shell: Json = {
    id,
    object: 'response',
    created_at: createdAt,
    status: 'in_progress',
    background: body.background === true,
    error: null,
    incomplete_details: null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    metadata: body.metadata ?? {},
    model,
    output: [],
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null,
    reasoning: { effort: reasoning.effort ?? null, summary: reasoning.summary ?? null },
    store: body.store !== false,
    temperature: body.temperature ?? null,
    text: { format: text.format ?? { type: 'text' } },
    tool_choice: body.tool_choice ?? 'auto',
    tools: body.tools ?? [],
    top_p: body.top_p ?? null,
    truncation: 'disabled',
  };
  if (typeof body.user === 'string') shell.user = body.user;
  return shell;
}

/**
 * The billed usage as the Responses API's (OpenAI's convention): `input_tokens` counts the cached
 * tokens too, `input_tokens_details.cached_tokens` says how many; `output_tokens` the reasoning
 * too, with its own count.
 */
export function responsesUsage(counted: TokenUsage | null): Json {
  const input = counted?.promptTokens ?? 0;
  const output = counted?.completionTokens ?? 0;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: counted?.cachedTokens ?? 0, cache_write_tokens: 0 },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: counted?.reasoningTokens ?? 0 },
    total_tokens: input + output,
  };
}

/**
 * A tool call as its output item: a function call, or a custom tool's call (its input unwrapped),
 * named as the client named it.
 */
export function callItem(
  id: unknown,
  name: string,
  args: string,
  names: ToolNames,
  status = 'completed',
  responseId = '',
): Json {
  const namespaced = names.namespaced.get(name);
  const clientName = namespaced?.name ?? name;
  const callId = typeof id === 'string' && id ? id : itemId('call');
  if (names.custom.has(name)) {
    const item: Json = {
      id: ownedItemId('ctc', responseId),
      type: 'custom_tool_call',
      status,
      call_id: callId,
      name: clientName,
      input: customInput(args),
    };
    if (namespaced) item.namespace = namespaced.namespace;
    return item;
  }
  const item: Json = {
    id: ownedItemId('fc', responseId),
    type: 'function_call',
    status,
    call_id: callId,
    name: clientName,
    arguments: args,
  };
  if (namespaced) item.namespace = namespaced.namespace;
  return item;
}

function customInput(args: string): string {
  try {
    const value = JSON.parse(args) as Json;
    return typeof value.input === 'string' ? value.input : args;
  } catch {
    return args;
  }
}

export function reasoningItem(text: string, responseId: string): Json {
  return { id: ownedItemId('rs', responseId), type: 'reasoning', summary: [{ type: 'summary_text', text }] };
}

export function messageItem(text: string, responseId: string, status = 'completed'): Json {
  return {
    id: ownedItemId('msg', responseId),
    type: 'message',
    role: 'assistant',
    status,
    content: [{ type: 'output_text', text, annotations: [], logprobs: [] }],
  };
}

/** The status a chat finish reason gives: a response cut at `max_output_tokens` is incomplete. */
export function finishOf(finishReason: unknown): { status: string; incomplete_details: Json | null } {
  return finishReason === 'length'
    ? { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } }
    : { status: 'completed', incomplete_details: null };
}

/**
 * The engine's chat completion as a Response: reasoning as a `reasoning` item
 * (its text as the summary), the text as a `message`, each tool call as a
 * `function_call`; the usage the engine reported (the gateway bills the same
 * numbers). `created_at` is the gateway's time, as a stream's is.
 */
export function responseOf(answer: Json, body: Json, names: ToolNames, id: string, model: string): Json {
  const choice = ((answer.choices as Json[] | undefined) ?? [])[0] ?? {};
  const message = (choice.message ?? {}) as Json;
  const output: Json[] = [];
  const reasoning = message.reasoning_content ?? message.reasoning;
  if (typeof reasoning === 'string' && reasoning) output.push(reasoningItem(reasoning, id));
  if (typeof message.content === 'string' && message.content) output.push(messageItem(message.content, id));
  for (const call of (message.tool_calls as Json[] | undefined) ?? []) {
    const fn = (call.function ?? {}) as Json;
    const args = typeof fn.arguments === 'string' ? fn.arguments : '{}';
    output.push(callItem(call.id, stringOf(fn.name), args, names, 'completed', id));
  }
  // The gateway's clock, never the engine's `created`: the store dates and expires the response by
  // it.
  const response = responseShell(body, id, model, Math.floor(Date.now() / 1000));
  Object.assign(response, finishOf(choice.finish_reason), {
    output,
    usage: responsesUsage(usageFrom(answer.usage)),
  });
  return response;
}
