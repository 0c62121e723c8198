import { newStreamState, shownStreamUsage } from '../../billing/settlement.js';
import { clampUsage, type TokenBounds } from '../../billing/token-bounds.js';
import { STREAM_CUT_MESSAGE } from '../../proxy/sse.js';
import type { UsualChunk } from '../../proxy/usual-chunk.js';
import { type ChunkWriter, readEngineChunks, type StreamWriter } from '../stream-writer.js';
import { messagesUsage, messageId, stopReasonOf } from './answer.js';

type Json = Record<string, unknown>;

const event = (name: string, data: Json): string => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;

/**
 * A Messages stream as `relayBilledStream` relays it: Anthropic's events in place of the engine's
 * `data:` lines, kept but never cached (cached events replay as `data:` lines, which Anthropic's
 * clients do not read).
 */
export function messagesStreamWriter(model: string, bounds: TokenBounds): StreamWriter {
  const { writer, finish } = messagesChunks(model, bounds);
  // Named, not spread: the relay reads these for every chunk (CONTRIBUTING, "Measured on the
  // request path").
  return {
    state: writer.state,
    usual: writer.usual,
    parsed: writer.parsed,
    engineError: writer.engineError,
    events: {
      finish: () => (writer.state.failed ? messagesStreamFailure() : finish()),
      failure: messagesStreamFailure,
    },
    cacheable: false,
  };
}

/**
 * Turns the engine's chat chunks into Anthropic's event sequence: `message_start`, `ping`, then for
 * each content block (thinking, text, each tool call) `content_block_start`, its deltas and
 * `content_block_stop`, and at the end `message_delta` (stop reason and output tokens) and
 * `message_stop`. Usage comes from the engine's own counts, as for chat, held to the call's
 * `bounds` as it is billed (absent: shown as the engine counted).
 *
 * @example
 * const writer = createMessagesWriter('claude-ish');
 * writer.rewrite('{"choices":[{"index":0,"delta":{"content":"Hi"}}],"usage":{"prompt_tokens":5,"completion_tokens":1}}');
 */
export function createMessagesWriter(model: string, bounds?: TokenBounds) {
  const { writer, finish } = messagesChunks(model, bounds);
  return { state: writer.state, rewrite: readEngineChunks(writer), finish };
}

/** A Messages stream's chunk writer, and its last events (`createMessagesWriter`). */
function messagesChunks(model: string, bounds?: TokenBounds): { writer: ChunkWriter; finish: () => string } {
  const state = newStreamState();
  const blocks = contentBlocks();
  let started = false;
  let stopReason = 'end_turn';
  let stopSequence: string | null = null;
  let calledTools = false;

  const start = (): string => {
    if (started) return '';
    started = true;
    const running = state.usage && bounds ? clampUsage(state.usage, bounds).usage : state.usage;
    return messageStart(model, messagesUsage(running).input_tokens);
  };

  const writer: ChunkWriter = {
    state,
    // Nearly every chunk is vLLM's usual one, more text of the block already open: its delta event
    // is written from the engine's own JSON string, not parsed and written again. Any other is
    // declined: it is parsed.
    usual: ({ key, text }) =>
      started && text !== '""' && blocks.open() === BLOCK_OF[key] ? usualDelta(key, text) : undefined,
    parsed: (_chunk, choices) => {
      let out = start();
      for (const choice of choices) out += choiceEvents(choice);
      return out || null;
    },
    // The error event is written at the end (`events.failure`).
    engineError: () => null,
  };

  /**
   * What the general path gives for a usual chunk into the open block, byte for byte but for the
   * text's escapes.
   */
  const usualDelta = (key: UsualChunk['key'], text: string): string => {
    const delta =
      key === 'content' ? `{"type":"text_delta","text":${text}}` : `{"type":"thinking_delta","thinking":${text}}`;
    return `event: content_block_delta\ndata: {"type":"content_block_delta","index":${blocks.index()},"delta":${delta}}\n\n`;
  };

  const choiceEvents = (choice: Json): string => {
    calledTools ||= Array.isArray((choice.delta as Json | undefined)?.tool_calls);
    const out = deltaEvents((choice.delta ?? {}) as Json, blocks);
    if (choice.finish_reason) {
      stopReason = stopReasonOf(choice.finish_reason, choice.stop_reason, calledTools);
      stopSequence = typeof choice.stop_reason === 'string' ? choice.stop_reason : null;
    }
    return out;
  };

  /**
   * The stream's last events: the open block closed, the stop reason and output tokens,
   * `message_stop`.
   */
  const finish = (): string => {
    const out = start() + blocks.close();
    // Anthropic's last usage is the whole message's: the input's counts too, the cached read known
    // only now.
    const billed = bounds ? shownStreamUsage(state, bounds) : state.usage;
    const usage = billed ? messagesUsage(billed) : { output_tokens: state.tokenChunks };
    const end = { stop_reason: stopReason, stop_sequence: stopSequence };
    return (
      out +
      event('message_delta', { type: 'message_delta', delta: end, usage }) +
      event('message_stop', { type: 'message_stop' })
    );
  };

  return { writer, finish };
}

/** The content block each field of a usual chunk's delta goes to (`deltaEvents`). */
const BLOCK_OF: Record<UsualChunk['key'], string> = {
  content: 'text',
  reasoning: 'thinking',
  reasoning_content: 'thinking',
};

/**
 * The stream's first events: the message, empty, with its input tokens (the engine's first running
 * count), and a ping.
 */
function messageStart(model: string, inputTokens: number): string {
  const usage = { input_tokens: inputTokens, output_tokens: 0 };
  const message = {
    id: messageId(),
    type: 'message',
    role: 'assistant',
    model,
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage,
  };
  return event('message_start', { type: 'message_start', message }) + event('ping', { type: 'ping' });
}

interface BlockWriter {
  open(): string | null;
  index(): number;
  block(kind: string, contentBlock: Json): string;
  delta(data: Json): string;
  /** Closes the open block, if any. */
  close(): string;
}

/**
 * The stream's content blocks: one open at a time (thinking, text, or a tool call, whose key is its
 * own), numbered from 0.
 */
function contentBlocks(): BlockWriter {
  let index = -1;
  let open: string | null = null;
  const close = (): string => {
    if (open === null) return '';
    open = null;
    return event('content_block_stop', { type: 'content_block_stop', index });
  };
  return {
    open: () => open,
    index: () => index,
    /** Opens a block of `kind`, closing the one before. */
    block: (kind, contentBlock) => {
      if (open === kind) return '';
      const out = close();
      open = kind;
      index += 1;
      return out + event('content_block_start', { type: 'content_block_start', index, content_block: contentBlock });
    },
    delta: (data) => event('content_block_delta', { type: 'content_block_delta', index, delta: data }),
    close,
  };
}

/**
 * One chat delta's events: reasoning into a thinking block, text into a text block, each tool call
 * into its tool_use block.
 */
function deltaEvents(d: Json, w: BlockWriter): string {
  let out = '';
  const reasoning = d.reasoning_content ?? d.reasoning;
  if (typeof reasoning === 'string' && reasoning)
    out +=
      w.block('thinking', { type: 'thinking', thinking: '', signature: '' }) +
      w.delta({ type: 'thinking_delta', thinking: reasoning });
  if (typeof d.content === 'string' && d.content)
    out += w.block('text', { type: 'text', text: '' }) + w.delta({ type: 'text_delta', text: d.content });
  for (const call of (d.tool_calls as Json[] | undefined) ?? []) {
    const fn = (call.function ?? {}) as Json;
    const key = `tool:${typeof call.index === 'number' ? call.index : 0}`;
    if (w.open() !== key)
      out += w.block(key, {
        type: 'tool_use',
        id: call.id ?? `toolu_${w.index() + 1}`,
        name: fn.name ?? '',
        input: {},
      });
    if (typeof fn.arguments === 'string' && fn.arguments)
      out += w.delta({ type: 'input_json_delta', partial_json: fn.arguments });
  }
  return out;
}

/** The error event that ends a stream the engine broke off, as Anthropic's clients read it. */
export function messagesStreamFailure(): string {
  return event('error', {
    type: 'error',
    error: { type: 'api_error', message: STREAM_CUT_MESSAGE },
  });
}
