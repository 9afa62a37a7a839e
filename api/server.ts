import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import { temporalAddress, type Config } from '../config';
import { createDatabasePool } from '../db/pool';
import { createProviders } from '../providers';
import { createApp } from './app';
import type { Logger } from '../observability/logger';

export type RunningApi = { url: string; server: Server; close: () => Promise<void> };

/** Starts the API: its own pool and Temporal client, listening on the configured port. */
export async function startApi(
  config: Config,
  logger: Logger,
  databaseUrl: string,
): Promise<RunningApi> {
  const pool = await createDatabasePool(databaseUrl, { maximumPoolSize: config.database.poolSize });
  const connection = await Connection.connect({ address: temporalAddress(config) });
  const temporal = new Client({ connection, namespace: config.temporal.namespace });
  const providers = createProviders({ config, pool });
  const app = createApp({ config, pool, temporal, logger, providers });
  const server = app.listen(config.api.port, config.api.host);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  server.keepAliveTimeout = 65_000;
  const { port } = server.address() as AddressInfo;
  const host = config.api.host === '0.0.0.0' ? '127.0.0.1' : config.api.host;
  return {
    url: `http://${host}:${port}`,
    server,
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await connection.close();
      await pool.end();
    },
  };
}
