import { badRequest, invalidBody } from './errors.js';

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

/**
 * vLLM's `--scheduling-policy`: first come first served, or by each request's `priority` (lower
 * first).
 */
export type SchedulingPolicy = 'fcfs' | 'priority';

/**
 * `cache_salt`, checked as vLLM's protocol checks it: absent or null is no salt; anything else must
 * be a non-empty string (its `check_cache_salt_support`).
 *
 * @example
 * readCacheSalt({ cache_salt: 'tenant-a' }); // 'tenant-a'
 */
export function readCacheSalt(body: JsonObject): string | null {
  const salt = body.cache_salt;
  if (salt === undefined || salt === null) return null;
  if (typeof salt !== 'string' || salt === '')
    throw badRequest("Parameter 'cache_salt' must be a non-empty string if provided.", 'cache_salt');
  return salt;
}

/**
 * `priority` (an integer, default 0; lower is served first), refused when not 0 and the engine
 * schedules first come first served, as vLLM's engine refuses it.
 *
 * @example
 * readPriority({ priority: 3 }, 'priority'); // 3
 */
export function readPriority(body: JsonObject, policy: SchedulingPolicy): number {
  const priority = optionalInt(body, 'priority') ?? 0;
  if (priority !== 0 && policy !== 'priority')
    throw badRequest(`Got priority ${priority} but Priority scheduling is not enabled.`, 'priority');
  return priority;
}
