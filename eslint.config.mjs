// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { commentLines } from './tools/lint/comment-lines.cjs';

// What each folder may import is dependency-cruiser's (.dependency-cruiser.cjs, in npm run lint).

/**
 * A module of the Temporal SDK past its package's entry point: its internals, which any release
 * may change. The OpenTelemetry interceptors document their `lib/` entry points.
 * `\x2F` is a slash: esquery's regular expressions cannot hold one.
 */
const SDK_INTERNALS =
  '^@temporalio\\x2F(?!interceptors-opentelemetry\\x2Flib\\x2F(?:worker|client|workflow)$)[^\\x2F]+\\x2F.';
const SDK_ONLY_PUBLIC =
  "The Temporal SDK's public API only: import the package itself, not its internals.";

export default tseslint.config(
  {
    ignores: [
      'node_modules/**',
      '.data/**',
      '.tools/**',
      'coverage/**',
      'dashboard/dist/**',
      'clients/typescript/dist/**',
      'eslint.config.mjs',
      'jest.config.js',
      '.dependency-cruiser.cjs',
      'tools/lint/*.cjs',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    plugins: { house: { rules: { 'comment-lines': commentLines } } },
    rules: {
      'house/comment-lines': 'error',
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      'no-console': 'error',
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            { regex: SDK_INTERNALS, message: SDK_ONLY_PUBLIC },
            {
              regex: '^@temporalio/core-bridge(/|$)',
              message: 'Not a dependency of the engine: the SDK uses it inside.',
            },
          ],
        },
      ],
      'no-restricted-syntax': [
        'error',
        // require(), require.resolve(), import() and jest.mock() of an internal module.
        {
          selector: `CallExpression > Literal[value=/${SDK_INTERNALS}/]`,
          message: SDK_ONLY_PUBLIC,
        },
        {
          selector: `ImportExpression > Literal[value=/${SDK_INTERNALS}/]`,
          message: SDK_ONLY_PUBLIC,
        },
        ...[
          'Identifier[name=/^__TEMPORAL/]',
          'Literal[value=/__TEMPORAL/]',
          'TemplateElement[value.raw=/__TEMPORAL/]',
          "Identifier[name='globalHandlers']",
        ].map((selector) => ({
          selector,
          message: "The Temporal SDK's globals are its internals: use its public API.",
        })),
      ],
    },
  },
  {
    files: ['tools/scripts/**/*.ts', 'tools/bench/**/*.ts', 'tools/cli/**/*.ts', 'test/**/*.ts'],
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
  {
    // Generated from the OpenAPI document, whose descriptions are the reference.
    files: ['clients/typescript/src/schema.d.ts'],
    rules: { 'house/comment-lines': 'off' },
  },
);
