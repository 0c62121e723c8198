import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decide } from '../../src/coding-agent/approval.js';
import { McpTrust, readMcpConfig } from '../../src/coding-agent/mcp-config.js';
import { mcpAnswer } from '../../src/coding-agent/tools/mcp-tools.js';

describe('MCP pieces', () => {
  let folder: string;
  beforeAll(async () => (folder = await mkdtemp(path.join(os.tmpdir(), 'tollgate-mcp-pieces-'))));
  afterAll(() => rm(folder, { recursive: true, force: true }));

  it('reads the mcpServers shape, leaving out each bad entry with its reason', async () => {
    const file = path.join(folder, 'mcp.json');
    await writeFile(
      file,
      JSON.stringify({
        mcpServers: {
          notes: { command: 'node', args: ['s.mjs'], env: { A: 'b' } },
          docs: { url: 'https://mcp.example.com/mcp', headers: { authorization: 'Bearer x' } },
          '../x': { command: 'sh' },
          numbers: { command: 'node', args: [1] },
          ftp: { type: 'http', url: 'ftp://x' },
          odd: { type: 'sse', url: 'https://x' },
        },
      }),
    );
    const config = (await readMcpConfig(file))!;
    expect(config.servers).toEqual([
      { name: 'notes', type: 'stdio', command: 'node', args: ['s.mjs'], env: { A: 'b' } },
      { name: 'docs', type: 'http', url: 'https://mcp.example.com/mcp', headers: { authorization: 'Bearer x' } },
    ]);
    expect(config.problems).toEqual([
      `${file}: server "../x" left out: a name is 1 to 40 letters, digits, "_" or "-"`,
      `${file}: server "numbers" left out: "args" must be a list of strings`,
      `${file}: server "ftp" left out: "url" must be an http(s) URL`,
      `${file}: server "odd" left out: "type" must be "stdio" or "http" (not "sse")`,
    ]);
    await writeFile(file, '{ not json');
    expect((await readMcpConfig(file))!.problems[0]).toMatch(/is not valid JSON/);
    expect(await readMcpConfig(path.join(folder, 'none.json'))).toBeNull();
  });

  it('trusts a project by its file hash, in a file only its owner reads', async () => {
    const trust = new McpTrust(path.join(folder, 'config'));
    expect(await trust.trusts('/p', 'abc')).toBe(false);
    await trust.trust('/p', 'abc');
    expect(await trust.trusts('/p', 'abc')).toBe(true);
    expect(await trust.trusts('/p', 'abd')).toBe(false);
    expect(await trust.trusts('/q', 'abc')).toBe(false);
    expect((await stat(path.join(folder, 'config', 'mcp-trusted.json'))).mode & 0o777).toBe(0o600);
  });

  it('asks for an MCP tool like a command: in ask and auto-edit, not in yolo, refused in plan', () => {
    expect(decide('ask', 'mcp', [])).toEqual({ outcome: 'ask', question: 'Call this MCP tool?' });
    expect(decide('auto-edit', 'mcp', [])).toEqual({ outcome: 'ask', question: 'Call this MCP tool?' });
    expect(decide('yolo', 'mcp', [])).toEqual({ outcome: 'run' });
    expect(decide('plan', 'mcp', []).outcome).toBe('refuse');
  });

  it("turns a tool's result into text: text parts, a line for what is not text, errors marked", () => {
    expect(
      mcpAnswer({
        content: [
          { type: 'text', text: 'one' },
          { type: 'image', data: 'AAAA', mimeType: 'image/png' },
          { type: 'resource', resource: { uri: 'file:///a.txt', text: 'resource text' } },
          { type: 'resource', resource: { uri: 'file:///b.bin', blob: 'AAAA' } },
          { type: 'resource_link', uri: 'file:///c', name: 'c' },
        ],
      }),
    ).toBe(
      'one\n[image (image/png) not shown: the agent passes on text only]\nresource text\n[binary resource file:///b.bin not shown]\n[resource c: file:///c]',
    );
    expect(mcpAnswer({ content: [], structuredContent: { n: 1 } })).toBe('{"n":1}');
    expect(mcpAnswer({ content: [{ type: 'text', text: 'bad input' }], isError: true })).toBe('error: bad input');
    expect(mcpAnswer({ content: [] })).toBe('(no output)');
  });
});
