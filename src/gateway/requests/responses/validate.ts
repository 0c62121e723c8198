import type { TranslationBounds } from '../../../config/types.js';
import type { ErrorDetail } from '../../../shared/http/errors.js';
import { countError, isObject, nameErrors, optionalNameErrors } from '../translation-bounds.js';
import { COMPACTION_TYPES, compactionSummary } from './compaction-item.js';

type Json = Record<string, unknown>;

/**
 * What the translation relies on: `input` a string or an array of items
 * (objects with a `type` or a `role`), `instructions` a string,
 * `max_output_tokens` a positive integer, `stream` and `store` booleans,
 * `tools` an array of objects, `previous_response_id` a string; and the shape
 * bounds (`translation-bounds.ts`), every count checked before the list it
 * counts is walked. The rest is the engine's to judge, and unknown fields are
 * ignored, as OpenAI-compatible servers do.
 */
export function responsesRequestErrors(body: Json, bounds: TranslationBounds): ErrorDetail[] {
  const details = inputErrors(body.input, bounds);
  if (body.instructions !== undefined && body.instructions !== null && typeof body.instructions !== 'string')
    details.push({ field: 'instructions', message: 'must be a string' });
  const max = body.max_output_tokens;
  if (max !== undefined && max !== null && (!Number.isSafeInteger(max) || (max as number) < 1))
    details.push({ field: 'max_output_tokens', message: 'must be a positive integer' });
  for (const field of ['stream', 'store', 'background']) {
    if (body[field] !== undefined && body[field] !== null && typeof body[field] !== 'boolean')
      details.push({ field, message: 'must be true or false' });
  }
  // A background response is read back by its id: it is stored, as OpenAI requires.
  if (body.background === true && body.store === false)
    details.push({ field: 'background', message: 'requires store: a background response is stored to be read back' });
  details.push(...toolErrors(body.tools, bounds));
  if (isObject(body.tool_choice))
    details.push(...optionalNameErrors(body.tool_choice.name, 'tool_choice.name', bounds));
  const previous = body.previous_response_id;
  if (previous !== undefined && previous !== null && typeof previous !== 'string')
    details.push({ field: 'previous_response_id', message: 'must be a string' });
  details.push(...conversationErrors(body));
  return details;
}

function inputErrors(input: unknown, bounds: TranslationBounds): ErrorDetail[] {
  if (typeof input === 'string') return [];
  if (!Array.isArray(input)) return [{ field: 'input', message: 'must be a string or an array of input items' }];
  // Items and their content parts together: counted before any of them is looked at.
  let items = input.length;
  for (const item of input) if (isObject(item) && Array.isArray(item.content)) items += item.content.length;
  const tooMany = countError('input', items, bounds.maxItems, 'TOLLGATE_TRANSLATION_MAX_ITEMS');
  if (tooMany.length > 0) return tooMany;
  const details: ErrorDetail[] = [];
  input.forEach((item: unknown, index) => details.push(...itemErrors(item, `input[${index}]`, bounds)));
  return details;
}

const ROLES: ReadonlySet<string> = new Set(['user', 'assistant', 'system', 'developer']);
const CALLS: ReadonlySet<string> = new Set(['function_call', 'custom_tool_call']);
const OUTPUTS: ReadonlySet<string> = new Set(['function_call_output', 'custom_tool_call_output']);

function itemErrors(item: unknown, field: string, bounds: TranslationBounds): ErrorDetail[] {
  if (!isObject(item)) return [{ field, message: 'must be an object' }];
  if (item.type !== undefined && typeof item.type !== 'string')
    return [{ field: `${field}.type`, message: 'must be a string' }];
  // A reference is its id: resolved from the stored responses (`references.ts`).
  const errors =
    item.type === 'item_reference'
      ? nameErrors(item.id, `${field}.id`, bounds)
      : optionalNameErrors(item.id, `${field}.id`, bounds);
  if (CALLS.has(item.type as string)) {
    errors.push(...nameErrors(item.call_id, `${field}.call_id`, bounds));
    errors.push(...nameErrors(item.name, `${field}.name`, bounds));
    errors.push(...optionalNameErrors(item.namespace, `${field}.namespace`, bounds));
  }
  if (OUTPUTS.has(item.type as string)) errors.push(...nameErrors(item.call_id, `${field}.call_id`, bounds));
  // Another provider's compaction is encrypted with its key: refused, rather than its summary lost.
  if (COMPACTION_TYPES.has(item.type as string) && compactionSummary(item) === null)
    errors.push({ field: `${field}.encrypted_content`, message: 'is not a compaction made by this gateway' });
  if (item.type !== undefined && item.type !== 'message') return errors;
  if (!ROLES.has(item.role as string))
    errors.push({ field: `${field}.role`, message: 'must be user, assistant, system or developer' });
  if (typeof item.content !== 'string' && !(Array.isArray(item.content) && item.content.every(isObject))) {
    errors.push({ field: `${field}.content`, message: 'must be a string or an array of content parts' });
  }
  return errors;
}

const NAMESPACED_TOOLS = 'tools, each function of a namespace counted';

/**
 * Tools: an array of objects, at most `maxTools` with each function of a `namespace` counted (the
 * namespace itself not); a function's, a custom tool's and a namespace's names are bounded (a
 * namespace's is copied into each of its functions' names).
 */
function toolErrors(tools: unknown, bounds: TranslationBounds): ErrorDetail[] {
  if (tools === undefined || tools === null) return [];
  if (!Array.isArray(tools)) return [{ field: 'tools', message: 'must be an array' }];
  // A namespace counts as its functions (what the engine is sent), not as one more; an empty one as
  // one.
  let count = 0;
  for (const tool of tools)
    count +=
      isObject(tool) && tool.type === 'namespace' && Array.isArray(tool.tools) ? Math.max(1, tool.tools.length) : 1;
  const tooMany = countError('tools', count, bounds.maxTools, 'TOLLGATE_TRANSLATION_MAX_TOOLS', NAMESPACED_TOOLS);
  if (tooMany.length > 0) return tooMany;
  const details: ErrorDetail[] = [];
  tools.forEach((tool: unknown, index) => details.push(...toolDefinitionErrors(tool, `tools[${index}]`, bounds)));
  return details;
}

function toolDefinitionErrors(tool: unknown, field: string, bounds: TranslationBounds): ErrorDetail[] {
  if (!isObject(tool)) return [{ field, message: 'must be an object' }];
  if (tool.type === 'function' || tool.type === 'custom') return nameErrors(tool.name, `${field}.name`, bounds);
  if (tool.type !== 'namespace') return [];
  const errors = nameErrors(tool.name, `${field}.name`, bounds);
  if (!Array.isArray(tool.tools)) return [...errors, { field: `${field}.tools`, message: 'must be an array' }];
  tool.tools.forEach((inner: unknown, index) => {
    const innerField = `${field}.tools[${index}]`;
    if (!isObject(inner)) errors.push({ field: innerField, message: 'must be an object' });
    else if (inner.type === 'function' || inner.type === 'custom')
      errors.push(...nameErrors(inner.name, `${innerField}.name`, bounds));
  });
  return errors;
}

/**
 * `conversation`: an id, or an object with an `id` (OpenAI's `ConversationParam`); never with
 * `previous_response_id`, which OpenAI answers with a 400 too.
 */
function conversationErrors(body: Json): ErrorDetail[] {
  const conversation = body.conversation;
  if (conversation === undefined || conversation === null) return [];
  if (typeof conversation !== 'string' && !(isObject(conversation) && typeof conversation.id === 'string'))
    return [{ field: 'conversation', message: 'must be a conversation id or an object with an id' }];
  if (body.previous_response_id !== undefined && body.previous_response_id !== null)
    return [
      {
        field: 'conversation',
        message:
          "Mutually exclusive parameters: Ensure you are only providing one of: 'previous_response_id' or 'conversation'",
      },
    ];
  return [];
}
