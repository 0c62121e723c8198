// @ts-check
// ESLint for the whole tree (src/, test/, bench/, bin/ and the config files), with
// typescript-eslint's type-aware rules. `npm run lint` runs it with `prettier --check`;
// .ci/run fails on any finding. Formatting is Prettier's alone: no rule here is about layout.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import { importX } from 'eslint-plugin-import-x';
import globals from 'globals';
import tseslint from 'typescript-eslint';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { commentWidth } from './eslint-rules/comment-width.js';
import { noModuleState } from './eslint-rules/module-state.js';

/** The process at the top: every long-lived service made (`services.ts`), the app, the entry point. */
const TOP = ['src/server', 'src/app.ts', 'src/main.ts', 'src/services.ts'];

/** The coding agent, a program of its own that `tollgate code` (surfaces/cli/main.ts) starts. */
const AGENT = 'src/coding-agent';
/** The surfaces that serve routes: the coding agent calls them over HTTP, it imports none. */
const SERVED_SURFACES = ['v1', 'api', 'auth', 'admin', 'portal', 'edge'].map((s) => `src/surfaces/${s}`);
/** The CLI's files besides its dispatch: the plumbing the coding agent sits on, and the operator's commands. */
const CLI_PLUMBING = ['args', 'client', 'errors', 'output', 'settings', 'terminal'].map(
  (f) => `src/surfaces/cli/${f}.ts`,
);
const CLI_COMMANDS = ['src/surfaces/cli/commands', 'src/surfaces/cli/main.ts'];

/**
 * The layers of src/, each importing only from those below it (CONTRIBUTING.md, "The layers"):
 * config <- shared <- gateway | platform <- surfaces <- server, services.ts, app.ts, main.ts.
 * The gateway and the platform do not import each other; the simulator is a program of its own.
 * A surface names what it reads of the services in its own `deps.ts` (`V1Deps`, `PortalDeps`, …), never the
 * whole `Services` of services.ts, which the app passes in and which fits each.
 */
function layerZones() {
  const zone = (target, from, why) => ({ target, from, message: why });
  return [
    zone(
      'src/config',
      ['src/shared', 'src/gateway', 'src/platform', 'src/surfaces', 'src/sim', AGENT, ...TOP],
      'config/ is the bottom layer: it imports nothing else from src/.',
    ),
    zone(
      'src/shared',
      ['src/gateway', 'src/platform', 'src/surfaces', 'src/sim', AGENT, ...TOP],
      'shared/ is plumbing: it imports only config/.',
    ),
    zone(
      'src/gateway',
      ['src/platform', 'src/surfaces', AGENT, ...TOP],
      'gateway/ imports only config/, shared/ and the simulator.',
    ),
    zone(
      'src/platform',
      ['src/gateway', 'src/surfaces', 'src/sim', AGENT, ...TOP],
      'platform/ imports only config/ and shared/.',
    ),
    zone(
      'src/surfaces',
      ['src/server', 'src/app.ts', 'src/main.ts', 'src/services.ts'],
      'surfaces/ are mounted by the app: they import nothing of the process above them (not even the Services type:' +
        ' a surface declares what it reads in its deps.ts).',
    ),
    zone(
      'src/sim',
      ['src/config', 'src/shared', 'src/gateway', 'src/platform', 'src/surfaces', AGENT, ...TOP],
      'sim/ is a program of its own: it imports nothing else from src/.',
    ),
    zone(
      AGENT,
      ['src/config', 'src/platform', 'src/sim', ...TOP, ...SERVED_SURFACES, ...CLI_COMMANDS],
      "coding-agent/ is a program of its own on a key: it imports the gateway's price rule (gateway/billing/) and" +
        " usage read (gateway/proxy/token-counts.ts), and the CLI's plumbing (client, errors, settings, terminal).",
    ),
    zone(
      [...SERVED_SURFACES, 'src/surfaces/cli/commands', ...CLI_PLUMBING],
      AGENT,
      "Only the CLI's dispatch (surfaces/cli/main.ts) starts the coding agent; the agent sits on the CLI's plumbing.",
    ),
  ];
}

/**
 * Import circles in src/, type-only imports included: import-x's no-cycle skips `import type` and has no option
 * to count it (4.18), yet a type-only circle still ties two modules that should point one way. The graph is read
 * once a run from the import and export lines of src/ (relative specifiers), and each file in a circle is reported.
 */
const importCircles = {
  meta: { type: 'problem', schema: [], messages: { circle: 'Import circle (type imports count): {{circle}}.' } },
  create(context) {
    const file = context.physicalFilename;
    const circle = circlesOfSrc(path.resolve(import.meta.dirname, 'src')).get(file);
    return circle
      ? { Program: (node) => context.report({ node, messageId: 'circle', data: { circle: circle.join(' -> ') } }) }
      : {};
  },
};

let circlesCache = null;
/** Each file of src/ that is in a circle, with the circle's files (relative to src/); Tarjan's components. */
function circlesOfSrc(root) {
  if (circlesCache) return circlesCache;
  const graph = new Map();
  const specifier = /(?:^|\n)\s*(?:import|export)\s[^'";]*?from\s+['"](\.[^'"]+)['"]/g;
  const walk = (dir) =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
      const full = path.join(dir, entry.name);
      return entry.isDirectory() ? walk(full) : /\.tsx?$/.test(entry.name) ? [full] : [];
    });
  for (const file of walk(root)) {
    const targets = [...readFileSync(file, 'utf8').matchAll(specifier)].map((match) => {
      const base = path.resolve(path.dirname(file), match[1]).replace(/\.js$/, '');
      return [`${base}.ts`, `${base}.tsx`, path.join(base, 'index.ts')].find((candidate) => existsSync(candidate));
    });
    graph.set(file, targets.filter(Boolean));
  }
  const index = new Map(),
    low = new Map(),
    stack = [],
    onStack = new Set();
  circlesCache = new Map();
  const visit = (v) => {
    index.set(v, index.size);
    low.set(v, index.get(v));
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) visit(w);
      if (onStack.has(w)) low.set(v, Math.min(low.get(v), low.get(w)));
    }
    if (low.get(v) !== index.get(v)) return;
    const component = [];
    let w;
    do {
      w = stack.pop();
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length < 2) return;
    const names = component.map((f) => path.relative(root, f)).sort();
    for (const f of component) circlesCache.set(f, names);
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return circlesCache;
}

/**
 * The project's own rules: import circles in src/, comment width (eslint-rules/comment-width.js)
 * and no state kept in a module of the gateway (eslint-rules/module-state.js).
 */
const tollgatePlugin = {
  rules: { 'import-circles': importCircles, 'comment-width': commentWidth, 'no-module-state': noModuleState },
};

/** The rules that check what flows out of an `any`. */
const unsafeAny = {
  '@typescript-eslint/no-unsafe-argument': 'off',
  '@typescript-eslint/no-unsafe-assignment': 'off',
  '@typescript-eslint/no-unsafe-call': 'off',
  '@typescript-eslint/no-unsafe-member-access': 'off',
  '@typescript-eslint/no-unsafe-return': 'off',
};

export default defineConfig(
  // Generated or not ours: build output, drizzle-kit's migrations, the OpenAI spec fixture, test reports.
  { ignores: ['dist/', 'drizzle/', 'test/fixtures/', 'test-results/', 'bench/results/', '.tollgate/', 'tmp/'] },
  js.configs.recommended,
  // All of typescript-eslint's recommended rules, with the ones that need types; the exceptions below say why.
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      globals: { ...globals.node },
      parserOptions: {
        // tsconfig.json's project for src/, test/, bench/ and the config files; the few .mjs/.js files outside it get a default one.
        projectService: {
          allowDefaultProject: [
            'bin/*.mjs',
            'scripts/*.mjs',
            'test/platform/runs/*.mjs',
            'eslint.config.js',
            'eslint-rules/*.js',
          ],
        },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // The two this linter is here for (both in the recommended set; named so that no later edit drops them).
      // A promise nobody awaits loses its rejection, and Node ends the process on an unhandled one. Fire-and-forget
      // is written `void promise` with a comment, and only for a function that catches its own errors.
      '@typescript-eslint/no-floating-promises': 'error',
      // An async function where a void callback is expected (an event listener, a timer) drops its rejection the same way.
      '@typescript-eslint/no-misused-promises': 'error',
      // A leading `_` names what is left unused on purpose (`const { replicas: _r, ...shape } = definition` leaves
      // fields out of `shape`); a sibling of a rest element is used by the omission itself.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // Off: an in-memory twin of an async interface (the memory gate beside the Redis one, the in-process cache,
      // the unsandboxed runner) is `async` without an `await` so that a throw stays a rejection, as in its twin.
      // The rule's fix (drop `async`) would turn those rejections into synchronous throws: noise, and a risk.
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    // The layers point one way, and no module reaches itself again through its imports (type imports aside:
    // they vanish at build time). Only src/ has layers; tests and benchmarks may import any of it.
    files: ['src/**'],
    plugins: { 'import-x': importX, tollgate: tollgatePlugin },
    settings: {
      // The TypeScript resolver maps an import's `.js` to its `.ts` source; the parser lets no-cycle read the sources it reaches.
      'import-x/resolver-next': [createTypeScriptImportResolver()],
      'import-x/extensions': ['.ts', '.tsx'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts', '.tsx'] },
    },
    rules: {
      'import-x/no-restricted-paths': ['error', { zones: layerZones() }],
      'import-x/no-cycle': 'error',
      // Circles of any kind, type-only imports counted (importCircles, above).
      'tollgate/import-circles': 'error',
    },
  },
  {
    // What the gateway remembers between requests is a service's, made in services.ts with its
    // bound and its key: no module of the gateway keeps state of its own (a `let`, a Map, a cache,
    // an agent at its top level). eslint-rules/module-state.js; test/ci/module-state.test.ts.
    files: ['src/gateway/**'],
    plugins: { tollgate: tollgatePlugin },
    rules: { 'tollgate/no-module-state': 'error' },
  },
  {
    // The gateway's settings are read in config/ alone; the environment where a program starts, and by the CLI's own
    // settings (a program of its own, on people's machines; PATH to find ripgrep). CONTRIBUTING.md, "Size".
    files: ['src/**'],
    ignores: [
      'src/config/**',
      'src/main.ts',
      'src/sim/main.ts',
      'src/surfaces/cli/settings.ts',
      'src/coding-agent/settings.ts',
      'src/coding-agent/tools/index.ts',
    ],
    rules: {
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'env', message: 'Settings are read in src/config/ and passed in.' },
      ],
    },
  },
  {
    // Handlers stay thin: a surface asks a service of gateway/ or platform/, it builds no query of its own.
    files: ['src/surfaces/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'drizzle-orm', message: 'A surface builds no query: ask (or add) a service method.' }],
          patterns: [
            { group: ['drizzle-orm/*'], message: 'A surface builds no query: ask (or add) a service method.' },
          ],
        },
      ],
      'no-restricted-syntax': [
        'error',
        {
          selector: "MemberExpression[property.name='db'][object.name=/^(services|deps)$/]",
          message: 'A surface does not reach the store: ask (or add) a service method.',
        },
        {
          selector: "VariableDeclarator[init.name=/^(services|deps)$/] > ObjectPattern > Property[key.name='db']",
          message: 'A surface does not reach the store: ask (or add) a service method.',
        },
        {
          // One name per concept: what a surface reads of the services is `deps: <Surface>Deps` (its deps.ts).
          selector: "Identifier[name='services']",
          message: "A surface's services are `deps`, typed by its deps.ts (`V1Deps`, `PortalDeps`, …).",
        },
      ],
    },
  },
  {
    // Tests and benchmarks read the gateway's JSON answers as `any` on purpose: the assertions that follow are the
    // check, and typing each answer first would only repeat them. They also pass malformed input `as any`.
    // The source keeps these rules: src/ has no `any`.
    files: ['test/**', 'bench/**'],
    rules: { ...unsafeAny, '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // Plain JavaScript has no types to keep: what it imports (the built CLI in dist/) is `any` to the checker.
    files: ['**/*.mjs', '**/*.js'],
    rules: unsafeAny,
  },
  {
    // Comments end by column 100 (`npx eslint --fix` fills a paragraph again, keeping lists, code and tables).
    files: ['**/*.ts', '**/*.tsx'],
    plugins: { tollgate: tollgatePlugin },
    rules: { 'tollgate/comment-width': 'error' },
  },
  {
    // Size, so a newcomer can read a part at once: no function over 80 lines and no file over 300 in src/ (the drizzle
    // schema too: one file per domain, `src/shared/db/*-schema.ts`). A declarative table inside a function says so
    // where it is, with an eslint-disable comment and its reason.
    files: ['src/**'],
    rules: { 'max-lines-per-function': ['error', { max: 80 }], 'max-lines': ['error', { max: 300 }] },
  },
  {
    // JSX markup may be a longer function: a page component is its markup. The portal's pages are the
    // `*-page(s).tsx` files and the layout; they keep the 300 lines a file.
    files: ['src/surfaces/portal/*page.tsx', 'src/surfaces/portal/*pages.tsx', 'src/surfaces/portal/layout.tsx'],
    rules: { 'max-lines-per-function': 'off' },
  },
);
