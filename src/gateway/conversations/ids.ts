import { randomBytes } from 'node:crypto';
import { GatewayError } from '../../shared/http/errors.js';
import { responseIdKind } from '../stored-responses/ids.js';

/** The ids the gateway gives its conversations: no other is stored. */
const CONVERSATION_ID = /^conv_[0-9a-f]{48}$/;
/**
 * An item id the store keeps as the client gave it: what ids are made of, no longer than the routes
 * take.
 */
const ITEM_ID = /^[A-Za-z0-9_-]{1,256}$/;

/** A new id with this prefix: 48 hex digits, as the gateway's response ids. */
export function newId(prefix: string): string {
  return `${prefix}_${randomBytes(24).toString('hex')}`;
}

/**
 * What a conversation id from a client is, before any database call: `ours` may be stored,
 * `foreign` cannot be (null, a 404), and one holding a character no id has is a 400 naming `field`.
 */
export function conversationIdKind(id: string, field = 'conversation_id'): 'ours' | 'foreign' {
  if (CONVERSATION_ID.test(id)) return 'ours';
  if (responseIdKind(id) === 'malformed') throw malformed(field);
  return 'foreign';
}

/**
 * Whether an item id may be stored as given (else the item is given a new one); a 400 for a
 * malformed one in a path.
 */
export function isItemId(id: string): boolean {
  return ITEM_ID.test(id);
}

export function checkedItemId(id: string, field: string): boolean {
  if (ITEM_ID.test(id)) return true;
  if (responseIdKind(id) === 'malformed') throw malformed(field);
  return false;
}

function malformed(field: string): GatewayError {
  return new GatewayError('invalid_request', `${field} holds a character no id has.`, {
    details: [{ field, message: 'not an id' }],
  });
}
