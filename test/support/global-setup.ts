import { chmod, mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { startEmbeddedPostgres } from '../../db/embedded';
import { migrate } from '../../db/migrate';
import { ensureDatabase } from '../../scripts/local-database';
import { findBinary, startTemporalDevServer } from '../../scripts/temporal-server';
import { freePort } from './ports';

export const TEMPLATE_DATABASE = 'wallet_template';

/**
 * Once per `npm test`: a throwaway Postgres cluster with a migrated template database (each
 * test file clones its own database from it), a Temporal development server in memory, and the
 * workflow bundle. Its own ports and folders, so it runs beside an `npm start`.
 */
export default async function globalSetup(): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'wallet-test-'));
  await chmod(dir, 0o755);
  const [pgPort, temporalPort] = [await freePort(), await freePort()];
  const postgres = await startEmbeddedPostgres({
    dir: path.join(dir, 'pg'),
    port: pgPort,
    fast: true,
  });
  await ensureDatabase(postgres.url('postgres'), TEMPLATE_DATABASE);
  await migrate(postgres.url(TEMPLATE_DATABASE));
  const temporal = await startTemporalDevServer({ port: temporalPort });
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('../../workflows'),
    logger: {
      log: () => undefined,
      trace: () => undefined,
      debug: () => undefined,
      info: () => undefined,
      warn: () => undefined,
      error: () => undefined,
    },
  });
  const bundlePath = path.join(dir, 'workflow-bundle.js');
  await writeFile(bundlePath, code);

  process.env.TEST_PG_SERVER_URL = postgres.url('postgres');
  process.env.TEST_TEMPORAL_ADDRESS = temporal.address;
  process.env.TEST_WORKFLOW_BUNDLE = bundlePath;
  process.env.TEST_TIME_SKIPPING_SERVER = findBinary('temporal-test-server');
  (globalThis as { __walletTest?: unknown }).__walletTest = { postgres, temporal, dir };
}
