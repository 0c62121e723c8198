import { describe, expect, it } from 'vitest';
import { RepeatedMembers } from '../../../src/shared/http/repeated-members.js';

type Json = Record<string, unknown>;

/** Tools large enough to be kept (about 6 KB), as an agent sends them every turn. */
const tools = Array.from({ length: 6 }, (_, i) => ({
  name: `Tool${i}`,
  description: `${'Reads and edits files in the working tree. '.repeat(20)}${i}`,
  input_schema: { type: 'object', properties: { path: { type: 'string', description: 'a path' } }, required: ['path'] },
}));
const system = [{ type: 'text', text: 'You are a coding agent. '.repeat(120) }];

const bodyOf = (turn: string, extra: Json = {}): Json => ({
  model: 'm',
  max_tokens: 64,
  system,
  tools,
  messages: [{ role: 'user', content: turn }],
  ...extra,
});
const bytesOf = (body: unknown) => Buffer.from(JSON.stringify(body));

/** A body parsed as the gateway reads one: placeholders filled, then kept for the sender. */
function read(members: RepeatedMembers, sender: string, raw: Buffer): Json {
  const parsed = members.parse(sender, raw);
  parsed.fill();
  members.keep(sender, raw, parsed.body as Json);
  return parsed.body as Json;
}

describe('RepeatedMembers', () => {
  it("takes a key's tools and system prompt as kept when its next body holds the same bytes", () => {
    const members = new RepeatedMembers();
    const first = read(members, 'key-a', bytesOf(bodyOf('Fix the test.')));
    const raw = bytesOf(bodyOf('Now run it.'));
    const second = read(members, 'key-a', raw);
    expect(second).toEqual(JSON.parse(raw.toString()));
    // Not parsed again: the very values the first body parsed to.
    expect(second.tools).toBe(first.tools);
    expect(second.system).toBe(first.system);
    expect(Object.keys(second)).toEqual(Object.keys(JSON.parse(raw.toString())));
  });

  it("never gives one key another key's values (each key's are its own)", () => {
    const members = new RepeatedMembers();
    const first = read(members, 'key-a', bytesOf(bodyOf('Fix the test.')));
    const other = read(members, 'key-b', bytesOf(bodyOf('Fix the test.')));
    expect(other.tools).toEqual(first.tools);
    expect(other.tools).not.toBe(first.tools);
  });

  it('parses the body whole when the kept bytes stand anywhere but the top-level member', () => {
    const members = new RepeatedMembers();
    // The same bytes inside a message's tool input, and other tools at the top: a hostile body,
    // parsed as it is.
    const otherTools = [{ name: 'Only', description: 'x', input_schema: { type: 'object' } }];
    const nested = bodyOf('', {
      messages: [{ role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'Only', input: { tools } }] }],
      tools: otherTools,
    });
    for (const raw of [
      bytesOf(nested),
      // The same member twice: the last one counts, as JSON.parse has it.
      Buffer.from(`{"tools":${JSON.stringify(tools)},"model":"m","tools":${JSON.stringify(otherTools)}}`),
      // Inside a string, escaped: not the bytes at all, and any cut there would not parse.
      bytesOf({ model: 'm', note: JSON.stringify(tools), tools: otherTools }),
    ]) {
      // Kept again before each: a body whose placeholder lands elsewhere drops what was kept.
      read(members, 'key-a', bytesOf(bodyOf('Fix the test.')));
      const body = read(members, 'key-a', raw);
      expect(body).toEqual(JSON.parse(raw.toString()));
    }
  });

  it('drops what it kept when a body had to be parsed twice, so the next is parsed once', () => {
    const members = new RepeatedMembers();
    const first = read(members, 'key-a', bytesOf(bodyOf('Fix the test.')));
    const nested = bytesOf({ model: 'm', metadata: { tools }, tools: [] });
    expect(read(members, 'key-a', nested).tools).toEqual([]);
    // Nothing kept now: parsed whole (and kept again), then taken as kept.
    const again = read(members, 'key-a', bytesOf(bodyOf('Next.')));
    expect(again.tools).not.toBe(first.tools);
    expect(read(members, 'key-a', bytesOf(bodyOf('And next.'))).tools).toBe(again.tools);
  });

  it('throws for a body that is not JSON, as JSON.parse does', () => {
    const members = new RepeatedMembers();
    read(members, 'key-a', bytesOf(bodyOf('Fix the test.')));
    const broken = Buffer.from(`{"tools":${JSON.stringify(tools)},"model":`);
    expect(() => members.parse('key-a', broken)).toThrow(SyntaxError);
  });

  it('freezes what it keeps: a change to a shared value fails instead of reaching the next request', () => {
    const members = new RepeatedMembers();
    const first = read(members, 'key-a', bytesOf(bodyOf('Fix the test.')));
    const tool = (first.tools as Json[])[0]!;
    expect(() => {
      tool.name = 'changed';
    }).toThrow(TypeError);
    expect(() => (first.tools as Json[]).push({})).toThrow(TypeError);
    expect(() => delete ((tool.input_schema as Json).properties as Json).path).toThrow(TypeError);
  });

  it('keeps nothing small, nothing written with other spacing, and a made-up value never', () => {
    const members = new RepeatedMembers();
    const small = { model: 'm', tools: [{ name: 'a' }] };
    const first = read(members, 'key-a', bytesOf(small));
    expect(read(members, 'key-a', bytesOf(small)).tools).not.toBe(first.tools);
    // Python's json.dumps writes ", " and ": ": not JSON.stringify's bytes, so nothing is kept (and
    // not tried forever).
    const spaced = Buffer.from(JSON.stringify(bodyOf('x'), null, 1));
    const once = read(members, 'key-c', spaced);
    expect(read(members, 'key-c', spaced).tools).not.toBe(once.tools);
    expect(Object.isFrozen(once.tools)).toBe(false);
  });

  it('parses every body of a random mix exactly as JSON.parse does', () => {
    const members = new RepeatedMembers();
    let seed = 7;
    const next = () => (seed = (Math.imul(seed, 1_664_525) + 1_013_904_223) >>> 0);
    const variants = [tools, tools.slice(1), [...tools].reverse()];
    for (let i = 0; i < 300; i++) {
      const chosen = variants[next() % variants.length];
      const members_ = [
        ['model', 'm'],
        ['tools', chosen],
        ['system', next() % 2 === 0 ? system : 'short'],
        ['messages', [{ role: 'user', content: next() % 3 === 0 ? { tools: chosen } : `turn ${i}` }]],
      ];
      // Members in any order, now and then one twice.
      members_.sort(() => (next() % 2 === 0 ? 1 : -1));
      if (next() % 5 === 0) members_.push(['tools', variants[next() % variants.length]]);
      const raw = Buffer.from(`{${members_.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(',')}}`);
      expect(read(members, `key-${next() % 2}`, raw)).toEqual(JSON.parse(raw.toString()));
    }
  });

  describe('a conversation sent again every turn', () => {
    /** A turn of an agent's conversation: about 1 KB, so that twenty of them are worth keeping. */
    const turn = (i: number): Json =>
      i % 2 === 0
        ? {
            role: 'user',
            content: [{ type: 'text', text: `Step ${i}: ${'run the tests and read the output. '.repeat(30)}` }],
          }
        : { role: 'assistant', content: `Done ${i}. ${'The tests pass; the next step edits the module. '.repeat(20)}` };
    const conversation = (turns: number) => Array.from({ length: turns }, (_, i) => turn(i));
    const chatOf = (messages: Json[], extra: Json = {}): Json => ({ model: 'm', max_tokens: 64, messages, ...extra });

    it("takes the items a key's last body began with as kept, and parses only the new ones", () => {
      const members = new RepeatedMembers();
      let previous = read(members, 'key-a', bytesOf(chatOf(conversation(20))));
      for (const turns of [22, 24, 25]) {
        const raw = bytesOf(chatOf(conversation(turns)));
        const body = read(members, 'key-a', raw);
        expect(body).toEqual(JSON.parse(raw.toString()));
        const earlier = previous.messages as Json[];
        // The very values the earlier turn's body held: not parsed again.
        earlier.forEach((message, i) => expect((body.messages as Json[])[i]).toBe(message));
        previous = body;
      }
    });

    it("keeps a key's last conversations apart: sessions that take turns each find theirs", () => {
      const members = new RepeatedMembers();
      const session = (name: string, turns: number) =>
        chatOf(conversation(turns).map((message) => ({ ...message, content: `${name}: ${String(message.content)}` })));
      const first = {
        a: read(members, 'key-a', bytesOf(session('a', 20))),
        b: read(members, 'key-a', bytesOf(session('b', 20))),
      };
      const raw = { a: bytesOf(session('a', 22)), b: bytesOf(session('b', 22)) };
      const next = { a: read(members, 'key-a', raw.a), b: read(members, 'key-a', raw.b) };
      for (const name of ['a', 'b'] as const) {
        expect(next[name]).toEqual(JSON.parse(raw[name].toString()));
        expect((next[name].messages as Json[])[19]).toBe((first[name].messages as Json[])[19]);
      }
    });

    it('takes the items up to the first that changed (a cache mark moved to the newest turn)', () => {
      const members = new RepeatedMembers();
      const marked = (turns: number) => {
        const messages = conversation(turns);
        messages[turns - 1] = { ...messages[turns - 1], cache_control: { type: 'ephemeral' } };
        return chatOf(messages);
      };
      const first = read(members, 'key-a', bytesOf(marked(20)));
      const raw = bytesOf(marked(22));
      const second = read(members, 'key-a', raw);
      expect(second).toEqual(JSON.parse(raw.toString()));
      expect((second.messages as Json[])[18]).toBe((first.messages as Json[])[18]);
      expect((second.messages as Json[])[19]).not.toBe((first.messages as Json[])[19]);
      expect((second.messages as Json[])[19]).toEqual(turn(19));
    });

    it("keeps a Responses request's input the same way, and never gives one key another key's", () => {
      const members = new RepeatedMembers();
      const responsesOf = (turns: number) => ({ model: 'm', store: false, input: conversation(turns) });
      const first = read(members, 'key-a', bytesOf(responsesOf(20)));
      const second = read(members, 'key-a', bytesOf(responsesOf(21)));
      expect((second.input as Json[])[5]).toBe((first.input as Json[])[5]);
      const other = read(members, 'key-b', bytesOf(responsesOf(21)));
      expect(other).toEqual(second);
      expect((other.input as Json[])[5]).not.toBe((first.input as Json[])[5]);
    });

    it('parses a body whole when the kept items stand anywhere but the start of its own top-level array', () => {
      const members = new RepeatedMembers();
      const items = conversation(20);
      const hostile = [
        // The same items under another member first, and other messages at the top.
        bytesOf({ model: 'm', metadata: { messages: items }, messages: [{ role: 'user', content: 'hi' }] }),
        // The array twice: the last one counts, as JSON.parse has it.
        Buffer.from(`{"messages":${JSON.stringify(items)},"model":"m","messages":[{"role":"user","content":"x"}]}`),
        // Inside a string, escaped.
        bytesOf({ model: 'm', note: JSON.stringify({ messages: items }), messages: [] }),
        // The items inside a nested array of the top-level one.
        Buffer.from(`{"model":"m","messages":[${JSON.stringify(items)}]}`),
        // Followed by a number that would extend the last kept item, were it one.
        Buffer.from(`{"model":"m","messages":[${items.map((item) => JSON.stringify(item)).join(',')}1]}`),
      ];
      for (const raw of hostile) {
        read(members, 'key-a', bytesOf(chatOf(items)));
        let parsed: unknown;
        try {
          parsed = JSON.parse(raw.toString());
        } catch (error) {
          expect(() => members.parse('key-a', raw)).toThrow(SyntaxError);
          expect(error).toBeInstanceOf(SyntaxError);
          continue;
        }
        expect(read(members, 'key-a', raw)).toEqual(parsed);
      }
    });

    it('keeps no history of tiny items, and at most 2,048 items of one: no body makes a request compare more than it would parse', () => {
      const members = new RepeatedMembers();
      const tiny = chatOf(Array.from({ length: 5_000 }, () => ({ role: 'user', content: 'ok' })));
      const first = read(members, 'key-a', bytesOf(tiny));
      expect((read(members, 'key-a', bytesOf(tiny)).messages as Json[])[0]).not.toBe((first.messages as Json[])[0]);
      expect(Object.isFrozen((first.messages as Json[])[0])).toBe(false);

      const many = chatOf(Array.from({ length: 3_000 }, (_, i) => turn(i)));
      const kept = read(members, 'key-b', bytesOf(many));
      const again = read(members, 'key-b', bytesOf(many));
      expect(again).toEqual(JSON.parse(bytesOf(many).toString()));
      expect((again.messages as Json[])[2_047]).toBe((kept.messages as Json[])[2_047]);
      expect((again.messages as Json[])[2_048]).not.toBe((kept.messages as Json[])[2_048]);
    });

    it('freezes the kept items, and fills a fresh array the request may change', () => {
      const members = new RepeatedMembers();
      read(members, 'key-a', bytesOf(chatOf(conversation(20))));
      const body = read(members, 'key-a', bytesOf(chatOf(conversation(21))));
      const messages = body.messages as Json[];
      expect(() => {
        messages[0]!.role = 'system';
      }).toThrow(TypeError);
      messages.push({ role: 'user', content: 'one more' });
      expect(read(members, 'key-a', bytesOf(chatOf(conversation(21)))).messages).toHaveLength(21);
    });

    it('reads bodies of one key parsed in any order before either is kept (requests in flight together)', () => {
      const members = new RepeatedMembers();
      read(members, 'key-a', bytesOf(chatOf(conversation(20))));
      const raws = [21, 23, 22].map((turns) => bytesOf(chatOf(conversation(turns))));
      const parsed = raws.map((raw) => members.parse('key-a', raw));
      parsed.forEach((body, i) => {
        body.fill();
        members.keep('key-a', raws[i]!, body.body as Json);
        expect(body.body).toEqual(JSON.parse(raws[i]!.toString()));
      });
      expect(read(members, 'key-a', raws[0]!)).toEqual(JSON.parse(raws[0]!.toString()));
    });

    it('parses every body of conversations that share, change and nest their turns exactly as JSON.parse does', () => {
      const members = new RepeatedMembers();
      let seed = 11;
      const next = () => (seed = (Math.imul(seed, 1_664_525) + 1_013_904_223) >>> 0);
      const histories = [conversation(24), conversation(24).reverse(), [...conversation(12), turn(99)]];
      for (let i = 0; i < 300; i++) {
        const history = histories[next() % histories.length]!.slice(0, 1 + (next() % 24));
        if (next() % 4 === 0) history[next() % history.length] = { role: 'user', content: `changed ${i}` };
        const name = next() % 3 === 0 ? 'input' : 'messages';
        const parts: Array<[string, unknown]> = [
          ['model', 'm'],
          [name, next() % 7 === 0 ? [history] : history],
          ['tools', next() % 2 === 0 ? tools : []],
        ];
        if (next() % 5 === 0) parts.push(['metadata', { [name]: history }]);
        if (next() % 6 === 0) parts.push([name, history.slice(1)]);
        parts.sort(() => (next() % 2 === 0 ? 1 : -1));
        const raw = Buffer.from(`{${parts.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(',')}}`);
        expect(read(members, `key-${next() % 2}`, raw)).toEqual(JSON.parse(raw.toString()));
      }
    });
  });
});
