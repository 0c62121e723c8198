import { LRUCache } from 'lru-cache';
import { ChatJsonMemo } from '../proxy/chat-json.js';

type Json = Record<string, unknown>;

/** Organizations whose translations are kept, the one least recently seen forgotten first. */
const ORGANIZATIONS_KEPT = 64;
/**
 * Conversations kept for each organization (its agents' sessions), the one least recently seen
 * forgotten first.
 */
const CONVERSATIONS_KEPT_EACH = 8;
/** A translation whose tools and messages are written in more bytes than this is not kept. */
const MAX_KEPT_BYTES_EACH = 1024 * 1024;
/**
 * The bytes kept for all organizations together: the organization least recently seen is forgotten
 * first past it.
 */
const MAX_KEPT_BYTES = 16 * 1024 * 1024;

/**
 * A translation kept: its tools and messages as the engine was sent them, with their JSON as text
 * and bytes.
 */
export interface KeptTranslation {
  tools: unknown[] | null;
  toolsJson: string;
  toolsBytes: Buffer | null;
  messages: unknown[];
  messageBytes: Buffer[];
  bytes: number;
}

/**
 * An agent sends its whole conversation and the same tools every turn (Claude Code: 17 tools, 61
 * KB, and every earlier turn; Codex, with `store: false`, its whole history). A Messages or
 * Responses translation writes the chat body the engine is sent as JSON again each time
 * (`sentBody`), though all but its last turn or two are what the turn before sent. This keeps, per
 * organization, the chat form of its last few conversations' translations with the JSON written for
 * them, and gives a new translation whose tools, or whose leading messages, are the same member for
 * member and in the same order the bytes already written: what `JSON.stringify` would write again,
 * and `Buffer.from` encode again.
 *
 * Compared on the chat side, after the translation: one cache serves both protocols, and what is
 * compared is exactly what is written. Kept per organization, so whether one organization's
 * conversation or tools equal another's never shows in its requests' timing. Bounded: at most
 * `ORGANIZATIONS_KEPT` organizations, `CONVERSATIONS_KEPT_EACH` conversations each, each
 * translation at most `MAX_KEPT_BYTES_EACH` bytes, and all of them at most `MAX_KEPT_BYTES`.
 *
 * @example
 * const chat = chatBodyOf(body);
 * const earlier = translations.reuse(orgId, chat); // kept JSON given to what matches, before anything is written
 * const sent = sentBody(chat, streams);
 * translations.keep(orgId, chat, earlier); // kept in place of the turn it continues
 */
export class TranslationJsonCache {
  /**
   * The JSON written for each request's tools and messages, which `reuse` gives the kept bytes to.
   */
  readonly json = new ChatJsonMemo();
  private readonly kept = new LRUCache<string, KeptTranslation[]>({
    max: ORGANIZATIONS_KEPT,
    maxSize: MAX_KEPT_BYTES,
    sizeCalculation: (conversations) =>
      Math.max(
        1,
        conversations.reduce((bytes, kept) => bytes + kept.bytes, 0),
      ),
  });

  /**
   * Gives `chat`'s tools and its leading messages the JSON kept for them, from the organization's
   * kept translation whose messages match it longest. Returns that translation when `chat`
   * continues it (every message of it but perhaps its last is `chat`'s too: an earlier turn of the
   * same conversation), which `keep` then replaces; a conversation that shares only a beginning
   * (the system prompt, a first message) is another session's.
   */
  reuse(orgId: string, chat: Json): KeptTranslation | undefined {
    const conversations = this.kept.get(orgId);
    if (!conversations) return undefined;
    const messages = Array.isArray(chat.messages) ? (chat.messages as unknown[]) : [];
    let best: KeptTranslation | undefined;
    let bestShared = 0;
    for (const kept of conversations) {
      const shared = sharedMessages(kept.messages, messages);
      if (shared > bestShared) [best, bestShared] = [kept, shared];
    }
    for (let i = 0; i < bestShared; i++) this.json.primeMessage(messages[i] as object, best!.messageBytes[i]!);
    const tools = Array.isArray(chat.tools) ? chat.tools : null;
    const sameTools = tools && conversations.find((kept) => kept.tools && sameJson(kept.tools, tools));
    if (tools && sameTools?.toolsBytes) this.json.primeTools(tools, sameTools.toolsJson, sameTools.toolsBytes);
    return best && bestShared >= best.messages.length - 1 ? best : undefined;
  }

  /**
   * Keeps `chat`, with the bytes `sentBody` wrote for it, in place of `earlier` (what `reuse`
   * returned for it) and of every other kept turn it continues.
   */
  keep(orgId: string, chat: Json, earlier: KeptTranslation | undefined): void {
    const tools = Array.isArray(chat.tools) ? chat.tools : null;
    const toolsJson = tools ? this.json.toolsJsonOf(tools) : '';
    const toolsBytes = tools ? this.json.toolsBytesOf(tools) : null;
    const messages = Array.isArray(chat.messages) ? (chat.messages as unknown[]) : [];
    let bytes = toolsBytes?.length ?? 0;
    const messageBytes: Buffer[] = [];
    for (const message of messages) {
      if (!isObject(message)) break;
      const written = this.json.messageBytesOf(message);
      bytes += written.length;
      messageBytes.push(written);
    }
    // Also the turns this one continues that were kept after `reuse` ran: an agent's requests in
    // flight together (or two replicas' answers) would otherwise each keep a copy of the same
    // conversation, and every later turn would be compared with each copy.
    const others = (this.kept.get(orgId) ?? []).filter(
      (kept) => kept !== earlier && !continuesBytes(kept.messageBytes, messageBytes),
    );
    if (bytes <= MAX_KEPT_BYTES_EACH) {
      const kept = {
        tools,
        toolsJson,
        toolsBytes,
        messages: messages.slice(0, messageBytes.length),
        messageBytes,
        bytes,
      };
      others.unshift(kept);
    }
    // Set again even when unchanged in length: the organization's size is counted when it is set.
    if (others.length > 0) this.kept.set(orgId, others.slice(0, CONVERSATIONS_KEPT_EACH));
    else this.kept.delete(orgId);
  }
}

/**
 * True when `later` continues `kept` (every message of it but perhaps its last written alike, as
 * `reuse` tells a turn it continues), told from the bytes written: the messages `reuse` matched
 * share the very buffers, so most are told alike by identity alone.
 */
function continuesBytes(kept: Buffer[], later: Buffer[]): boolean {
  // At least one message shared, as `reuse` asks: two conversations that share nothing are two
  // sessions.
  const shared = Math.max(1, kept.length - 1);
  if (kept.length === 0 || later.length < shared) return false;
  for (let i = 0; i < shared; i++) if (kept[i] !== later[i] && !kept[i]!.equals(later[i]!)) return false;
  return true;
}

/** How many leading messages of two conversations write alike: a conversation grows at its end. */
function sharedMessages(kept: unknown[], messages: unknown[]): number {
  const most = Math.min(kept.length, messages.length);
  let shared = 0;
  while (shared < most && isObject(messages[shared]) && sameJson(kept[shared], messages[shared])) shared++;
  return shared;
}

/**
 * True when two parsed JSON values would be written alike by `JSON.stringify`: the same members in
 * the same order (an object's keys are written in `Object.keys` order), the same strings, numbers
 * and literals. The bodies it compares were held to the gateway's depth bound when they were read.
 * `util.isDeepStrictEqual` would not do: it ignores member order, which the JSON written does not.
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
    if (!sameJson((a as Json)[key], (b as Json)[key])) return false;
  }
  return true;
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
