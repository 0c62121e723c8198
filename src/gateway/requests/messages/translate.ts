export { messagesRequestErrors } from './validate.js';

type Json = Record<string, unknown>;

/**
 * Anthropic's Messages request as the engine's chat completions request.
 * Translated rather than passed to vLLM's own `/v1/messages`: every engine
 * kind (the simulator, a static OpenAI-compatible server, vLLM) serves chat
 * completions, and one usage parser and one billing rule then serve every
 * protocol. A pass-through would give up the first for engines without the
 * route, and need a second stream reader for billing.
 *
 * What has no chat equivalent is dropped, never refused: `thinking` (an
 * engine's reasoning parser decides), `metadata`, `cache_control`, server
 * tools (no `input_schema`: the engine cannot run them), thinking blocks of
 * earlier turns.
 *
 * @example
 * chatBodyOf({ model: 'm', max_tokens: 64, system: 'Be brief.', messages: [{ role: 'user', content: 'Hi' }] });
 * // { model: 'm', max_tokens: 64, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }] }
 */
export function chatBodyOf(body: Json): Json {
  const turns = body.messages as Json[];
  // Claude Code also sends `system` turns among the messages: they join the system prompt, which
  // chat templates want first.
  const system = [body.system, ...turns.filter((turn) => turn.role === 'system').map((turn) => turn.content)];
  const chat: Json = {
    model: body.model,
    max_tokens: body.max_tokens,
    messages: [...systemMessages(system), ...turns.filter((turn) => turn.role !== 'system').flatMap(chatMessages)],
  };
  for (const field of ['temperature', 'top_p', 'top_k']) if (body[field] !== undefined) chat[field] = body[field];
  if (Array.isArray(body.stop_sequences) && body.stop_sequences.length > 0) chat.stop = body.stop_sequences;
  const tools = Array.isArray(body.tools)
    ? (body.tools as unknown[]).filter((tool): tool is Json => isObject(tool) && isObject(tool.input_schema))
    : [];
  if (tools.length > 0) {
    chat.tools = tools.map((tool) => ({
      type: 'function',
      function: { name: tool.name, description: tool.description, parameters: tool.input_schema },
    }));
    const choice = toolChoiceOf(body.tool_choice);
    if (choice !== undefined) chat.tool_choice = choice;
    if ((body.tool_choice as Json | undefined)?.disable_parallel_tool_use === true) chat.parallel_tool_calls = false;
  }
  if (body.stream === true) chat.stream = true;
  return chat;
}

function systemMessages(parts: unknown[]): Json[] {
  const text = parts
    .map((part) => (typeof part === 'string' ? part : Array.isArray(part) ? textOf(part) : ''))
    .filter(Boolean)
    .join('\n\n');
  return text ? [{ role: 'system', content: text }] : [];
}

/**
 * One Anthropic message as chat messages: a user's tool results become tool messages, before the
 * rest of its content.
 */
function chatMessages(message: Json): Json[] {
  const { role, content } = message;
  if (typeof content === 'string') return [{ role, content }];
  const blocks = content as Json[];
  if (role === 'assistant') return [assistantMessage(blocks)];
  const results = blocks.filter((block) => block.type === 'tool_result');
  const rest = blocks.filter((block) => block.type === 'text' || block.type === 'image');
  const toolMessages = results.map((result) => ({
    role: 'tool',
    tool_call_id: result.tool_use_id,
    content: toolResultText(result),
  }));
  return rest.length > 0 ? [...toolMessages, { role: 'user', content: rest.map(userPart) }] : toolMessages;
}

function assistantMessage(blocks: Json[]): Json {
  const message: Json = { role: 'assistant', content: textOf(blocks) };
  const calls = blocks.filter((block) => block.type === 'tool_use');
  if (calls.length > 0)
    message.tool_calls = calls.map((call) => ({
      id: call.id,
      type: 'function',
      function: { name: call.name, arguments: JSON.stringify(call.input ?? {}) },
    }));
  return message;
}

function userPart(block: Json): Json {
  if (block.type === 'text') return { type: 'text', text: block.text };
  const source = (block.source ?? {}) as Json;
  const url = source.type === 'base64' ? `data:${String(source.media_type)};base64,${String(source.data)}` : source.url;
  return { type: 'image_url', image_url: { url } };
}

function toolResultText(result: Json): string {
  const text =
    typeof result.content === 'string'
      ? result.content
      : Array.isArray(result.content)
        ? textOf(result.content as Json[])
        : '';
  return result.is_error === true ? `Error: ${text}` : text;
}

function textOf(blocks: unknown[]): string {
  return (blocks as Json[])
    .filter((block) => block?.type === 'text' && typeof block.text === 'string')
    .map((block) => block.text as string)
    .join('\n');
}

function toolChoiceOf(choice: unknown): unknown {
  if (!isObject(choice)) return undefined;
  if (choice.type === 'any') return 'required';
  if (choice.type === 'none') return 'none';
  if (choice.type === 'tool') return { type: 'function', function: { name: choice.name } };
  return 'auto';
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
