// @ts-check
// ESLint for the whole tree (src/, test/, bench/, bin/ and the config files), with
// typescript-eslint's type-aware rules. `npm run lint` runs it with `prettier --check`;
// .ci/run fails on any finding. Formatting is Prettier's alone: no rule here is about layout.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

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
        projectService: { allowDefaultProject: ['bin/*.mjs', 'test/platform/runs/*.mjs', 'eslint.config.js'] },
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
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true }],
      // Off: an in-memory twin of an async interface (the memory gate beside the Redis one, the in-process cache,
      // the unsandboxed runner) is `async` without an `await` so that a throw stays a rejection, as in its twin.
      // The rule's fix (drop `async`) would turn those rejections into synchronous throws: noise, and a risk.
      '@typescript-eslint/require-await': 'off',
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
    // Size, so a newcomer can read a part at once: no function over 80 lines and no file over 300 in src/. The one
    // file allowed to be longer is the drizzle schema (one declarative table per file would scatter the foreign keys).
    // A declarative table inside a function says so where it is, with an eslint-disable comment and its reason.
    files: ['src/**'],
    ignores: ['src/shared/db/schema.ts'],
    rules: { 'max-lines-per-function': ['error', { max: 80 }], 'max-lines': ['error', { max: 300 }] },
  },
  {
    // JSX markup may be a longer function: a page component is its markup. The portal's pages are the
    // `*-page(s).tsx` files and the layout; they keep the 300 lines a file.
    files: ['src/surfaces/portal/*page.tsx', 'src/surfaces/portal/*pages.tsx', 'src/surfaces/portal/layout.tsx'],
    rules: { 'max-lines-per-function': 'off' },
  },
);
