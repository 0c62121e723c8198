import { isUtf8 } from 'node:buffer';
import { topLevelMembers } from './json-members.js';

type Json = Record<string, unknown>;

const OPEN_BRACE = 0x7b;

/** What the gateway asks of every stream: the engine's final and running usage (`requests/chat.ts`). */
const USAGE_ASKED = { include_usage: true, continuous_usage_stats: true };
const STREAM_OPTIONS_HEAD = Buffer.from(`{"stream_options":${JSON.stringify(USAGE_ASKED)},`);
const STREAM_HEAD = Buffer.from(`{"stream":true,"stream_options":${JSON.stringify(USAGE_ASKED)},`);

/**
 * A body's JSON already written as bytes (the client's own where the gateway changes nothing, or a
 * translation written once), in one part or several, with the fields read of it here: `n`
 * (`refuseUnbillableChoices`), and the model, messages and tools a prompt count sends. Bytes, not a
 * string: they go to the socket as they are, not encoded again.
 */
export class WrittenJson {
  /**
   * The body's bytes in order, sent to the socket part after part (one `writev`): never joined into
   * a copy.
   */
  readonly parts: readonly Buffer[];
  /** Its size in bytes. */
  readonly length: number;

  constructor(
    parts: Buffer | readonly Buffer[],
    readonly fields: { model?: unknown; messages?: unknown; tools?: unknown; n?: unknown },
  ) {
    this.parts = Buffer.isBuffer(parts) ? [parts] : parts;
    let length = 0;
    for (const part of this.parts) length += part.length;
    this.length = length;
  }

  /**
   * The whole body as one buffer: a copy when it is in parts, for a reader that needs it whole
   * (never the socket).
   */
  get bytes(): Buffer {
    return this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.length);
  }
}

/**
 * A chat or completions body for the engine, from the client's bytes, always asking for a stream
 * with final and running usage: a stream is relayed, and a JSON answer is assembled from it
 * (`requests/json-answer.ts`), so a call cut at any point is billed the engine's running count. The
 * same bytes when they already name the replica's served model and ask for that stream; `stream`
 * and its usage options written in front when the client wrote neither (or its own `stream: true`),
 * the usual case; otherwise its members as written, but for `model`, `stream` and
 * `stream_options`, which are written anew in front. Nothing is parsed or written again: the body
 * costs a copy at most, however large the prompt (measured: CONTRIBUTING, "Measured on the request
 * path").
 *
 * The engine reads these bytes as `JSON.parse` read them for the gateway: a key written twice is
 * read last-wins by every engine it sends to (vLLM and SGLang's Python `json`, llama.cpp's
 * nlohmann::json, Ollama's Go), as by the gateway's bounds, and the members changed here are
 * dropped however often and however escaped they are written.
 *
 * @example
 * clientBodyForEngine(raw, JSON.parse(raw.toString()), 'served-name').bytes; // {"model":"served-name","stream":true,…the rest as sent}
 */
export function clientBodyForEngine(client: Buffer, body: Json, servedModelName: string, streamed = true): WrittenJson {
  // Bytes that are not UTF-8 were read with U+FFFD in their place: the engine is sent what the
  // gateway read.
  const raw = isUtf8(client) ? client : Buffer.from(JSON.stringify(body));
  const fields = { model: servedModelName, messages: body.messages, tools: body.tools, n: body.n };
  const named = body.model === servedModelName;
  // A JSON call that cannot outgrow a checkpoint is asked for JSON (`requests/engine-stream.ts`).
  if (!streamed) return named ? new WrittenJson(raw, fields) : withMembers(raw, servedModelName, '', NAMED, fields);
  const streams = body.stream === true;
  const asked = (body.stream_options ?? {}) as Json;
  const usageAsked = asked.include_usage === true && asked.continuous_usage_stats === true;
  if (named && streams && usageAsked) return new WrittenJson(raw, fields);
  if (named && !Object.hasOwn(body, 'stream_options') && (streams || !Object.hasOwn(body, 'stream'))) {
    // Only what is asked for is added, in front: only whitespace comes before the object's opening
    // brace.
    const rest = raw.subarray(raw.indexOf(OPEN_BRACE) + 1);
    const head = streams ? STREAM_OPTIONS_HEAD : STREAM_HEAD;
    // Two parts, not a copy of the whole prompt: the socket is handed both at once.
    return new WrittenJson([head, rest], fields);
  }
  // Object.assign rather than a spread followed by new properties, which V8 (Node 20) makes slow
  // (CONTRIBUTING).
  const options = JSON.stringify(Object.assign({}, asked, USAGE_ASKED));
  return withMembers(raw, servedModelName, `,"stream":true,"stream_options":${options}`, STREAMED, fields);
}

/** The members a body for the engine writes anew: its model, and on a stream its stream options. */
const NAMED: ReadonlySet<string> = new Set(['model']);
const STREAMED: ReadonlySet<string> = new Set(['model', 'stream', 'stream_options']);

/**
 * The client's body with `model` (and `more`) written in front, its own `written` members left
 * out, every other member its bytes as sent.
 */
function withMembers(
  raw: Buffer,
  servedModelName: string,
  more: string,
  written: ReadonlySet<string>,
  fields: WrittenJson['fields'],
): WrittenJson {
  const parts: Buffer[] = [Buffer.from(`{"model":${JSON.stringify(servedModelName)}${more}`)];
  const comma = Buffer.from(',');
  for (const member of topLevelMembers(raw)) {
    if (written.has(member.key)) continue;
    parts.push(comma, raw.subarray(member.start, member.end));
  }
  parts.push(Buffer.from('}'));
  return new WrittenJson(Buffer.concat(parts), fields);
}
