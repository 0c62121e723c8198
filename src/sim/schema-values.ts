import { isObject, type JsonObject } from './fields.js';

// A value valid against a JSON schema, drawn from a seeded generator: what
// the simulator puts in a tool call's arguments and a json_schema answer.
// Schemas come from tenants, so the walk is bounded: a depth, a number of
// values, array and string lengths. Past a bound the value may stop being
// valid (a schema that needs a million items), but it always ends quickly.

/** Nesting the walk follows ($ref included) before it answers with the smallest value. */
export const MAX_SCHEMA_DEPTH = 12;
/** Values one answer holds at most. */
export const MAX_SCHEMA_VALUES = 2_000;
/** Items an array gets at most, whatever its minItems. */
export const MAX_ARRAY_ITEMS = 64;
/** Characters a string gets at most, whatever its minLength. */
export const MAX_STRING_LENGTH = 1_024;

const WORDS = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel'];

interface Walk {
  root: JsonObject;
  next: () => number;
  values: number;
}

/**
 * A value for `schema` (a JSON schema object; anything else allows any value).
 *
 * @example
 * schemaValue({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }, createRandom(1));
 */
export function schemaValue(schema: unknown, next: () => number): unknown {
  const root = isObject(schema) ? schema : {};
  return valueOf({ root, next, values: 0 }, root, 0);
}

function valueOf(walk: Walk, schema: JsonObject, depth: number): unknown {
  walk.values++;
  const tooDeep = depth > MAX_SCHEMA_DEPTH || walk.values > MAX_SCHEMA_VALUES;
  if (typeof schema.$ref === 'string') {
    const target = resolveRef(walk.root, schema.$ref);
    return target && !tooDeep ? valueOf(walk, target, depth + 1) : null;
  }
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[walk.next() % schema.enum.length];
  const alternatives = Array.isArray(schema.anyOf) ? schema.anyOf : Array.isArray(schema.oneOf) ? schema.oneOf : null;
  if (alternatives) {
    // The first alternative that is not null: `anyOf [T, null]` is how a nullable field is written.
    const pick: unknown = alternatives.find((a) => isObject(a) && a.type !== 'null') ?? alternatives[0];
    return isObject(pick) && !tooDeep ? valueOf(walk, pick, depth + 1) : null;
  }
  if (Array.isArray(schema.allOf)) return allOfValue(walk, schema.allOf, depth, tooDeep);
  switch (typeOf(schema)) {
    case 'object':
      return tooDeep ? {} : objectValue(walk, schema, depth);
    case 'array':
      return tooDeep ? [] : arrayValue(walk, schema, depth);
    case 'string':
      return stringValue(walk, schema);
    case 'integer':
      return numberValue(walk, schema, true);
    case 'number':
      return numberValue(walk, schema, false);
    case 'boolean':
      return walk.next() % 2 === 0;
    case 'null':
      return null;
    default:
      return stringValue(walk, {});
  }
}

function typeOf(schema: JsonObject): string {
  const type = schema.type;
  if (typeof type === 'string') return type;
  if (Array.isArray(type)) return (type.find((t) => t !== 'null') ?? type[0] ?? 'string') as string;
  if (isObject(schema.properties)) return 'object';
  if (schema.items !== undefined) return 'array';
  return 'string';
}

// `#/$defs/Name` or `#/definitions/Name` (what zod and pydantic write); `#` is the root.
function resolveRef(root: JsonObject, ref: string): JsonObject | null {
  if (ref === '#') return root;
  if (!ref.startsWith('#/')) return null;
  let node: unknown = root;
  for (const part of ref.slice(2).split('/')) {
    if (!isObject(node)) return null;
    node = node[part.replaceAll('~1', '/').replaceAll('~0', '~')];
  }
  return isObject(node) ? node : null;
}

function allOfValue(walk: Walk, parts: unknown[], depth: number, tooDeep: boolean): unknown {
  if (tooDeep) return null;
  let merged: unknown = null;
  for (const part of parts) {
    if (!isObject(part)) continue;
    const value = valueOf(walk, part, depth + 1);
    merged = isObject(merged) && isObject(value) ? { ...merged, ...value } : value;
  }
  return merged;
}

function objectValue(walk: Walk, schema: JsonObject, depth: number): JsonObject {
  const out: JsonObject = {};
  const properties = isObject(schema.properties) ? schema.properties : {};
  // Every declared property: strict schemas (OpenAI's, zod's) require them all.
  for (const [name, property] of Object.entries(properties)) {
    if (walk.values > MAX_SCHEMA_VALUES) break;
    out[name] = valueOf(walk, isObject(property) ? property : {}, depth + 1);
  }
  const required = Array.isArray(schema.required) ? schema.required : [];
  for (const name of required) {
    if (typeof name === 'string' && !(name in out))
      out[name] = walk.values > MAX_SCHEMA_VALUES ? null : stringValue(walk, {});
  }
  return out;
}

function arrayValue(walk: Walk, schema: JsonObject, depth: number): unknown[] {
  const min = nonNegativeInt(schema.minItems) ?? 0;
  const max = nonNegativeInt(schema.maxItems) ?? Math.max(min, 2);
  const count = Math.min(Math.max(min, Math.min(1 + (walk.next() % 2), max)), MAX_ARRAY_ITEMS);
  if (Array.isArray(schema.prefixItems)) {
    return schema.prefixItems
      .slice(0, MAX_ARRAY_ITEMS)
      .map((item) => valueOf(walk, isObject(item) ? item : {}, depth + 1));
  }
  const items = isObject(schema.items) ? schema.items : {};
  const out: unknown[] = [];
  for (let i = 0; i < count && walk.values <= MAX_SCHEMA_VALUES; i++) out.push(valueOf(walk, items, depth + 1));
  return out;
}

function stringValue(walk: Walk, schema: JsonObject): string {
  switch (schema.format) {
    case 'date-time':
      return '2026-01-02T03:04:05Z';
    case 'date':
      return '2026-01-02';
    case 'time':
      return '03:04:05Z';
    case 'email':
      return 'user@example.com';
    case 'uri':
    case 'url':
      return 'https://example.com/';
    case 'uuid':
      return '123e4567-e89b-42d3-a456-426614174000';
    default:
      break;
  }
  let text = WORDS[walk.next() % WORDS.length] as string;
  const min = Math.min(nonNegativeInt(schema.minLength) ?? 0, MAX_STRING_LENGTH);
  while (text.length < min) text += ` ${WORDS[walk.next() % WORDS.length] as string}`;
  const max = nonNegativeInt(schema.maxLength);
  return max === null ? text.slice(0, Math.max(min, MAX_STRING_LENGTH)) : text.slice(0, Math.max(max, 0));
}

function numberValue(walk: Walk, schema: JsonObject, integer: boolean): number {
  const bound = (key: string): number | null =>
    typeof schema[key] === 'number' && Number.isFinite(schema[key]) ? schema[key] : null;
  const exclusiveMin = bound('exclusiveMinimum');
  const exclusiveMax = bound('exclusiveMaximum');
  let low = bound('minimum') ?? (exclusiveMin === null ? 0 : exclusiveMin + 1);
  let high = bound('maximum') ?? (exclusiveMax === null ? low + 100 : exclusiveMax - 1);
  if (integer) {
    low = Math.ceil(low);
    high = Math.floor(high);
  }
  if (high < low) return low;
  const step = bound('multipleOf');
  if (step !== null && step > 0) {
    const first = Math.ceil(low / step);
    const last = Math.floor(high / step);
    return last >= first ? (first + (walk.next() % Math.min(last - first + 1, 1_000))) * step : low;
  }
  const span = high - low;
  return integer ? low + (walk.next() % Math.min(span + 1, 1_000_000)) : low + ((walk.next() % 1000) / 1000) * span;
}

function nonNegativeInt(value: unknown): number | null {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : null;
}
