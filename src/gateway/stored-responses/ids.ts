import { randomBytes } from 'node:crypto';
import { GatewayError } from '../../shared/http/errors.js';

/**
 * The ids the gateway gives its responses (`itemId('resp')` of `requests/responses/answer.ts`): no
 * other is stored.
 */
const RESPONSE_ID = /^resp_[0-9a-f]{48}$/;
/**
 * Characters an id may hold at all: what OpenAI's ids and the gateway's are made of. Anything else
 * is a 400.
 */
const ID_CHARACTERS = /^[A-Za-z0-9_-]+$/;
/**
 * The most of an unknown id an error message repeats: a client's megabyte of id is not sent back to
 * it.
 */
const ECHOED_CHARS = 64;

/**
 * What a response id given by a client can be, checked before any database
 * call: `malformed` holds a character no id has (a NUL, invalid UTF-8 decoded
 * as U+FFFD, a space, …: the database would refuse some of them with an error
 * of its own), `foreign` is an id the gateway cannot have made (so none is
 * stored), `ours` may be stored.
 *
 * @example
 * responseIdKind('resp_' + 'a'.repeat(48)); // 'ours'
 * responseIdKind('resp_\u0000'); // 'malformed'
 */
export function responseIdKind(id: string): 'ours' | 'foreign' | 'malformed' {
  if (RESPONSE_ID.test(id)) return 'ours';
  return id.length > 0 && ID_CHARACTERS.test(id) ? 'foreign' : 'malformed';
}

/**
 * An id as an error message may repeat it: its first `chars` characters, and only when it is made
 * of id characters.
 */
export function echoedId(id: string, chars = ECHOED_CHARS): string {
  if (responseIdKind(id) === 'malformed') return '';
  return id.length > chars ? `${id.slice(0, chars)}…` : id;
}

/** The 400 for a malformed id in `field`; the id itself is not repeated. */
export function malformedId(field: string): GatewayError {
  return new GatewayError(
    'invalid_request',
    `${field} must be a response id (resp_ and letters, digits, _ or -): it holds a character no id has.`,
    { details: [{ field, message: 'not a response id' }] },
  );
}

/**
 * The 404 of `previous_response_id` for an id no stored response has: the id repeated only as
 * `echoedId` allows.
 */
export function previousResponseNotFound(id: string): GatewayError {
  return new GatewayError('previous_response_not_found', `Previous response with id '${echoedId(id)}' not found.`, {
    details: [{ field: 'previous_response_id', message: 'no stored response has this id' }],
  });
}

/**
 * An item id the gateway made for a response: its prefix, the response's 48 hex digits, 16 random
 * ones.
 */
const OWNED_ITEM_ID = /^[a-z]+_([0-9a-f]{48})[0-9a-f]{16}$/;

/**
 * An id for an item of response `responseId` (an output item, or an input item without an id of its
 * own) that names the response it belongs to, so an `item_reference` finds its response by its id
 * alone, in one lookup (`responseIdOfItem`). A response id the gateway did not make gives an id
 * that names no stored response.
 *
 * @example
 * ownedItemId('msg', 'resp_' + 'ab'.repeat(24)); // 'msg_abab…ab' + 16 random hex digits
 */
export function ownedItemId(prefix: string, responseId: string): string {
  const hex = RESPONSE_ID.test(responseId) ? responseId.slice('resp_'.length) : randomBytes(24).toString('hex');
  return `${prefix}_${hex}${randomBytes(8).toString('hex')}`;
}

/**
 * The prefix of the id the gateway gives an item of each type that comes without one (OpenAI's own
 * prefixes): one table for a stored response's input items and a conversation's items, so an item
 * is named alike wherever it is listed. Any other type is `item`.
 */
const ITEM_ID_PREFIXES: ReadonlyMap<string, string> = new Map([
  ['message', 'msg'],
  ['function_call', 'fc'],
  ['function_call_output', 'fco'],
  ['custom_tool_call', 'ctc'],
  ['custom_tool_call_output', 'ctco'],
  ['reasoning', 'rs'],
  ['compaction', 'cmp'],
]);

/**
 * The prefix of a new id for an item of `type` (a client's item without an id of its own).
 *
 * @example
 * itemIdPrefix('compaction'); // 'cmp'
 * itemIdPrefix('constructor'); // 'item'
 */
export function itemIdPrefix(type: unknown): string {
  return (typeof type === 'string' && ITEM_ID_PREFIXES.get(type)) || 'item';
}

/**
 * The response an item id made by `ownedItemId` belongs to; null for any other id (the client's
 * own, an old one).
 */
export function responseIdOfItem(itemId: string): string | null {
  const hex = OWNED_ITEM_ID.exec(itemId)?.[1];
  return hex ? `resp_${hex}` : null;
}
