import { type ErrorDetail, GatewayError } from './errors.js';

/**
 * How deep a body may nest unless told otherwise (`/v1` bodies: TOLLGATE_MAX_JSON_DEPTH). Far
 * beyond any real request (chat messages with tool calls and JSON schemas nest about a dozen
 * levels), and far below what would overflow the stack of the code that walks, copies or serializes
 * bodies afterwards.
 */
export const DEFAULT_MAX_JSON_DEPTH = 64;

/**
 * Checks a parsed JSON body before anything else touches it, without
 * recursion (a 100,000-deep body must not overflow the checker either):
 * 400 `invalid_request` when it nests deeper than `maxDepth` (default 64), and, with
 * `storable`, when a string holds U+0000, which PostgreSQL cannot store
 * (every such field is named in `details`).
 *
 * @example
 * checkJsonShape(JSON.parse(text), { storable: true });
 */
export function checkJsonShape(body: unknown, options: { storable: boolean; maxDepth?: number }): void {
  const maxDepth = options.maxDepth ?? DEFAULT_MAX_JSON_DEPTH;
  const nulFields: ErrorDetail[] = [];
  // Each node keeps its parent and key, not its path: a path is written only for a field refused
  // (building one for every node of a 500 KB body of 20,000 items was about half of this walk's
  // time).
  const stack: ShapeNode[] = [{ value: body, parent: null, key: '', depth: 0 }];
  while (stack.length > 0) {
    const node = stack.pop()!;
    const { value, depth } = node;
    if (typeof value === 'string') {
      if (options.storable && value.includes('\u0000'))
        nulFields.push({ field: pathOf(node) || 'body', message: 'must not contain the NUL character (\\u0000)' });
      continue;
    }
    if (typeof value !== 'object' || value === null) continue;
    if (depth >= maxDepth) {
      const setting = options.maxDepth === undefined ? '' : ' (TOLLGATE_MAX_JSON_DEPTH)';
      throw new GatewayError('invalid_request', `The request body nests deeper than ${maxDepth} levels${setting}.`);
    }
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) pushChild(stack, value[i], node, i, options.storable);
    } else {
      for (const key in value) pushChild(stack, (value as Record<string, unknown>)[key], node, key, options.storable);
    }
  }
  if (nulFields.length > 0)
    throw new GatewayError('invalid_request', 'Invalid request body.', { details: nulFields.reverse() });
}

interface ShapeNode {
  value: unknown;
  parent: ShapeNode | null;
  key: string | number;
  depth: number;
}

/** Only what can nest, or hold a NUL, is walked further. */
function pushChild(stack: ShapeNode[], value: unknown, parent: ShapeNode, key: string | number, storable: boolean) {
  if ((typeof value === 'object' && value !== null) || (storable && typeof value === 'string'))
    stack.push({ value, parent, key, depth: parent.depth + 1 });
}

/** A node's path as the details name it: `messages.0.content`. */
function pathOf(node: ShapeNode): string {
  const keys: string[] = [];
  for (let at: ShapeNode | null = node; at?.parent; at = at.parent) keys.push(String(at.key));
  return keys.reverse().join('.');
}
