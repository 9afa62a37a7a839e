/**
 * Three projects: `unit` needs no server; `engine` starts a throwaway Postgres and Temporal dev
 * server first; `tooling` tests the benchmark, chaos test, harness and scripts (docs/testing.md).
 */
const shared = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  transform: { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2023' } }] },
  // The TypeScript client's sources import each other as `./x.js`, as its ES module build needs.
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  setupFilesAfterEnv: ['<rootDir>/test/support/roarr-teardown.ts'],
};

/** @type {import('jest').Config} */
module.exports = {
  maxWorkers: 2,
  // Each test file's modules stay reachable after it ends (jest's ES module support), so a worker
  // grows with every file and takes long to exit; a worker past this size is replaced between files.
  workerIdleMemoryLimit: '640MB',
  // A global option: jest-circus reads only the top-level value, never a project's.
  testTimeout: 60_000,
  projects: [
    {
      ...shared,
      displayName: 'unit',
      testMatch: ['<rootDir>/test/unit/**/*.test.ts', '<rootDir>/test/serverless/**/*.test.ts'],
    },
    {
      ...shared,
      displayName: 'engine',
      testMatch: ['<rootDir>/test/**/*.test.ts'],
      testPathIgnorePatterns: [
        '/node_modules/',
        '<rootDir>/test/unit/',
        '<rootDir>/test/tooling/',
        '<rootDir>/test/serverless/',
      ],
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
    },
    {
      ...shared,
      displayName: 'tooling',
      testMatch: ['<rootDir>/test/tooling/**/*.test.ts'],
      // The workflow bundle only: `npm start` and the chaos test start their own servers.
      globalSetup: '<rootDir>/test/support/tooling-setup.ts',
      globalTeardown: '<rootDir>/test/support/tooling-teardown.ts',
    },
  ],
};
