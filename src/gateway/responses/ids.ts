import { GatewayError } from '../../shared/http/errors.js';

/** The ids the gateway gives its responses (`itemId('resp')` of `requests/responses/answer.ts`): no other is stored. */
const RESPONSE_ID = /^resp_[0-9a-f]{48}$/;
/** Characters an id may hold at all: what OpenAI's ids and the gateway's are made of. Anything else is a 400. */
const ID_CHARACTERS = /^[A-Za-z0-9_-]+$/;
/** The most of an unknown id an error message repeats: a client's megabyte of id is not sent back to it. */
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

/** An id as an error message may repeat it: its first characters, and only when it is made of id characters. */
export function echoedId(id: string): string {
  if (responseIdKind(id) === 'malformed') return '';
  return id.length > ECHOED_CHARS ? `${id.slice(0, ECHOED_CHARS)}…` : id;
}

/** The 400 for a malformed id in `field`; the id itself is not repeated. */
export function malformedId(field: string): GatewayError {
  return new GatewayError(
    'invalid_request',
    `${field} must be a response id (resp_ and letters, digits, _ or -): it holds a character no id has.`,
    { details: [{ field, message: 'not a response id' }] },
  );
}

/** The 404 of `previous_response_id` for an id no stored response has: the id repeated only as `echoedId` allows. */
export function previousResponseNotFound(id: string): GatewayError {
  return new GatewayError('previous_response_not_found', `Previous response with id '${echoedId(id)}' not found.`, {
    details: [{ field: 'previous_response_id', message: 'no stored response has this id' }],
  });
}
