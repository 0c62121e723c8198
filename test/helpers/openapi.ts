import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { parse } from 'yaml';

/**
 * Validates response bodies against OpenAI's published OpenAPI spec, vendored
 * with its MIT license in `test/fixtures/openai-openapi/`, so the shapes
 * clients get are the shapes their SDKs were generated from.
 */
const specPath = path.resolve(import.meta.dirname, '../fixtures/openai-openapi/openapi.yaml');

let ajv: Ajv2020 | undefined;

function validator(): Ajv2020 {
  if (ajv) return ajv;
  const spec = parse(readFileSync(specPath, 'utf8')) as { components: { schemas: Record<string, unknown> } };
  ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  ajv.addSchema({ $id: 'openai', components: withoutNullable(spec.components) }, 'openai');
  return ajv;
}

/** The spec still uses OpenAPI 3.0's `nullable` in places; JSON Schema says `type: [T, "null"]`. */
function withoutNullable(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(withoutNullable);
  if (typeof node !== 'object' || node === null) return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) if (key !== 'nullable') out[key] = withoutNullable(value);
  const { nullable } = node as { nullable?: unknown };
  if (nullable === true) {
    if (typeof out.type === 'string') out.type = [out.type, 'null'];
    if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
    else if (out.type === undefined) return { anyOf: [out, { type: 'null' }] };
  }
  return out;
}

/**
 * The errors of `body` against `components.schemas[name]`, as readable lines; empty when it
 * conforms.
 */
export function openApiErrors(name: string, body: unknown): string[] {
  const validate = validator().getSchema(`openai#/components/schemas/${name}`);
  if (!validate) throw new Error(`no schema ${name} in the OpenAI spec`);
  if (validate(body)) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`);
}
