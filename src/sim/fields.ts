import { invalidBody } from './errors.js';

/** A parsed JSON request body. */
export type JsonObject = Record<string, unknown>;

/**
 * True for a plain JSON object (not null, not an array).
 *
 * @example
 * isObject({}); // true
 * isObject([]); // false
 */
export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * An optional integer field: null when absent or null, a 400 like pydantic's otherwise.
 *
 * @example
 * optionalInt({ max_tokens: 5 }, 'max_tokens'); // 5
 */
export function optionalInt(body: JsonObject, field: string): number | null {
  const value = body[field];
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    throw invalidBody([field], 'int_type', 'Input should be a valid integer');
  }
  return value;
}

/**
 * An optional boolean field: null when absent or null, a 400 like pydantic's otherwise.
 *
 * @example
 * optionalBoolean({ stream: true }, 'stream'); // true
 */
export function optionalBoolean(body: JsonObject, field: string, loc: string[] = [field]): boolean | null {
  const value = body[field];
  if (value === undefined || value === null) return null;
  if (typeof value !== 'boolean') throw invalidBody(loc, 'bool_type', 'Input should be a valid boolean');
  return value;
}
