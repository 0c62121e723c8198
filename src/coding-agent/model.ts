import OpenAI, { APIError } from 'openai';
import type {
  ChatCompletionChunk,
  ChatCompletionFunctionTool,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions';
import type { TokenUsage } from '../gateway/billing/token-usage.js';
import { usageFrom } from '../gateway/proxy/token-counts.js';

/** What one model call answered, streamed to the end (or to a cancel). */
export interface ModelAnswer {
  text: string;
  reasoning: string;
  toolCalls: { id: string; name: string; arguments: string }[];
  finishReason: string | null;
  usage: TokenUsage | null;
  /** The gateway's request id: the id of the usage record it billed. */
  requestId: string | null;
}

/** Why a task stopped that the person must act on: an empty wallet, a bad key, a limit. */
export class AgentStop extends Error {
  override name = 'AgentStop';
  constructor(
    message: string,
    readonly reason: 'wallet' | 'key' | 'limit' | 'api' | 'cancelled' | 'unreachable',
  ) {
    super(message);
  }
}

export interface StreamHooks {
  /**
   * The gateway accepted the call: its request id, the id of the usage record it bills (a cancel
   * included).
   */
  started(requestId: string): void;
  text(delta: string): void;
  reasoning(delta: string): void;
  /** The gateway said wait (429 or 503 with Retry-After). */
  waiting(seconds: number, message: string): void;
}

/** A 429/503's wait at most this long is waited out; a longer one (a monthly quota) stops the task. */
const LONGEST_WAIT_SECONDS = 300;

/**
 * One streamed chat completion with tools and `stream_options.include_usage`.
 * 429 and 503 are waited out for the `Retry-After` the gateway sends; 402,
 * 401 and the rest become `AgentStop` with a sentence for the person.
 *
 * @example
 * const answer = await streamAnswer(openai, { model, messages, tools }, hooks, controller.signal);
 */
export async function streamAnswer(
  openai: OpenAI,
  request: {
    model: string;
    messages: ChatCompletionMessageParam[];
    tools?: ChatCompletionFunctionTool[];
    max_tokens?: number;
  },
  hooks: StreamHooks,
  signal: AbortSignal,
): Promise<ModelAnswer> {
  for (;;) {
    try {
      const { data: stream, response } = await openai.chat.completions
        .create({ ...request, stream: true, stream_options: { include_usage: true } }, { signal })
        .withResponse();
      const requestId = response.headers.get('x-request-id');
      if (requestId) hooks.started(requestId);
      const answer = await collect(stream, hooks, requestId);
      // The SDK's stream ends quietly when aborted: what came is a cancelled answer, not a finished
      // one.
      if (signal.aborted) throw new AgentStop('cancelled', 'cancelled');
      return answer;
    } catch (error) {
      const seconds = await waitFor(error, hooks, signal);
      if (seconds === null) throw stopOf(error);
    }
  }
}

async function collect(
  stream: AsyncIterable<ChatCompletionChunk>,
  hooks: StreamHooks,
  requestId: string | null,
): Promise<ModelAnswer> {
  const answer: ModelAnswer = { text: '', reasoning: '', toolCalls: [], finishReason: null, usage: null, requestId };
  for await (const chunk of stream) {
    // Read as the gateway reads an engine's usage when it bills (its cached and reasoning parts
    // too).
    if (chunk.usage) answer.usage = usageFrom(chunk.usage) ?? answer.usage;
    const choice = chunk.choices[0];
    if (!choice) continue;
    const delta = choice.delta as ChatCompletionChunk.Choice.Delta & { reasoning?: string; reasoning_content?: string };
    const thought = delta.reasoning ?? delta.reasoning_content;
    if (thought) {
      answer.reasoning += thought;
      hooks.reasoning(thought);
    }
    if (delta.content) {
      answer.text += delta.content;
      hooks.text(delta.content);
    }
    for (const call of delta.tool_calls ?? []) {
      const slot = (answer.toolCalls[call.index] ??= { id: '', name: '', arguments: '' });
      if (call.id) slot.id = call.id;
      if (call.function?.name) slot.name += call.function.name;
      if (call.function?.arguments) slot.arguments += call.function.arguments;
    }
    if (choice.finish_reason) answer.finishReason = choice.finish_reason;
  }
  answer.toolCalls = answer.toolCalls.filter(Boolean).map((call, i) => ({ ...call, id: call.id || `call_${i}` }));
  return answer;
}

/** Waits out a 429 or 503 with a Retry-After and answers its seconds; null for any other failure. */
async function waitFor(error: unknown, hooks: StreamHooks, signal: AbortSignal): Promise<number | null> {
  if (!(error instanceof APIError)) return null;
  const answer = error as GatewayAnswer;
  if (answer.status !== 429 && answer.status !== 503) return null;
  const seconds = Number(answer.headers?.get('retry-after'));
  if (!Number.isFinite(seconds) || seconds < 0 || seconds > LONGEST_WAIT_SECONDS) return null;
  hooks.waiting(seconds, messageOf(answer));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, seconds * 1000);
    signal.addEventListener('abort', () => (clearTimeout(timer), reject(new AgentStop('cancelled', 'cancelled'))), {
      once: true,
    });
  });
  return seconds;
}

function stopOf(error: unknown): AgentStop {
  if (error instanceof AgentStop) return error;
  if (error instanceof OpenAI.APIUserAbortError) return new AgentStop('cancelled', 'cancelled');
  if (error instanceof OpenAI.APIConnectionError)
    return new AgentStop(
      `cannot reach the gateway (${error.message}). Is it running? Set --url or TOLLGATE_URL.`,
      'unreachable',
    );
  if (!(error instanceof APIError)) return new AgentStop(error instanceof Error ? error.message : String(error), 'api');
  const said = messageOf(error as GatewayAnswer);
  if (error.status === 402)
    return new AgentStop(
      `the wallet is empty: ${said} Top up in the portal (Wallet), or ask your organization's admin.`,
      'wallet',
    );
  if (error.status === 401)
    return new AgentStop(
      `the API key was refused: it is wrong, expired or revoked. Check --api-key, TOLLGATE_API_KEY or config.json (${said})`,
      'key',
    );
  if (error.status === 429 || error.status === 503) return new AgentStop(`the gateway refused: ${said}`, 'limit');
  return new AgentStop(`the gateway answered ${error.status ?? 'an error'}: ${said}`, 'api');
}

type GatewayAnswer = APIError<number | undefined, Headers | undefined, { message?: unknown } | undefined>;

function messageOf(error: GatewayAnswer): string {
  const body = error.error;
  return typeof body?.message === 'string' ? body.message : error.message;
}
