import type { Context } from 'hono';
import type { z } from 'zod';
import { type ErrorDetail, GatewayError } from './errors.js';
import { checkJsonShape } from './json-shape.js';

/**
 * Reads and validates a JSON body. Bad JSON is `invalid_json`; a body that
 * parses but breaks the schema is `invalid_request` with one detail per field.
 *
 * @example
 * const { name } = await readBody(c, createOrgBody);
 */
export async function readBody<S extends z.ZodType>(c: Context, schema: S): Promise<z.output<S>> {
  let body: unknown;
  try {
    body = JSON.parse(await c.req.text());
  } catch (error) {
    throw new GatewayError('invalid_json', 'The request body is not valid JSON.', { cause: error });
  }
  // Management bodies are stored: no NUL characters, and no nesting that could overflow a stack.
  checkJsonShape(body, { storable: true });
  return check(schema, body, 'Invalid request body.');
}

/**
 * Validates the query string against a schema of string fields.
 *
 * @example
 * const { limit } = readQuery(c, ledgerQuery);
 */
export function readQuery<S extends z.ZodType>(c: Context, schema: S): z.output<S> {
  return check(schema, c.req.query(), 'Invalid query parameters.');
}

function check<S extends z.ZodType>(schema: S, input: unknown, message: string): z.output<S> {
  const parsed = schema.safeParse(input, { error: plainMessage });
  if (parsed.success) return parsed.data;
  throw new GatewayError('invalid_request', message, { details: toDetails(parsed.error.issues) });
}

/** One `{field, message}` per problem; unknown keys get one detail each, named. */
export function toDetails(issues: readonly z.core.$ZodIssue[]): ErrorDetail[] {
  return issues.flatMap((issue) => {
    if (issue.code === 'unrecognized_keys') return issue.keys.map((key) => ({ field: key, message: 'Unknown field.' }));
    if (issue.path.length === 0 && issue.code === 'invalid_type')
      return [{ field: 'body', message: 'The body must be a JSON object.' }];
    return [{ field: issue.path.length > 0 ? issue.path.join('.') : 'body', message: issue.message }];
  });
}

// Zod's defaults speak of types ("expected int, received number"); operators read these instead.
function plainMessage(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case 'invalid_type':
      if (issue.input === undefined) return 'Required.';
      if (issue.expected === 'int') return 'Must be a whole number.';
      if (issue.expected === 'boolean') return 'Must be true or false.';
      return `Must be ${issue.expected === 'string' ? 'a string' : `of type ${issue.expected}`}.`;
    case 'too_small':
      if (issue.origin === 'string')
        return Number(issue.minimum) <= 1 ? 'Must not be empty.' : `Must be at least ${issue.minimum} characters.`;
      return `Must be at least ${issue.minimum}.`;
    case 'too_big':
      return issue.origin === 'string'
        ? `Must be at most ${issue.maximum} characters.`
        : `Must be at most ${issue.maximum}.`;
    case 'invalid_value':
      return `Must be one of: ${issue.values.map(String).join(', ')}.`;
    default:
      return undefined;
  }
}
