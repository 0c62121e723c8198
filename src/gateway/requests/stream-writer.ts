import type { StreamState } from '../billing/settlement.js';
import type { TokenUsage } from '../billing/token-usage.js';
import type { RelayOutcome } from '../proxy/sse.js';
import { usageFrom } from '../proxy/token-counts.js';
import { readUsualChunk, type UsualChunk } from '../proxy/usual-chunk.js';

type Json = Record<string, unknown>;

/**
 * How one protocol writes the engine's chat chunks for its client (chat's `chat-stream.ts`,
 * `messages/stream.ts`, `responses/stream.ts`). It only writes: `readEngineChunks` reads each
 * chunk, and keeps in `state` the engine's usage, the chunks that carried tokens (the one rule,
 * `carriesTokens`) and the first token's time, so every protocol's stream is billed alike.
 */
export interface ChunkWriter {
  /**
   * What the stream learnt of the engine's: `readEngineChunks` writes it, the writer reads it,
   * billing reads it last.
   */
  readonly state: StreamState;
  /**
   * vLLM's usual chunk (`readUsualChunk`), written from its pieces without a parse; its usage is in
   * `state` already. Undefined declines it: the chunk is then parsed and given to `parsed`.
   */
  usual: (chunk: UsualChunk) => string | null | undefined;
  /**
   * Any other chunk, parsed: its `choices` (always an array) and its usage, valid or null (in
   * `state` already, with the chunk's tokens counted). Null drops it.
   */
  parsed: (chunk: Json, choices: Json[], usage: TokenUsage | null) => string | null;
  /**
   * The engine's error event inside the stream (`state.failed` is set): what the client is sent
   * now, or null.
   */
  engineError: () => string | null;
}

/**
 * One protocol's stream as `relayBilledStream` (`billed-stream.ts`) relays it: its chunks, and its
 * end.
 */
export interface StreamWriter extends ChunkWriter {
  /**
   * For a protocol whose events are not the engine's `data:` lines: its last events, and its error
   * event.
   */
  events?: { finish(): string; failure(): string };
  /**
   * Runs when the stream ends, before it is settled; returns events to keep beside the relayed ones
   * (Responses).
   */
  ended?(outcome: RelayOutcome): Promise<string | null>;
  /**
   * The answer so far, its open item closed (Responses: a background response cancelled or cut
   * off).
   */
  snapshot?(): Json;
  /**
   * Whether its events may be cached: a replay is `data:` lines, which only the OpenAI-style
   * streams' clients read.
   */
  cacheable: boolean;
}

/**
 * The billed-chunk rule, one for every protocol: a choice carries tokens when its delta has text,
 * reasoning or a tool call (a completions choice: text). A stream cut before the engine's count is
 * billed from these chunks (`streamedUsage`), so they are the engine's, whatever the protocol
 * writes of them.
 */
export function carriesTokens(choice: Json): boolean {
  const delta = choice.delta as Json | undefined;
  if (delta) return Boolean(delta.content || delta.reasoning || delta.reasoning_content || delta.tool_calls);
  return typeof choice.text === 'string' && choice.text !== '';
}

/**
 * One engine chunk's `data` as the client's, for any protocol: the usual chunk's fast path, else
 * the parse, the engine's error, the usage and the billed-chunk count with the first token's time,
 * then the writer's own events.
 *
 * @example
 * const rewrite = readEngineChunks(createChatWriter(options));
 * rewrite('{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}'); // null (usage not asked for)
 */
export function readEngineChunks(writer: ChunkWriter): (data: string) => string | null {
  const state = writer.state;
  const tokensSent = () => {
    state.tokenChunks += 1;
    state.firstTokenAt ??= performance.now();
  };
  return (data) => {
    const usual = readUsualChunk(data);
    if (usual) {
      // Kept before the writer reads it (chat shows it); a declined chunk's parse keeps the same
      // count.
      const { usage } = usual;
      if (usage) state.usage = { promptTokens: Number(usage.prompt), completionTokens: Number(usage.completion) };
      const out = writer.usual(usual);
      if (out !== undefined) {
        if (usual.text !== '""') tokensSent();
        return out;
      }
    }
    let chunk: Json;
    try {
      chunk = JSON.parse(data) as Json;
    } catch {
      return null; // not JSON: nothing a client could use
    }
    if (chunk.error !== undefined) {
      state.failed = true;
      return writer.engineError();
    }
    const choices = Array.isArray(chunk.choices) ? (chunk.choices as Json[]) : [];
    const usage = usageFrom(chunk.usage);
    if (usage) state.usage = usage;
    if (choices.length === 0 && usage) state.usageFinal = true;
    else if (choices.some(carriesTokens)) tokensSent();
    return writer.parsed(chunk, choices, usage);
  };
}
