import { envelopeOf, GatewayError } from '../../shared/http/errors.js';
import { newStreamState, shownStreamUsage, type StreamState } from '../billing/settlement.js';
import { clampUsage, type TokenBounds } from '../billing/token-bounds.js';
import { withoutNullFields } from '../proxy/openai-shape.js';
import { shownUsage } from '../proxy/shown-usage.js';
import type { UsualChunk } from '../proxy/usual-chunk.js';
import { readEngineChunks, type StreamWriter } from './stream-writer.js';

export interface ChatStreamOptions {
  /** The model as the client named it; every chunk says this. */
  clientModel: string;
  /** The client asked for the final usage chunk (`stream_options.include_usage: true`). */
  includeUsage: boolean;
  /** The client asked for usage on every chunk (`stream_options.continuous_usage_stats: true`). */
  continuousUsage: boolean;
  /**
   * The call's token bounds: usage is shown held to them, as it is billed (absent: shown as the
   * engine counted).
   */
  bounds?: TokenBounds;
}

/**
 * The stream of an OpenAI-style protocol (chat, and completions' chunks): the engine's chunks, each
 * for the client. The gateway always asks the engine for usage (final and running) so it can bill
 * any stream, even one cut short; the client sees usage only where it asked for it. Cacheable: a
 * replay is the same `data:` lines.
 */
export function chatStreamWriter(options: ChatStreamOptions): StreamWriter {
  const state = newStreamState();
  const clientModelJson = JSON.stringify(options.clientModel);
  return {
    state,
    usual: (usual) => usualChunk(usual, state, options, clientModelJson),
    parsed: (chunk, choices, usage) => {
      let hidden: string | undefined;
      if (choices.length === 0 && usage) {
        if (!options.includeUsage) return null;
      } else if (!options.continuousUsage || !usage) {
        // A count that is not one (a string, a negative) is never shown: it is not what is billed.
        hidden = 'usage';
      }
      if (usage && hidden === undefined) showBilled(chunk, state, options.bounds);
      chunk.model = options.clientModel;
      return JSON.stringify(withoutNullFields(chunk, hidden));
    },
    engineError: () =>
      JSON.stringify(
        envelopeOf(
          new GatewayError(
            'upstream_error',
            'The model server failed while generating this response; the output is incomplete.',
          ),
        ),
      ),
    cacheable: true,
  };
}

/**
 * Rewrites one chat chunk for the client: `chatStreamWriter`'s chunks as the relay reads them.
 *
 * @example
 * const rewriter = createChatChunkRewriter({ clientModel: 'qwen', includeUsage: false, continuousUsage: false });
 * rewriter.rewrite('{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}'); // null (dropped)
 * rewriter.state.usage; // { promptTokens: 3, completionTokens: 2 }
 */
export function createChatChunkRewriter(options: ChatStreamOptions) {
  const writer = chatStreamWriter(options);
  return { rewrite: readEngineChunks(writer), state: writer.state };
}

/**
 * A usual chunk for the client, written from the pieces `readUsualChunk` found,
 * without parsing and writing the whole chunk again. It gives what the general
 * path gives, byte for byte but for string escapes kept as the engine wrote them.
 */
function usualChunk(
  usual: UsualChunk,
  state: StreamState,
  options: ChatStreamOptions,
  clientModelJson: string,
): string {
  const { id, created, key, text } = usual;
  let usageText = '';
  if (usual.usage && state.usage && options.continuousUsage) {
    // The running count as it would be billed now: held to the call's bounds.
    const shown = options.bounds ? clampUsage(state.usage, options.bounds).usage : state.usage;
    const { promptTokens: prompt, completionTokens: completion } = shown;
    usageText = `,"usage":{"prompt_tokens":${prompt},"total_tokens":${prompt + completion},"completion_tokens":${completion}}`;
  }
  return `{"id":${id},"object":"chat.completion.chunk","created":${created},"model":${clientModelJson},"choices":[{"index":0,"delta":{"${key}":${text}},"logprobs":null,"finish_reason":null}]${usageText}}`;
}

/** A chunk's usage as its client is shown it: what the stream would be billed were it to end here. */
function showBilled(chunk: Record<string, unknown>, state: StreamState, bounds: TokenBounds | undefined): void {
  const billed = bounds ? shownStreamUsage(state, bounds) : state.usage;
  const shown = billed && shownUsage(chunk.usage, billed);
  if (shown) chunk.usage = shown;
}
