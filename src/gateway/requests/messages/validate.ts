import type { TranslationBounds } from '../../../config/types.js';
import type { ErrorDetail } from '../../../shared/http/errors.js';
import { countError, isObject, nameErrors, optionalNameErrors } from '../translation-bounds.js';

type Json = Record<string, unknown>;

const BLOCK_TYPES: ReadonlySet<string> = new Set([
  'text',
  'image',
  'tool_use',
  'tool_result',
  'thinking',
  'redacted_thinking',
  'document',
  'search_result',
  'server_tool_use',
  'web_search_tool_result',
]);

/**
 * What the translation relies on: `max_tokens` a positive integer, `messages`
 * a non-empty array of user and assistant turns whose content is a string or
 * content blocks, `system` a string or blocks, `stream` a boolean, `tools` an
 * array of objects; and the shape bounds (`translation-bounds.ts`), every
 * count checked before the list it counts is walked. The rest is the engine's
 * to judge.
 */
export function messagesRequestErrors(body: Json, bounds: TranslationBounds): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  if (!Number.isSafeInteger(body.max_tokens) || (body.max_tokens as number) < 1)
    details.push({ field: 'max_tokens', message: 'must be a positive integer' });
  details.push(...messageListErrors(body.messages, bounds));
  if (body.system !== undefined && typeof body.system !== 'string' && !isBlockList(body.system))
    details.push({ field: 'system', message: 'must be a string or an array of text blocks' });
  if (body.stream !== undefined && typeof body.stream !== 'boolean')
    details.push({ field: 'stream', message: 'must be true or false' });
  details.push(...toolErrors(body.tools, bounds));
  if (isObject(body.tool_choice) && body.tool_choice.type === 'tool')
    details.push(...nameErrors(body.tool_choice.name, 'tool_choice.name', bounds));
  return details;
}

function messageListErrors(messages: unknown, bounds: TranslationBounds): ErrorDetail[] {
  if (!Array.isArray(messages) || messages.length === 0)
    return [{ field: 'messages', message: 'must be a non-empty array of messages' }];
  // Messages and their content blocks together: counted before any of them is looked at.
  let items = messages.length;
  for (const message of messages)
    if (isObject(message) && Array.isArray(message.content)) items += message.content.length;
  const tooMany = countError('messages', items, bounds.maxItems, 'TOLLGATE_TRANSLATION_MAX_ITEMS');
  if (tooMany.length > 0) return tooMany;
  const details: ErrorDetail[] = [];
  messages.forEach((message: unknown, index) => details.push(...messageErrors(message, `messages[${index}]`, bounds)));
  return details;
}

function messageErrors(message: unknown, field: string, bounds: TranslationBounds): ErrorDetail[] {
  if (!isObject(message)) return [{ field, message: 'must be an object with role and content' }];
  const errors: ErrorDetail[] = [];
  if (message.role !== 'user' && message.role !== 'assistant' && message.role !== 'system')
    errors.push({ field: `${field}.role`, message: 'must be user, assistant or system' });
  if (typeof message.content !== 'string' && !isBlockList(message.content))
    errors.push({ field: `${field}.content`, message: 'must be a string or an array of content blocks' });
  else if (Array.isArray(message.content))
    (message.content as Json[]).forEach((block, index) =>
      errors.push(...blockErrors(block, `${field}.content[${index}]`, bounds)),
    );
  return errors;
}

/** The ids and names a block carries, which the translation copies into the engine's request. */
function blockErrors(block: Json, field: string, bounds: TranslationBounds): ErrorDetail[] {
  if (block.type === 'tool_use')
    return [...nameErrors(block.id, `${field}.id`, bounds), ...nameErrors(block.name, `${field}.name`, bounds)];
  if (block.type === 'tool_result') {
    const errors = nameErrors(block.tool_use_id, `${field}.tool_use_id`, bounds);
    const { content } = block;
    if (content !== undefined && content !== null && typeof content !== 'string' && !isObjectList(content))
      errors.push({ field: `${field}.content`, message: 'must be a string or an array of content blocks' });
    return errors;
  }
  if (block.type === 'image' && block.source !== undefined && !isObject(block.source))
    return [{ field: `${field}.source`, message: 'must be an object' }];
  return [];
}

/**
 * Tools: an array of objects, at most `maxTools`; a tool the engine is sent (one with an
 * `input_schema`) is named.
 */
function toolErrors(tools: unknown, bounds: TranslationBounds): ErrorDetail[] {
  if (tools === undefined || tools === null) return [];
  if (!Array.isArray(tools)) return [{ field: 'tools', message: 'must be an array' }];
  const tooMany = countError('tools', tools.length, bounds.maxTools, 'TOLLGATE_TRANSLATION_MAX_TOOLS', 'tools');
  if (tooMany.length > 0) return tooMany;
  const details: ErrorDetail[] = [];
  tools.forEach((tool: unknown, index) => {
    const field = `tools[${index}]`;
    if (!isObject(tool)) details.push({ field, message: 'must be an object' });
    else if (tool.input_schema !== undefined && !isObject(tool.input_schema))
      details.push({ field: `${field}.input_schema`, message: 'must be an object' });
    else if (isObject(tool.input_schema)) details.push(...nameErrors(tool.name, `${field}.name`, bounds));
    else details.push(...optionalNameErrors(tool.name, `${field}.name`, bounds));
  });
  return details;
}

function isBlockList(value: unknown): boolean {
  return Array.isArray(value) && value.every((block) => isObject(block) && BLOCK_TYPES.has(block.type as string));
}

function isObjectList(value: unknown): boolean {
  return Array.isArray(value) && value.every(isObject);
}
