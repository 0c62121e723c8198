import { newStreamState, shownStreamUsage, streamedUsage } from '../../billing/settlement.js';
import type { TokenBounds } from '../../billing/token-bounds.js';
import { STREAM_CUT_MESSAGE } from '../../proxy/sse.js';
import type { UsualChunk } from '../../proxy/usual-chunk.js';
import { type ChunkWriter, readEngineChunks } from '../stream-writer.js';
import { ownedItemId } from '../../stored-responses/ids.js';
import { callItem, finishOf, responseShell, responsesUsage } from './answer.js';
import { stringOf } from './items.js';
import { closeEvents, type EventWriter, type OpenItem } from './item-events.js';
import type { ToolNames } from './translate.js';

type Json = Record<string, unknown>;

/**
 * The response's members that change while it streams; the others (its echo of the request) are
 * written once.
 */
const CHANGING_MEMBERS: ReadonlySet<string> = new Set(['status', 'error', 'incomplete_details', 'output', 'usage']);

/**
 * What a Responses stream is made from: the request (echoed in the response), its tools' names, the
 * response's id and the client's model.
 */
export interface ResponsesStreamSource {
  body: Json;
  names: ToolNames;
  id: string;
  model: string;
}

/**
 * Turns the engine's chat chunks into the Responses event sequence:
 * `response.created`, `response.in_progress`, then for each output item
 * (reasoning, the message, each tool call) `response.output_item.added`, its
 * parts and deltas and `response.output_item.done`, and at the end
 * `response.completed` (or `response.incomplete`), the whole response with the
 * usage the engine reported. Every event has its `sequence_number`.
 *
 * @example
 * const writer = new ResponsesWriter({ body, names: toolNamesOf(body), id: itemId('resp'), model: 'm' });
 * writer.rewrite('{"choices":[{"index":0,"delta":{"content":"Hi"}}]}');
 */
export class ResponsesWriter implements EventWriter, ChunkWriter {
  readonly state = newStreamState();
  /** One engine chunk as events, or null for none. */
  readonly rewrite = readEngineChunks(this);
  private readonly response: Json;
  private readonly output: Json[] = [];
  private sequence = 0;
  private open: OpenItem | null = null;
  private started = false;
  private finishReason: unknown = null;
  /**
   * The JSON of each member that does not change (`CHANGING_MEMBERS`), written at the first
   * whole-response event.
   */
  private readonly echoJson = new Map<string, string>();

  constructor(
    private readonly source: ResponsesStreamSource,
    /**
     * The call's token bounds: the usage shown is held to them, as it is billed (absent: as the
     * engine counted).
     */
    private readonly bounds?: TokenBounds,
  ) {
    this.response = responseShell(source.body, source.id, source.model, Math.floor(Date.now() / 1000));
  }

  /**
   * One event, its fields already JSON (without braces): the hot deltas are written without a
   * JSON.stringify of a whole object.
   */
  event(type: string, fields: string): string {
    return `event: ${type}\ndata: {"type":"${type}","sequence_number":${this.sequence++},${fields}}\n\n`;
  }

  at(item: OpenItem): string {
    return `"item_id":"${item.item.id as string}","output_index":${item.index}`;
  }

  whole(type: string, data: Json): string {
    return this.event(type, JSON.stringify(data).slice(1, -1));
  }

  /**
   * An event carrying the whole response. Its echo of the request (Codex's 17 KB of instructions,
   * its tools) is written once for the stream's three whole-response events, not again at each
   * (`responseJson`).
   */
  private responseEvent(type: string, response: Json): string {
    return this.event(type, `"response":${this.responseJson(response)}`);
  }

  /** The response as `JSON.stringify` writes it, each member that does not change written once. */
  private responseJson(response: Json): string {
    let out = '';
    for (const key of Object.keys(response)) {
      const value = response[key];
      if (value === undefined) continue;
      const changes = CHANGING_MEMBERS.has(key);
      let json = changes ? undefined : this.echoJson.get(key);
      if (json === undefined) {
        json = JSON.stringify(value);
        if (!changes) this.echoJson.set(key, json);
      }
      out += `${out ? ',' : ''}${JSON.stringify(key)}:${json}`;
    }
    return `{${out}}`;
  }

  /**
   * A usual chunk's events, from its pieces as the engine wrote them: the chunk is not parsed
   * (`readUsualChunk`).
   */
  usual({ key, text }: UsualChunk): string | null {
    let out = this.start();
    if (text !== '""')
      out += this.textDelta(key === 'content' ? 'message' : 'reasoning', text, JSON.parse(text) as string);
    return out || null;
  }

  /** Any other chunk's events: each choice's delta. */
  parsed(_chunk: Json, choices: Json[]): string | null {
    let out = this.start();
    for (const choice of choices) {
      out += this.deltaEvents((choice.delta ?? {}) as Json);
      if (choice.finish_reason) this.finishReason = choice.finish_reason;
    }
    return out || null;
  }

  /** The engine's error: nothing now, `failure` ends the stream. */
  engineError(): null {
    return null;
  }

  /** Closes the open item: its last events. After it, `finalResponse` is whole. */
  closeItems(): string {
    return this.start() + this.close();
  }

  /** The whole response as it ends (`completed` or `incomplete`), with the usage it is billed for. */
  finalResponse(): Json {
    const counted = this.bounds ? shownStreamUsage(this.state, this.bounds) : streamedUsage(this.state);
    return Object.assign(this.response, finishOf(this.finishReason), {
      output: this.output,
      usage: responsesUsage(counted),
    });
  }

  /** The last event: `response.completed` (or `.incomplete`) with the whole response. */
  completed(): string {
    const final = this.finalResponse();
    return this.responseEvent(final.status === 'incomplete' ? 'response.incomplete' : 'response.completed', final);
  }

  /** The stream's last events: the open item closed, then the whole response. */
  finish(): string {
    return this.closeItems() + this.completed();
  }

  /**
   * The event that ends a stream the engine broke off: `response.failed`, with what was written so
   * far.
   */
  failure(): string {
    const out = this.start() + this.close();
    const error = { code: 'server_error', message: STREAM_CUT_MESSAGE };
    return (
      out +
      this.responseEvent(
        'response.failed',
        Object.assign(this.response, { status: 'failed', output: this.output, error }),
      )
    );
  }

  private start(): string {
    if (this.started) return '';
    this.started = true;
    // The same response in both: written once.
    const response = this.responseJson(this.response);
    return (
      this.event('response.created', `"response":${response}`) +
      this.event('response.in_progress', `"response":${response}`)
    );
  }

  private close(): string {
    const item = this.open;
    if (item === null) return '';
    this.open = null;
    // Written before it is closed: the closing events, and the final response, name the finished
    // item.
    const out = closeEvents(item, this, this.source.names);
    this.output.push(item.item);
    return out;
  }

  private openItem(key: string, item: Json): string {
    let out = this.close();
    const open: OpenItem = { key, index: this.output.length, item, text: '' };
    this.open = open;
    out += this.whole('response.output_item.added', { output_index: open.index, item });
    if (item.type === 'message')
      out += this.event(
        'response.content_part.added',
        `${this.at(open)},"content_index":0,"part":{"type":"output_text","text":"","annotations":[],"logprobs":[]}`,
      );
    if (item.type === 'reasoning')
      out += this.event(
        'response.reasoning_summary_part.added',
        `${this.at(open)},"summary_index":0,"part":{"type":"summary_text","text":""}`,
      );
    return out;
  }

  /** The item of `key`, opened (closing the one before) unless it is the open one. */
  private item(key: string, make: () => Json): { out: string; open: OpenItem } {
    const out = this.open?.key === key ? '' : this.openItem(key, make());
    return { out, open: this.open! };
  }

  private deltaEvents(d: Json): string {
    let out = '';
    const reasoning = d.reasoning_content ?? d.reasoning;
    if (typeof reasoning === 'string' && reasoning)
      out += this.textDelta('reasoning', JSON.stringify(reasoning), reasoning);
    if (typeof d.content === 'string' && d.content)
      out += this.textDelta('message', JSON.stringify(d.content), d.content);
    for (const call of (d.tool_calls as Json[] | undefined) ?? []) out += this.callEvents(call);
    return out;
  }

  /**
   * A piece of the message's text, or of the reasoning's: `json` is it as a JSON string, written
   * into the delta as it is.
   */
  private textDelta(kind: 'message' | 'reasoning', json: string, text: string): string {
    if (kind === 'reasoning') {
      const { out, open } = this.item('reasoning', () => ({
        id: ownedItemId('rs', this.source.id),
        type: 'reasoning',
        summary: [],
      }));
      open.text += text;
      return (
        out + this.event('response.reasoning_summary_text.delta', `${this.at(open)},"summary_index":0,"delta":${json}`)
      );
    }
    const { out, open } = this.item('message', () => ({
      id: ownedItemId('msg', this.source.id),
      type: 'message',
      role: 'assistant',
      status: 'in_progress',
      content: [],
    }));
    open.text += text;
    return (
      out + this.event('response.output_text.delta', `${this.at(open)},"content_index":0,"delta":${json},"logprobs":[]`)
    );
  }

  private callEvents(call: Json): string {
    const fn = (call.function ?? {}) as Json;
    const key = `tool:${typeof call.index === 'number' ? call.index : 0}`;
    const { out, open } = this.item(key, () =>
      callItem(call.id, stringOf(fn.name), '', this.source.names, 'in_progress', this.source.id),
    );
    const args = stringOf(fn.arguments);
    if (!args) return out;
    open.text += args;
    // A custom tool's input is the function's JSON arguments: it is given whole, unwrapped, when
    // the item is done.
    if (open.item.type !== 'function_call') return out;
    return (
      out + this.event('response.function_call_arguments.delta', `${this.at(open)},"delta":${JSON.stringify(args)}`)
    );
  }
}
