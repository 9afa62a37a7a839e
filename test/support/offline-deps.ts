import { Client } from '@temporalio/client';
import type { ApiDeps } from '../../src/api/deps';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/observability/logger';
import { createProviders } from '../../src/providers';

/**
 * What building the API's routes needs, without a database or Temporal (a lazy client never
 * connects): for tests that read the route tables only.
 */
export function offlineDeps(): ApiDeps {
  const config = loadConfig({ DATABASE_URL: 'postgres://unused@127.0.0.1:1/unused' });
  const pool = {} as never;
  return {
    config,
    pool,
    temporal: new Client(),
    logger: createLogger('silent'),
    providers: createProviders({ config, pool }),
  };
}
