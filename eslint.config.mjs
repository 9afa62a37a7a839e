// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// What each folder may import is dependency-cruiser's (.dependency-cruiser.cjs, in npm run lint).
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
    files: ['tools/scripts/**/*.ts', 'tools/bench/**/*.ts', 'cli/**/*.ts', 'test/**/*.ts'],
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
