import { describe, expect, it } from 'vitest';
import { clientBodyForEngine } from '../../../src/gateway/proxy/client-body.js';
import { topLevelMembers } from '../../../src/gateway/proxy/json-members.js';

const sent = (text: string, served: string) => {
  const raw = Buffer.from(text);
  return clientBodyForEngine(raw, JSON.parse(text) as Record<string, unknown>, served);
};
/** What every chat and completions engine is asked for: a stream with its final and running usage. */
const STREAMED = { stream: true, stream_options: { include_usage: true, continuous_usage_stats: true } };
const parsed = (text: string, served: string) => JSON.parse(sent(text, served).bytes.toString('utf8')) as unknown;

describe("the client's chat body as the engine is sent it", () => {
  it('is the same bytes when it names the served model and asks for the stream the gateway asks for', () => {
    const asked = '{"model":"m","stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}';
    const raw = Buffer.from(asked);
    expect(clientBodyForEngine(raw, JSON.parse(asked) as Record<string, unknown>, 'm').bytes).toBe(raw);
  });

  it("asks a JSON call's engine for a stream with its usage, in front of the client's own bytes", () => {
    const text = ' {"messages":[{"role":"user","content":"hé \\" }"}], "model" : "m","max_tokens":5}\n';
    const raw = Buffer.from(text);
    const written = clientBodyForEngine(raw, JSON.parse(text) as Record<string, unknown>, 'm');
    expect(written.parts.at(-1)!.buffer).toBe(raw.buffer);
    expect(JSON.parse(written.bytes.toString('utf8'))).toEqual({ ...(JSON.parse(text) as object), ...STREAMED });
    // A client's `stream: false` is dropped, however written: the engine reads the last one.
    const refused = '{"model":"m","stream":false,"messages":[],"str\\u0065am":false}';
    expect(parsed(refused, 'm')).toEqual({ model: 'm', messages: [], ...STREAMED });
  });

  it('names the served model and asks for usage on a stream, keeping what the client asked', () => {
    const text = '{"messages":[{"role":"user","content":"{\\"model\\":\\"x\\"}"}],"model":"client","n":2}';
    expect(parsed(text, 'served')).toEqual({ ...(JSON.parse(text) as object), model: 'served', ...STREAMED });
    const stream = '{"model":"m","stream":true,"stream_options":{"include_usage":false,"x":1},"messages":[]}';
    expect(parsed(stream, 'm')).toEqual({
      model: 'm',
      stream: true,
      stream_options: { include_usage: true, continuous_usage_stats: true, x: 1 },
      messages: [],
    });
    expect(parsed('{"model":"m","stream":true}', 'm')).toEqual({ model: 'm', ...STREAMED });
    expect(sent(text, 'served').fields).toMatchObject({ model: 'served', n: 2 });
  });

  it('drops every member it rewrites, written twice or escaped, never a nested one of the same name', () => {
    // A hostile body: the client's model twice, once escaped, and a nested `model` that must stay.
    const text =
      '{"model":"a","meta":{"model":"a"},"\\u006dodel":"a","stream":true,"stream_\\u006fptions":{"x":1},"stream_options":{}}';
    const body = parsed(text, 'served') as Record<string, unknown>;
    expect(body).toEqual({
      model: 'served',
      meta: { model: 'a' },
      stream: true,
      stream_options: { include_usage: true, continuous_usage_stats: true },
    });
    expect(
      sent(text, 'served')
        .bytes.toString()
        .match(/"model"/g),
    ).toHaveLength(2);
  });

  it('sends what the gateway read of bytes that are not UTF-8, not the bytes', () => {
    const raw = Buffer.concat([
      Buffer.from('{"model":"m","messages":[{"role":"user","content":"a'),
      Buffer.from([0xff]),
      Buffer.from('"}]}'),
    ]);
    const body = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
    const written = clientBodyForEngine(raw, body, 'm').bytes;
    expect(written.includes(0xff)).toBe(false);
    expect(JSON.parse(written.toString('utf8'))).toEqual({ ...body, ...STREAMED });
  });

  it('finds top-level members however the values nest and escape', () => {
    const text = '{ "a" : [1,{"b":"]}\\\\"}], "c":"\\\\\\"", "d":-1.5e3 ,"e":null,"f":{"g":[[]]}}';
    const raw = Buffer.from(text);
    const members = topLevelMembers(raw);
    expect(members.map((m) => m.key)).toEqual(['a', 'c', 'd', 'e', 'f']);
    const rebuilt = `{${members.map((m) => raw.toString('utf8', m.start, m.end)).join(',')}}`;
    expect(JSON.parse(rebuilt)).toEqual(JSON.parse(text));
    const long = JSON.stringify({ s: `${'x'.repeat(100)}\\"${'y'.repeat(100)}`, t: 1 });
    expect(topLevelMembers(Buffer.from(long)).map((m) => m.key)).toEqual(['s', 't']);
  });
});
