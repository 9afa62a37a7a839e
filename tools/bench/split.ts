import { Client, Connection } from '@temporalio/client';
import { freePort } from '../../src/worker/ports';
import {
  apiReady,
  engineEnvironment,
  startEngineProcess,
  waitUntilReady,
  workerPolling,
} from '../harness/split';
import { countAsEngine } from './cpu';
import type { DataConverter } from '@temporalio/common';
import type { Config } from '../../src/config';

/** How long `npm run api` or `npm run worker` may take to be ready. */
const START_MS = 120_000;

/**
 * The split shape: `npm run api` and a worker per task queue (payments, webhooks, maintenance), as
 * docs/operations.md sizes production and the compose file runs them, configured by the in-process engine's environment; a payments queue of its own, so that
 * nothing left by the single shape's worker reaches it.
 */
export async function startSplit(servers: {
  env: Record<string, string>;
  config: Config;
  temporal: { address: string };
  dataConverter: DataConverter;
}): Promise<{
  client: Client;
  apiUrl: string;
  apiPid: number;
  workerPid: number;
  maintenanceWorkerPid: number;
  stopWorker: () => Promise<void>;
  close: () => Promise<void>;
}> {
  const { config } = servers;
  const taskQueue = `${config.temporal.taskQueue}-split`;
  const port = await freePort();
  const env = engineEnvironment({
    ...servers.env,
    PORT: String(port),
    TEMPORAL_TASK_QUEUE: taskQueue,
    // The worker's reconciliation schedule would run in the middle of a row; not the shape's.
    RECONCILIATION_INTERVAL_SECONDS: String(24 * 3600),
  });
  const apiUrl = `http://127.0.0.1:${port}`;
  const connection = await Connection.connect({ address: servers.temporal.address });
  const stops: (() => Promise<void>)[] = [() => connection.close()];
  const close = async () => {
    for (const stop of stops.splice(0).reverse()) await stop().catch(() => undefined);
  };
  try {
    // Webhook deliveries in a worker of their own, as docs/operations.md sizes production: a
    // backlog of them then takes neither the payments worker's slots nor its event loop.
    const worker = startEngineProcess('worker', env, { args: ['--queues', 'payments'] });
    stops.push(() => worker.stop());
    const maintenanceWorker = startEngineProcess('worker', env, {
      args: ['--queues', 'maintenance'],
    });
    stops.push(() => maintenanceWorker.stop());
    const webhookWorker = startEngineProcess('worker', env, { args: ['--queues', 'webhooks'] });
    stops.push(() => webhookWorker.stop());
    const api = startEngineProcess('api', env);
    stops.push(() => api.stop());
    for (const pid of [worker.pid, maintenanceWorker.pid, webhookWorker.pid, api.pid]) {
      countAsEngine(pid);
    }
    await Promise.all([
      waitUntilReady(
        worker,
        () => workerPolling(connection, config.temporal.namespace, taskQueue, worker.pid),
        START_MS,
      ),
      waitUntilReady(
        maintenanceWorker,
        () =>
          workerPolling(
            connection,
            config.temporal.namespace,
            config.temporal.maintenanceTaskQueue,
            maintenanceWorker.pid,
          ),
        START_MS,
      ),
      waitUntilReady(
        webhookWorker,
        () =>
          workerPolling(
            connection,
            config.temporal.namespace,
            config.temporal.webhookTaskQueue,
            webhookWorker.pid,
          ),
        START_MS,
      ),
      waitUntilReady(api, () => apiReady(apiUrl), START_MS),
    ]);
    return {
      client: new Client({
        connection,
        namespace: config.temporal.namespace,
        dataConverter: servers.dataConverter,
      }),
      apiUrl,
      apiPid: api.pid,
      workerPid: worker.pid,
      maintenanceWorkerPid: maintenanceWorker.pid,
      stopWorker: async () => {
        await Promise.all([worker.stop(), maintenanceWorker.stop(), webhookWorker.stop()]);
      },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
