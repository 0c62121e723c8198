import { GatewayError } from '../../../shared/http/errors.js';
import { describeError, type Logger } from '../../../shared/http/log.js';
import { withinStoreOr503, withinStoreTimeout } from '../../../shared/db/timeout.js';
import type { ResponseStore } from '../../stored-responses/store.js';
import type { ConversationStore } from '../../conversations/store.js';
import type { AuthorizedRequest } from '../authorize.js';
import { itemIdPrefix, ownedItemId } from '../../stored-responses/ids.js';
import { conversationIdOf, conversationTurns } from './conversation-turns.js';
import { inputItemsOf } from './items.js';
import { resolvedInput } from './references.js';

type Json = Record<string, unknown>;

/**
 * What reading a turn's input needs of its request: the billed path's, or a count's
 * (`input-tokens.ts`).
 */
export type TurnRequest = Pick<AuthorizedRequest, 'requestId' | 'caller' | 'body'>;

/** A turn's input items, references resolved, and the earlier turns it continues (undefined: none). */
export interface TurnInput {
  input: Json[];
  earlier?: Json[];
}

/** Where a conversation is kept, and where a store that fails is told of. */
export interface ConversationDeps {
  store: ResponseStore | null;
  /** Where `conversation` (`/v1/conversations`) is kept; absent, a request naming one is a 404. */
  conversations?: ConversationStore | null;
  log: Logger;
}

/**
 * The conversations of the Responses API: the one place the create path uses
 * the response store, each call within the store's timeout (a store that does
 * not answer is a 503 before the hold, or a response answered unstored after
 * it). Before the hold, `previous_response_id` is read (its chain, in the
 * caller's organization only): its turns go to the engine before this one's;
 * after the answer, the response is kept unless `store: false`.
 */
export function createConversations({ store, conversations, log }: ConversationDeps) {
  const { loadConversation, append } = conversationTurns(conversations ?? null, log);
  /**
   * What a turn reads before the hold: its input items, each `item_reference` resolved
   * (`references.ts`), and the earlier turns its `conversation` or `previous_response_id`
   * continues, as items (none without either). An unknown, expired or another organization's id is
   * a 404, an unknown reference a 400, before any hold.
   */
  const load = async (request: TurnRequest): Promise<TurnInput> => {
    const input = await resolvedInput(store, request.caller.orgId, inputItemsOf(request.body.input));
    return { input, earlier: await loadEarlier(request) };
  };

  const loadEarlier = async (request: TurnRequest): Promise<Json[] | undefined> => {
    const conversation = conversationIdOf(request.body.conversation);
    if (conversation !== undefined) return loadConversation(request, conversation);
    const id = request.body.previous_response_id;
    if (typeof id !== 'string') return undefined;
    const chain = store ? await readChain(store, request, id) : null;
    if (!chain)
      throw new GatewayError('previous_response_not_found', `Previous response with id '${id}' not found.`, {
        details: [{ field: 'previous_response_id', message: 'no stored response has this id' }],
      });
    return chain.flatMap((turn) => [...turn.input, ...((turn.response.output as Json[] | undefined) ?? [])]);
  };

  // The store's own outage answer (docs/api.md: `previous_response_id` is 503
  // `responses_unavailable`); the app's error renderer logs its cause.
  const readChain = (store: ResponseStore, request: TurnRequest, id: string) =>
    withinStoreOr503(
      store.chain(request.caller.orgId, id),
      'responses_unavailable',
      'The gateway cannot read stored responses right now.',
    );

  /**
   * Keeps a finished response (completed or incomplete) with this turn's input items, unless the
   * request said `store: false`. A response the store refuses (past its size bound), cannot write
   * or does not write in time is still answered, as `store: false`: its tokens were generated and
   * are billed, and the client learns it cannot be continued.
   */
  const keep = async (request: AuthorizedRequest, input: Json[], response: Json): Promise<void> => {
    await append(request, input, response);
    if (!store || request.body.store === false) {
      response.store = false;
      return;
    }
    try {
      await withinStoreTimeout(
        store.save({
          id: response.id as string,
          orgId: request.caller.orgId,
          keyId: request.caller.id,
          model: request.clientModel,
          // The gateway's clock: a response's life (TOLLGATE_RESPONSES_RETENTION_DAYS) never comes
          // from an engine.
          createdAt: new Date(),
          previousResponseId:
            typeof request.body.previous_response_id === 'string' ? request.body.previous_response_id : null,
          input: input.map((item) => storedItem(item, response.id as string)),
          response,
        }),
      );
    } catch (error) {
      response.store = false;
      log.warn('a response was not stored: answered with store false', {
        requestId: request.requestId,
        ...describeError(error),
      });
    }
  };

  return { load, keep };
}

/**
 * An input item as OpenAI lists it back (`input_items`): with an id, its own or a new one, and a
 * message's text as a part.
 */
function storedItem(item: Json, responseId: string): Json {
  const stored =
    typeof item.id === 'string' ? item : Object.assign({ id: ownedItemId(itemIdPrefix(item.type), responseId) }, item);
  if (stored.type !== 'message' || typeof stored.content !== 'string') return stored;
  const part = { type: stored.role === 'assistant' ? 'output_text' : 'input_text', text: stored.content };
  return Object.assign({}, stored, { content: [part] });
}
