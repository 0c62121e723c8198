import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A scripted OpenAI-compatible upstream for the agent's end-to-end tests: the
 * real gateway routes `sim-chat` to it (a static engine), and each chat
 * request it receives is answered by the next turn of the script, streamed
 * as vLLM streams (tool calls as its tool parsers return them: the id and
 * name first, the arguments in pieces). What the simulator's scripted mode
 * (simulator.test.ts) cannot say: a stream held open until the test lets it
 * end (Ctrl-C, a request in flight for a 429), and turns in the order they
 * are asked for, across conversations.
 */
export interface ScriptedTurn {
  text?: string;
  reasoning?: string;
  toolCalls?: { name: string; arguments: string }[];
  /** Default: tool_calls when there are some, else stop. */
  finish?: 'stop' | 'tool_calls' | 'length';
  /** Stream the text, then keep the stream open until `release()` or the client hangs up. */
  hold?: boolean;
  usage?: { prompt: number; completion: number };
}

export interface ScriptedUpstream {
  url: string;
  /** The bodies of the chat requests received, in order. */
  requests: Array<{ messages: Array<{ role: string; content: unknown; tool_calls?: unknown }>; tools?: unknown[] }>;
  /** Chat streams the client hung up on before their end. */
  hungUp: number;
  push(...turns: ScriptedTurn[]): void;
  remaining(): number;
  /** Drops the turns not asked for yet. */
  clear(): void;
  release(): void;
  close(): Promise<void>;
}

export async function startScriptedUpstream(turns: ScriptedTurn[] = []): Promise<ScriptedUpstream> {
  const queue = [...turns];
  const held = new Set<() => void>();
  const upstream: ScriptedUpstream = {
    url: '',
    requests: [],
    hungUp: 0,
    push: (...more) => queue.push(...more),
    remaining: () => queue.length,
    clear: () => void queue.splice(0),
    release: () => {
      for (const go of held) go();
      held.clear();
    },
    close: () => {
      upstream.release();
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
  const server = createServer((req, res) => {
    void handle(req, res, queue, held, upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  upstream.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return upstream;
}

async function handle(
  req: IncomingMessage,
  res: ServerResponse,
  queue: ScriptedTurn[],
  held: Set<() => void>,
  upstream: ScriptedUpstream,
): Promise<void> {
  if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
    res
      .writeHead(req.url?.endsWith('/models') ? 200 : 404, { 'content-type': 'application/json' })
      .end('{"object":"list","data":[]}');
    return;
  }
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ScriptedUpstream['requests'][number] & {
    model: string;
  };
  upstream.requests.push(body);
  const turn = queue.shift() ?? { text: 'the script has no more turns' };
  let open = true;
  res.on('close', () => {
    if (!res.writableFinished) upstream.hungUp++;
    open = false;
  });
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const base = {
    id: `chatcmpl-${upstream.requests.length}`,
    object: 'chat.completion.chunk',
    created: Math.floor(Date.now() / 1000),
    model: body.model,
  };
  const send = (delta: Record<string, unknown>, finish: string | null = null) => {
    if (open)
      res.write(
        `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`,
      );
  };
  send({ role: 'assistant', content: '' });
  for (const word of words(turn.reasoning)) send({ reasoning: word });
  for (const word of words(turn.text)) send({ content: word });
  (turn.toolCalls ?? []).forEach((call, index) => {
    send({
      tool_calls: [
        {
          index,
          id: `chatcmpl-tool-${upstream.requests.length}${index}`,
          type: 'function',
          function: { name: call.name, arguments: '' },
        },
      ],
    });
    for (let at = 0; at < call.arguments.length; at += 16)
      send({ tool_calls: [{ index, function: { arguments: call.arguments.slice(at, at + 16) } }] });
  });
  if (turn.hold) await new Promise<void>((resolve) => (held.add(resolve), res.on('close', resolve)));
  if (!open) return;
  send({}, turn.finish ?? (turn.toolCalls?.length ? 'tool_calls' : 'stop'));
  const usage = turn.usage ?? {
    prompt: Math.ceil(JSON.stringify(body.messages).length / 4),
    completion: 10 + Math.ceil(((turn.text ?? '').length + JSON.stringify(turn.toolCalls ?? []).length) / 4),
  };
  res.write(
    `data: ${JSON.stringify({ ...base, choices: [], usage: { prompt_tokens: usage.prompt, completion_tokens: usage.completion, total_tokens: usage.prompt + usage.completion } })}\n\n`,
  );
  res.end('data: [DONE]\n\n');
}

function words(text: string | undefined): string[] {
  return text ? (text.match(/\S+\s*|\s+/g) ?? []) : [];
}
