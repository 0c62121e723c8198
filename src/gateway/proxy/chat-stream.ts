import { envelopeOf, GatewayError } from '../../shared/http/errors.js';
import { withoutNullFields } from './openai-shape.js';
import { newStreamState, shownStreamUsage, type StreamState } from '../billing/settlement.js';
import { clampUsage, type TokenBounds } from '../billing/token-bounds.js';
import { shownUsage } from './shown-usage.js';
import { usageFrom } from './token-counts.js';
import { readUsualChunk, type UsualChunk } from './usual-chunk.js';

export interface ChatStreamOptions {
  /** The model as the client named it; every chunk says this. */
  clientModel: string;
  /** The client asked for the final usage chunk (`stream_options.include_usage: true`). */
  includeUsage: boolean;
  /** The client asked for usage on every chunk (`stream_options.continuous_usage_stats: true`). */
  continuousUsage: boolean;
  /** Whether a choice of a chunk carries generated tokens; default: chat's delta (completions' chunks carry `text`). */
  carriesTokens?: (choice: Record<string, unknown>) => boolean;
  /** The call's token bounds: usage is shown held to them, as it is billed (absent: shown as the engine counted). */
  bounds?: TokenBounds;
}

/**
 * Rewrites one chat chunk for the client. The gateway always asks the engine
 * for usage (final and running) so it can bill any stream, even one cut short;
 * the client sees usage only where it asked for it.
 *
 * @example
 * const rewriter = createChatChunkRewriter({ clientModel: 'qwen', includeUsage: false, continuousUsage: false });
 * rewriter.rewrite('{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}'); // null (dropped)
 * rewriter.state.usage; // { promptTokens: 3, completionTokens: 2 }
 */
export function createChatChunkRewriter(options: ChatStreamOptions) {
  const state = newStreamState();
  const clientModelJson = JSON.stringify(options.clientModel);
  const tokensIn = options.carriesTokens ?? carriesTokens;

  const rewrite = (data: string): string | null => {
    const usual = readUsualChunk(data);
    if (usual) return rewriteUsual(usual, state, options, clientModelJson);
    let chunk: Record<string, unknown>;
    try {
      chunk = JSON.parse(data) as Record<string, unknown>;
    } catch {
      return null; // not JSON: nothing a client could use
    }
    if (chunk.error !== undefined) {
      state.failed = true;
      return JSON.stringify(
        envelopeOf(
          new GatewayError(
            'upstream_error',
            'The model server failed while generating this response; the output is incomplete.',
          ),
        ),
      );
    }
    const choices = Array.isArray(chunk.choices) ? (chunk.choices as Array<Record<string, unknown>>) : [];
    const usage = usageFrom(chunk.usage);
    if (usage) state.usage = usage;
    let hidden: string | undefined;
    if (choices.length === 0 && usage) {
      state.usageFinal = true;
      if (!options.includeUsage) return null;
    } else {
      if (choices.some(tokensIn)) {
        state.tokenChunks += 1;
        state.firstTokenAt ??= performance.now();
      }
      // A count that is not one (a string, a negative) is never shown: it is not what is billed.
      if (!options.continuousUsage || !usage) hidden = 'usage';
    }
    if (usage && hidden === undefined) showBilled(chunk, state, options.bounds);
    chunk.model = options.clientModel;
    return JSON.stringify(withoutNullFields(chunk, hidden));
  };

  return { rewrite, state };
}

/**
 * A usual chunk for the client, written from the pieces `readUsualChunk` found,
 * without parsing and writing the whole chunk again. It gives what the general
 * path gives, byte for byte but for string escapes kept as the engine wrote them.
 */
function rewriteUsual(
  usual: UsualChunk,
  state: StreamState,
  options: ChatStreamOptions,
  clientModelJson: string,
): string {
  const { id, created, key, text, usage } = usual;
  let usageText = '';
  if (usage) {
    state.usage = { promptTokens: Number(usage.prompt), completionTokens: Number(usage.completion) };
    if (options.continuousUsage) {
      // The running count as it would be billed now: held to the call's bounds.
      const shown = options.bounds ? clampUsage(state.usage, options.bounds).usage : state.usage;
      const { promptTokens: prompt, completionTokens: completion } = shown;
      usageText = `,"usage":{"prompt_tokens":${prompt},"total_tokens":${prompt + completion},"completion_tokens":${completion}}`;
    }
  }
  if (text !== '""') {
    state.tokenChunks += 1;
    state.firstTokenAt ??= performance.now();
  }
  return `{"id":${id},"object":"chat.completion.chunk","created":${created},"model":${clientModelJson},"choices":[{"index":0,"delta":{"${key}":${text}},"logprobs":null,"finish_reason":null}]${usageText}}`;
}

/** A chunk's usage as its client is shown it: what the stream would be billed were it to end here. */
function showBilled(chunk: Record<string, unknown>, state: StreamState, bounds: TokenBounds | undefined): void {
  const billed = bounds ? shownStreamUsage(state, bounds) : state.usage;
  const shown = billed && shownUsage(chunk.usage, billed);
  if (shown) chunk.usage = shown;
}

function carriesTokens(choice: Record<string, unknown>): boolean {
  const delta = choice.delta as Record<string, unknown> | undefined;
  if (!delta) return false;
  return Boolean(delta.content || delta.reasoning || delta.reasoning_content || delta.tool_calls);
}
