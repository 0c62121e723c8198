import { type ErrorDetail, GatewayError } from '../../../shared/http/errors.js';
import { echoedId } from '../../stored-responses/ids.js';
import type { ResponseStore } from '../../stored-responses/store.js';
import { countError, isObject } from '../translation-bounds.js';

type Json = Record<string, unknown>;

function isReference(item: Json): boolean {
  return item.type === 'item_reference';
}

/** Whether a request's `input` holds an `item_reference`: its call reads the store before the hold. */
export function hasReferences(input: unknown): boolean {
  return Array.isArray(input) && (input as unknown[]).some((item) => isObject(item) && isReference(item));
}

/**
 * A request's `item_reference`s counted against TOLLGATE_RESPONSES_MAX_REFERENCES, before the store
 * is read.
 */
export function referenceCountErrors(input: unknown, maxReferences: number): ErrorDetail[] {
  if (!Array.isArray(input)) return [];
  let count = 0;
  for (const item of input as unknown[]) if (isObject(item) && isReference(item)) count++;
  return countError('input', count, maxReferences, 'TOLLGATE_RESPONSES_MAX_REFERENCES', 'item references');
}

/**
 * This turn's input items with each `item_reference` replaced by the item it names: an input or
 * output item of one of the organization's stored responses, every reference of the request read in
 * one statement. The engine is sent, the stored response keeps and its conversation appends the
 * resolved items, never the references. A reference found nowhere is a 400 naming it, the same
 * bytes whether the id is unknown, expired, deleted or another organization's. An input without
 * references is given back as it is, and the store is not asked.
 */
export async function resolvedInput(store: ResponseStore | null, orgId: string, input: Json[]): Promise<Json[]> {
  const ids = input.filter(isReference).map((item) => item.id as string);
  if (ids.length === 0) return input;
  const found = store ? await store.referencedItems(orgId, [...new Set(ids)]) : new Map<string, Json>();
  return input.map((item, index) => {
    if (!isReference(item)) return item;
    const referenced = found.get(item.id as string);
    if (!referenced) throw referenceNotFound(item.id as string, index);
    return referenced;
  });
}

/** The most of a reference's id its error repeats: the gateway's item ids (68 characters) whole. */
const ECHOED_REFERENCE_CHARS = 128;

function referenceNotFound(id: string, index: number): GatewayError {
  const echoed = echoedId(id, ECHOED_REFERENCE_CHARS);
  return new GatewayError('invalid_request', `Item with id '${echoed}' not found.`, {
    details: [{ field: `input[${index}].id`, message: 'no stored item of your organization has this id' }],
  });
}
