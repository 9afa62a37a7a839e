import { startScratchServers, type ScratchServers } from '../../tools/harness/scratch';
import { loadConfig } from '../../src/config';
import { findBinary, writeWorkflowBundle } from '../../tools/harness/temporal';
import { payloadKeys } from '../../src/temporal/data-converter';

export const TEMPLATE_DATABASE = 'wallet_template';

/**
 * Once per run of the tests that need servers (the `engine` Jest project): a throwaway
 * Postgres cluster with a migrated template database (each test file clones its own database
 * from it), a Temporal development server in memory, and the workflow bundle.
 */
export default async function globalSetup(): Promise<void> {
  // The payload key of the data directory, made once here: the test files, two at a time,
  // would otherwise race to make it.
  payloadKeys(loadConfig());
  const servers = await startScratchServers({
    prefix: 'wallet-test-',
    database: TEMPLATE_DATABASE,
    fast: true,
  });
  try {
    process.env.TEST_WORKFLOW_BUNDLE = await writeWorkflowBundle(servers.dir);
  } catch (error) {
    await servers.stop();
    throw error;
  }
  process.env.TEST_PG_SERVER_URL = servers.postgres.url('postgres');
  process.env.TEST_TEMPORAL_ADDRESS = servers.temporal.address;
  process.env.TEST_TIME_SKIPPING_SERVER = findBinary('temporal-test-server');
  (globalThis as { __walletTest?: ScratchServers }).__walletTest = servers;
}
