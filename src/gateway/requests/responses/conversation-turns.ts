import { GatewayError } from '../../../shared/http/errors.js';
import { describeError, type Logger } from '../../../shared/http/log.js';
import { conversationItemsOf } from '../../conversations/items.js';
import type { ConversationStore } from '../../conversations/store.js';
import { echoedId } from '../../stored-responses/ids.js';
import type { AuthorizedRequest } from '../authorize.js';

type Json = Record<string, unknown>;

/** The id of a request's `conversation` (a string or `{ id }`, as validated), or undefined. */
export function conversationIdOf(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'object' && value !== null && typeof (value as Json).id === 'string')
    return (value as Json).id as string;
  return undefined;
}

/**
 * A Responses turn in a `conversation` (`/v1/conversations`): its items start the turn's input, and
 * the turn's input and output are appended after it.
 */
export function conversationTurns(conversations: ConversationStore | null, log: Logger) {
  /**
   * A `conversation`'s items, the start of this turn's input: another organization's id is a 404,
   * before any hold.
   */
  const loadConversation = async (request: Pick<AuthorizedRequest, 'caller'>, id: string): Promise<Json[]> => {
    const items = conversations ? await conversations.turnItems(request.caller.orgId, id) : null;
    if (!items)
      throw new GatewayError('not_found', `Conversation with id '${echoedId(id)}' not found.`, {
        details: [{ field: 'conversation', message: 'no conversation has this id' }],
      });
    return items;
  };

  /**
   * A finished turn's input (its references resolved) and output appended to its `conversation` (as
   * `/v1/conversations` keeps items), whether or not the response is stored. A failed or cancelled
   * turn never comes here: it appends nothing. An append that fails (the conversation deleted
   * meanwhile, the database down) leaves the answer as it is, and is logged.
   */
  const append = async (request: AuthorizedRequest, input: Json[], response: Json): Promise<void> => {
    const id = conversationIdOf(request.body.conversation);
    if (id === undefined || !conversations) return;
    response.conversation = { id };
    const items = conversationItemsOf([...input, ...((response.output as Json[] | undefined) ?? [])]);
    try {
      if (!(await conversations.appendTurn(request.caller.orgId, id, items)))
        log.warn('a turn was not appended: its conversation has gone', { requestId: request.requestId });
    } catch (error) {
      log.warn('a turn was not appended to its conversation', {
        requestId: request.requestId,
        ...describeError(error),
      });
    }
  };

  return { loadConversation, append };
}
