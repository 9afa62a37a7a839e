import { createTestApp, startTestEngine, type TestApp, type TestEngine } from './engine';
import { FakeMonimeServer } from './fake-monime';
import { clientFor, type ApiClient } from './http';

export type MonimeEngine = {
  monime: FakeMonimeServer;
  engine: TestEngine;
  app: TestApp;
  /** The application's Live Mode client: its mobile money goes to the fake. */
  live: ApiClient;
};

/**
 * The engine whose Live Mode mobile money goes to a fake Monime (`fake-monime.ts`) that signs
 * its notifications with `webhookSecret`, with `env` added to the engine's configuration, and
 * an application. Close the engine, then the fake, in afterAll.
 */
export async function startMonimeEngine(
  webhookSecret: string,
  env: Record<string, string> = {},
): Promise<MonimeEngine> {
  const monime = await FakeMonimeServer.start({
    accessToken: 'tok_live',
    spaceId: 'spc_1',
    webhookSecret,
  });
  const engine = await startTestEngine({
    env: {
      MONIME_API_URL: monime.baseUrl,
      MONIME_ACCESS_TOKEN: 'tok_live',
      MONIME_SPACE_ID: 'spc_1',
      MONIME_WEBHOOK_SECRET: webhookSecret,
      ...env,
    },
  }).catch(async (error: unknown) => {
    await monime.close();
    throw error;
  });
  const app = await createTestApp(engine.pool);
  return { monime, engine, app, live: clientFor(engine.url, app, 'live') };
}
