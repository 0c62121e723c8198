import { describe, expect, it } from 'vitest';
import { liftNumberArrays } from '../../../src/gateway/proxy/lifted-arrays.js';

/**
 * What the gateway does with an answer: parse, change the envelope, write, and put the lifted
 * arrays back.
 */
function relay(text: string | Buffer, change: (answer: any) => void = () => {}): { parsed: any; written: string } {
  const lifted = liftNumberArrays(Buffer.isBuffer(text) ? text : Buffer.from(text), 'embedding');
  const parsed = JSON.parse(lifted.text);
  change(parsed);
  return { parsed, written: lifted.restore(JSON.stringify(parsed)).toString('utf8') };
}

describe('liftNumberArrays', () => {
  const answer = {
    object: 'list',
    model: 'served',
    data: [
      { index: 1, object: 'embedding', embedding: [0.5, -1e-7, 3] },
      { index: 0, object: 'embedding', embedding: [-0.25, 1.5e10, 0] },
    ],
    usage: { prompt_tokens: 7, total_tokens: 7, prompt_tokens_details: null },
  };

  it('relays the vectors untouched while the envelope is parsed, sorted and renamed', () => {
    const text = JSON.stringify(answer, null, 1);
    const { parsed, written } = relay(text, (a) => {
      a.model = 'client';
      a.data.sort((x: any, y: any) => x.index - y.index);
    });
    expect(typeof parsed.data[0].embedding).toBe('string'); // a marker, not 1,024 numbers
    expect(parsed.usage).toEqual(answer.usage);
    expect(JSON.parse(written)).toEqual({ ...answer, model: 'client', data: [answer.data[1], answer.data[0]] });
  });

  it('keeps the engine’s own spelling of each number', () => {
    const { written } = relay('{"data":[{"embedding":[ 1.0000, -0.0, 2E+3 ]}]}');
    expect(written).toBe('{"data":[{"embedding":[ 1.0000, -0.0, 2E+3 ]}]}');
  });

  it('leaves in place what is not an array of JSON numbers, and the key inside a string', () => {
    for (const text of [
      '{"embedding":[1,"a"]}',
      '{"embedding":[[1,2]]}',
      '{"embedding":"AAAA"}',
      '{"note":"\\"embedding\\":[1,2]"}',
      '{"embedding":[]}',
    ]) {
      const { parsed, written } = relay(text);
      expect(JSON.parse(written)).toEqual(JSON.parse(text));
      if (text !== '{"embedding":[]}') expect(parsed).toEqual(JSON.parse(text));
    }
  });

  it('never turns invalid JSON into valid JSON', () => {
    const invalid = [
      '{"embedding":[1,,2]}',
      '{"embedding":[01]}',
      '{"embedding":[NaN]}',
      '{"embedding":[1.]}',
      '{"embedding":[1,2}',
      '{"embedding":[1e]}',
      '{"embedding":[-]}',
      '{"embedding":[+1]}',
      '{"embedding":[.5]}',
      '{"embedding":[1,]}',
      '{"embedding":[,1]}',
    ];
    // Whitespace that JSON does not allow (vertical tab, no-break space) inside an array or before
    // it.
    invalid.push('{"embedding":[1,\u000b2]}', '{"embedding":[1,\u00a02]}', '{"embedding":\u00a0[1,2]}');
    for (const text of invalid) {
      expect(() => JSON.parse(liftNumberArrays(Buffer.from(text), 'embedding').text), text).toThrow(SyntaxError);
    }
  });

  it('finds the key with whitespace around its colon', () => {
    const { parsed, written } = relay('{"embedding" :\n [1,2,-3e-2]}');
    expect(typeof parsed.embedding).toBe('string');
    expect(JSON.parse(written)).toEqual({ embedding: [1, 2, -0.03] });
  });

  it('keeps text outside the arrays whole, whatever its characters', () => {
    const text = '{"model":"modèle 🚀","data":[{"embedding":[1,2]}],"note":"日本語"}';
    const { parsed, written } = relay(text);
    expect(parsed.model).toBe('modèle 🚀');
    expect(written).toBe(text);
  });

  it('keeps characters of several bytes whole right beside an array, and finds no key inside them', () => {
    const text = '{"é":"日本語","embedding":[1,2],"ü":"🚀","data":[{"embedding":[3]}],"n":"ä\\"embedding\\":[4]"}';
    const { parsed, written } = relay(text);
    expect(parsed['é']).toBe('日本語');
    expect(typeof parsed.embedding).toBe('string');
    expect(parsed.n).toBe('ä"embedding":[4]');
    expect(written).toBe(text);
  });

  it('leaves an array holding bytes that are not UTF-8 in the envelope, where the parse refuses it', () => {
    const bytes = Buffer.concat([Buffer.from('{"embedding":[1,'), Buffer.from([0xff, 0xfe]), Buffer.from(']}')]);
    const lifted = liftNumberArrays(bytes, 'embedding');
    expect(() => JSON.parse(lifted.text)).toThrow(SyntaxError);
  });

  it('writes an answer of its own: a later change to the engine’s buffer cannot reach it', () => {
    const engine = Buffer.from('{"model":"m","data":[{"embedding":[0.125,-2.5e-3]}]}');
    const lifted = liftNumberArrays(engine, 'embedding');
    const answer = JSON.parse(lifted.text);
    answer.model = 'client model';
    const written = lifted.restore(JSON.stringify(answer));
    expect(written.toString()).toBe('{"model":"client model","data":[{"embedding":[0.125,-2.5e-3]}]}');
    engine.fill(0x20);
    expect(written.toString()).toBe('{"model":"client model","data":[{"embedding":[0.125,-2.5e-3]}]}');
  });

  it('leaves an answer that already holds a marker as it came', () => {
    const first = liftNumberArrays(Buffer.from('{"embedding":[1]}'), 'embedding').text;
    const forged = `{"a":${JSON.stringify(first)},"embedding":[2]}`;
    const { parsed, written } = relay(forged);
    expect(parsed).toEqual(JSON.parse(forged));
    expect(JSON.parse(written)).toEqual(JSON.parse(forged));
  });

  it('puts each array back where its marker went, even when an answer is copied', () => {
    const { written } = relay('{"data":[{"embedding":[1]},{"embedding":[2]}]}', (a) => {
      a.copy = a.data[1];
    });
    expect(JSON.parse(written)).toEqual({ data: [{ embedding: [1] }, { embedding: [2] }], copy: { embedding: [2] } });
  });
});
