import { LRUCache } from 'lru-cache';
import { primeToolsJson, toolsJsonOf } from '../../proxy/token-counts.js';

/** Organizations whose last tools are kept, the one least recently seen forgotten first. */
const ORGANIZATIONS_KEPT = 64;
/** Tools whose chat JSON is longer than this many characters are not kept (Claude Code's are about 61,000). */
const MAX_KEPT_CHARS = 128 * 1024;

/**
 * Agents send the same tools every turn: Claude Code its 17, 61 KB with their schemas. A Messages request's
 * translation writes their chat form's JSON again each time (`toolsJsonOf`). This keeps, per organization, the
 * client's tools of its last request with that JSON, and gives a request whose tools are the same, member for
 * member and in the same order, the text already written: what `JSON.stringify` would write again, since the
 * translation is a function of the tools alone. Kept per organization, so that whether one organization's tools
 * equal another's never shows in its requests' timing; at most `ORGANIZATIONS_KEPT` of them, each at most
 * `MAX_KEPT_CHARS`.
 *
 * @example
 * const chat = chatBodyOf(body);
 * toolsJson.reuse(orgId, body.tools, chat.tools); // toolsJsonOf(chat.tools) is then the kept text when they match
 */
export class ToolsJsonCache {
  private readonly kept = new LRUCache<string, { tools: unknown[]; json: string }>({ max: ORGANIZATIONS_KEPT });

  reuse(orgId: string, clientTools: unknown, chatTools: unknown): void {
    if (!Array.isArray(clientTools) || !Array.isArray(chatTools) || chatTools.length === 0) return;
    const last = this.kept.get(orgId);
    if (last && sameJson(last.tools, clientTools)) {
      primeToolsJson(chatTools, last.json);
      return;
    }
    const json = toolsJsonOf(chatTools);
    if (json.length <= MAX_KEPT_CHARS) this.kept.set(orgId, { tools: clientTools, json });
    else this.kept.delete(orgId);
  }
}

/**
 * True when two parsed JSON values would be written alike by `JSON.stringify`: the same members in the same order
 * (an object's keys are written in `Object.keys` order), the same strings, numbers and literals. The bodies it
 * compares were held to the gateway's depth bound when they were read.
 */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const keysA = Object.keys(a);
  const keysB = Object.keys(b);
  if (keysA.length !== keysB.length) return false;
  for (let i = 0; i < keysA.length; i++) {
    const key = keysA[i]!;
    if (key !== keysB[i]) return false;
    if (!sameJson((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key])) return false;
  }
  return true;
}
