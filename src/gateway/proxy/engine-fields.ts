import type { EngineTenancy, UpstreamTarget } from '../engines/types.js';
import { WrittenJson } from './client-body.js';
import { topLevelMembers } from './json-members.js';

type Json = Record<string, unknown>;

/**
 * The request fields the gateway alone sets on what an engine is sent: a client's own are dropped,
 * whatever it wrote, so no client picks another organization's cache salt, turns llama.cpp's prompt
 * cache back on, or jumps an engine's priority queue.
 */
export const ENGINE_OWNED_FIELDS = ['cache_salt', 'priority', 'cache_prompt'] as const;

const PER_ORGANIZATION_FCFS: EngineTenancy = { cacheSharing: 'per-organization', schedulingPolicy: 'fcfs' };

const OPEN_BRACE = 0x7b;

/** What one request is, for the fields its engine is sent. */
export interface EngineFieldsCall {
  /**
   * Its organization's cache salt (`engines/cache-salts.ts`), asked for only when the engine takes
   * one.
   */
  salt: () => string;
  /** Its band's rank, 0 (interactive) to 3 (batch): vLLM's `priority`, lower served first. */
  priority: number;
}

/**
 * The JSON members (`"key":value,…`, no braces) a request's engine is sent beside its body, by what
 * the engine is (docs/engines.md, "Tenants in a shared engine"): a vLLM engine (and the simulator),
 * its organization's `cache_salt` unless the engine shares its cache, and the band as `priority`
 * when it schedules by priority; a llama.cpp server, which cannot salt, `cache_prompt: false`
 * unless it shares its cache (no prompt reused across requests); another server, nothing. '' when
 * nothing is sent.
 *
 * @example
 * engineMembersFor(target, { salt: () => salts.of(orgId), priority: 3 }); // '"cache_salt":"f3Q…","priority":3'
 */
export function engineMembersFor(target: UpstreamTarget, call: EngineFieldsCall): string {
  const tenancy = target.tenancy ?? PER_ORGANIZATION_FCFS;
  const kind = target.engineKind ?? 'vllm';
  const apart = tenancy.cacheSharing === 'per-organization';
  if (kind === 'llamacpp') return apart ? '"cache_prompt":false' : '';
  if (kind !== 'vllm') return '';
  // The salt is base64url: written as it is, no escaping needed.
  const salt = apart ? `"cache_salt":"${call.salt()}"` : '';
  if (tenancy.schedulingPolicy !== 'priority') return salt;
  return `${salt}${salt ? ',' : ''}"priority":${call.priority}`;
}

/**
 * The body an engine is sent, with `members` (`engineMembersFor`) set and the client's own
 * engine-owned fields (`ENGINE_OWNED_FIELDS`) dropped. For bytes (the client's own, or a
 * translation written once), the members go in front of the rest, in a part of their own: nothing
 * is copied or parsed again unless the client's body held one of those fields (`clientBody`, the
 * body as parsed, says), which only then are its members read to drop them. A JSON object
 * (embeddings) is copied with the fields set.
 *
 * @example
 * withEngineFields(clientBodyForEngine(raw, body, 'served'), '"cache_salt":"f3Q…"', body); // {"cache_salt":"f3Q…","model":"served",…}
 */
export function withEngineFields(
  body: Json | string | WrittenJson,
  members: string,
  clientBody: Json,
): Json | string | WrittenJson {
  const owned = ENGINE_OWNED_FIELDS.some((field) => Object.hasOwn(clientBody, field));
  if (members === '' && !owned) return body;
  if (body instanceof WrittenJson) return owned ? writtenWithout(body, members) : writtenWith(body, members);
  const object = typeof body === 'string' ? (JSON.parse(body) as Json) : Object.assign({}, body);
  for (const field of ENGINE_OWNED_FIELDS) delete object[field];
  if (members !== '') Object.assign(object, JSON.parse(`{${members}}`) as Json);
  return typeof body === 'string' ? JSON.stringify(object) : object;
}

// The members in front: only whitespace comes before the object's opening brace, and every body
// sent has a member (its model), so a comma follows.
function writtenWith(body: WrittenJson, members: string): WrittenJson {
  const first = body.parts[0]!;
  const rest = first.subarray(first.indexOf(OPEN_BRACE) + 1);
  return new WrittenJson([Buffer.from(`{${members},`), rest, ...body.parts.slice(1)], body.fields);
}

// The body's members again, but for every engine-owned one however written (escaped, repeated),
// after `members`.
function writtenWithout(body: WrittenJson, members: string): WrittenJson {
  const bytes = body.bytes;
  const parts: Buffer[] = [Buffer.from(`{${members}`)];
  let first = members === '';
  for (const member of topLevelMembers(bytes)) {
    if ((ENGINE_OWNED_FIELDS as readonly string[]).includes(member.key)) continue;
    if (!first) parts.push(Buffer.from(','));
    parts.push(bytes.subarray(member.start, member.end));
    first = false;
  }
  parts.push(Buffer.from('}'));
  return new WrittenJson(Buffer.concat(parts), body.fields);
}
