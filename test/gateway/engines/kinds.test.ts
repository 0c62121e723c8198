import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONTROL_FIELDS, type ControlField, ENGINE_TRAITS } from '../../../src/gateway/engines/kinds.js';
import { repoRoot } from '../../helpers/processes.js';

/** The row of docs/engines.md's table that says what each kind does with a field. */
const ROW_OF: Record<ControlField, string> = {
  json_object: '`response_format: json_object`',
  guided_json: '`guided_json`',
  named_tool_choice: 'a named `tool_choice`',
};

describe("an engine kind's request fields", () => {
  it('docs/engines.md\'s table says "not enforced" exactly where a kind\'s traits say it ignores the field', async () => {
    const doc = await readFile(path.join(repoRoot, 'docs/engines.md'), 'utf8');
    const rows = new Map(
      doc
        .split('\n')
        .filter((line) => line.startsWith('| '))
        .map((line) => line.split('|').map((cell) => cell.trim()))
        .map((cells) => [cells[1]!, { vllm: cells[2]!, llamacpp: cells[3]! }] as const),
    );
    for (const field of CONTROL_FIELDS) {
      const row = rows.get(ROW_OF[field]);
      expect(row, `a row for ${field}`).toBeDefined();
      for (const kind of ['vllm', 'llamacpp'] as const) {
        const ignored = ENGINE_TRAITS[kind].ignores.includes(field);
        expect(row![kind].startsWith('not enforced'), `${kind}, ${field}: ${row![kind]}`).toBe(ignored);
      }
    }
  });

  it("llama.cpp's server is known to ignore JSON mode, guided_json and a named tool_choice; vLLM none", () => {
    expect([...ENGINE_TRAITS.llamacpp.ignores].sort()).toEqual(['guided_json', 'json_object', 'named_tool_choice']);
    expect(ENGINE_TRAITS.vllm.ignores).toEqual([]);
  });
});
