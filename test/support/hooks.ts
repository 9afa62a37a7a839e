import { updateApplication, type ApplicationUpdate } from '../../src/db/applications';
import {
  createTestApp,
  startTestEngine,
  type TestApp,
  type TestAppOptions,
  type TestEngine,
  type TestEngineOptions,
} from './engine';
import { clientFor, type ApiClient } from './http';

/**
 * The engine of a test file or describe block, started in `beforeAll`, closed in `afterAll`, and
 * filled in place: read it in hooks and tests only. Give `options` as a function to compute them
 * after servers an earlier `beforeAll` started (docs/testing.md "The helpers").
 */
export function useTestEngine(
  options: TestEngineOptions | (() => TestEngineOptions) = {},
): TestEngine {
  const engine = {} as TestEngine;
  let started: TestEngine | undefined;
  beforeAll(async () => {
    started = await startTestEngine(typeof options === 'function' ? options() : options);
    Object.assign(engine, started);
  });
  afterAll(async () => started?.close());
  return engine;
}

export type TestAppContext = {
  app: TestApp;
  /** The application's Test Mode client. */
  api: ApiClient;
  /** The application's Live Mode client. */
  live: ApiClient;
};

/**
 * An application of `engine` (`createTestApp`) with `settings` applied, and its clients, made in
 * `beforeAll` after the engine's. Each object answered is filled in place, as `useTestEngine`'s.
 */
export function useTestApp(
  engine: TestEngine,
  options: TestAppOptions & { settings?: ApplicationUpdate } = {},
): TestAppContext {
  const context: TestAppContext = {
    app: {} as TestApp,
    api: {} as ApiClient,
    live: {} as ApiClient,
  };
  beforeAll(async () => {
    const app = await createTestApp(engine.pool, options);
    if (options.settings) await updateApplication(engine.pool, app.id, options.settings);
    Object.assign(context.app, app);
    Object.assign(context.api, clientFor(engine.url, app));
    Object.assign(context.live, clientFor(engine.url, app, 'live'));
  });
  return context;
}
