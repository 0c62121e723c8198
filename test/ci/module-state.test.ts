import path from 'node:path';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain JavaScript module of the lint configuration, without declarations
import { noModuleState } from '../../eslint-rules/module-state.js';
import { repoRoot } from '../helpers/processes.js';

/**
 * `tollgate/no-module-state` (eslint-rules/module-state.js, on for src/gateway in
 * eslint.config.js): no module of the gateway keeps state between requests; a memo, an agent or a
 * count is a service's, made in services.ts. The rule alone here, without the type-aware
 * configuration: it reads syntax only, and the whole gateway is linted in seconds.
 */
function linter(): ESLint {
  return new ESLint({
    cwd: repoRoot,
    overrideConfigFile: true,
    overrideConfig: [
      {
        linterOptions: { reportUnusedDisableDirectives: 'off' },
        files: ['**/*.ts'],
        languageOptions: { parser: tseslint.parser },
        plugins: { tollgate: { rules: { 'no-module-state': noModuleState } } },
        rules: { 'tollgate/no-module-state': 'error' },
      },
    ],
  });
}

async function findings(source: string): Promise<string[]> {
  const [result] = await linter().lintText(source, { filePath: path.join(repoRoot, 'src/gateway/sample.ts') });
  return result!.messages.map((message) => `${message.line}: ${message.message.split(':')[0]}`);
}

describe('no module-level state in src/gateway', () => {
  it('refuses a module-level Map, a let, an LRU, an agent, a changed table and a static field', async () => {
    const source = [
      "import { LRUCache } from 'lru-cache';",
      "import http from 'node:http';",
      'const memo = new Map<string, string>();',
      'let today = "";',
      'export const parsed = new LRUCache<string, URL>({ max: 10 });',
      "const agents = { 'http:': new http.Agent({ keepAlive: true }) };",
      'const seen: string[] = [];',
      'export function remember(key: string) { seen.push(key); memo.set(key, key); today = key; }',
      'const counted = (() => { let n = 0; return () => ++n; })();',
      'export class Counter { static count = 0; }',
    ].join('\n');
    expect(await findings(source)).toEqual([
      '3: A module-level `new Map` is state kept between requests',
      '4: A module-level `let` keeps state between requests',
      '5: A module-level `new LRUCache` is state kept between requests',
      '6: A module-level `new Agent` is state kept between requests',
      '8: `seen` is a module-level value this module changes',
      '9: A module-level value made by a function called at once hides its state',
      "10: A class's static field that changes is state kept between requests",
    ]);
  });

  it('allows constants: read-only tables, literals never changed, patterns, functions', async () => {
    const source = [
      "const ROLES: ReadonlySet<string> = new Set(['user', 'assistant']);",
      'const PRICES: ReadonlyMap<string, number> = new Map([["a", 1]]);',
      "const KINDS = ['vllm', 'llamacpp'] as const;",
      'const LIMITS = { rpm: 60, tpm: 1000 };',
      'const ID = new RegExp("^[a-z]+$");',
      'export const read = (key: string) => ROLES.has(key) && PRICES.get(key) === LIMITS.rpm && ID.test(KINDS[0]);',
      'export class Settled { static readonly NAME = "settled"; }',
      'export function perCall() { const memo = new Map(); memo.set(1, 2); return memo; }',
    ].join('\n');
    expect(await findings(source)).toEqual([]);
  });

  it('finds none in src/gateway', async () => {
    const results = await linter().lintFiles(['src/gateway/**/*.ts']);
    expect(results.length).toBeGreaterThan(100);
    const found = results.flatMap((result) =>
      result.messages.map(
        (message) => `${path.relative(repoRoot, result.filePath)}:${message.line}: ${message.message}`,
      ),
    );
    expect(found).toEqual([]);
  });
});
