import { type ErrorDetail, GatewayError } from './errors.js';

/**
 * How deep a request body may nest. Far beyond any real request (chat
 * messages with tool calls and JSON schemas nest about a dozen levels), and
 * far below what would overflow the stack of the code that walks, copies or
 * serializes bodies afterwards.
 */
const MAX_JSON_DEPTH = 64;

/**
 * Checks a parsed JSON body before anything else touches it, without
 * recursion (a 100,000-deep body must not overflow the checker either):
 * 400 `invalid_request` when it nests deeper than MAX_JSON_DEPTH, and, with
 * `storable`, when a string holds U+0000, which PostgreSQL cannot store
 * (every such field is named in `details`).
 *
 * @example
 * checkJsonShape(JSON.parse(text), { storable: true });
 */
export function checkJsonShape(body: unknown, options: { storable: boolean }): void {
  const nulFields: ErrorDetail[] = [];
  const stack: Array<{ value: unknown; path: string; depth: number }> = [{ value: body, path: '', depth: 0 }];
  while (stack.length > 0) {
    const { value, path, depth } = stack.pop()!;
    if (typeof value === 'string') {
      if (options.storable && value.includes('\u0000'))
        nulFields.push({ field: path || 'body', message: 'must not contain the NUL character (\\u0000)' });
      continue;
    }
    if (typeof value !== 'object' || value === null) continue;
    if (depth >= MAX_JSON_DEPTH) {
      throw new GatewayError('invalid_request', `The request body nests deeper than ${MAX_JSON_DEPTH} levels.`);
    }
    const entries: Array<[string, unknown]> = Array.isArray(value)
      ? value.map((item, i) => [String(i), item])
      : Object.entries(value);
    for (const [key, item] of entries)
      stack.push({ value: item, path: path ? `${path}.${key}` : key, depth: depth + 1 });
  }
  if (nulFields.length > 0)
    throw new GatewayError('invalid_request', 'Invalid request body.', { details: nulFields.reverse() });
}
