import { itemIdPrefix } from '../stored-responses/ids.js';
import { keptInputItem } from '../stored-responses/kept.js';
import { isItemId, newId } from './ids.js';

type Json = Record<string, unknown>;

/**
 * An input or output item as a conversation keeps it, in the shape of OpenAI's
 * `ConversationItem`: only what `stored-responses/kept.ts` keeps (what a later turn
 * sends to the engine; reasoning items, references and built-in tools' calls
 * are not kept, as for stored responses), a message's text as a part, an `id`
 * (its own when it is one, else a new one) and a `status`. Null for an item not kept.
 *
 * @example
 * conversationItemOf({ role: 'user', content: 'Hi' });
 * // { id: 'msg_…', type: 'message', status: 'completed', role: 'user', content: [{ type: 'input_text', text: 'Hi' }] }
 */
export function conversationItemOf(item: Json): Json | null {
  const typed = item.type === undefined && typeof item.role === 'string' ? { ...item, type: 'message' } : item;
  const kept = keptInputItem(typed);
  if (!kept) return null;
  if (kept.type === 'message' && typeof kept.content === 'string') {
    const part = kept.role === 'assistant' ? { type: 'output_text', annotations: [] } : { type: 'input_text' };
    kept.content = [{ ...part, text: kept.content }];
  }
  // An assistant's text as OpenAI's `Message` has it: `annotations` (kept) and `logprobs`.
  if (kept.type === 'message' && Array.isArray(kept.content))
    for (const part of kept.content as Json[]) if (part.type === 'output_text') part.logprobs ??= [];
  const id = typeof kept.id === 'string' && isItemId(kept.id) ? kept.id : newId(itemIdPrefix(kept.type));
  return Object.assign({ id }, kept, { id, status: typeof kept.status === 'string' ? kept.status : 'completed' });
}

/** Items as a conversation keeps them, those not kept left out. */
export function conversationItemsOf(items: Json[]): Json[] {
  return items.map(conversationItemOf).filter((item): item is Json => item !== null);
}
