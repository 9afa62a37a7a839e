import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { formatPayloadKeys, type Config } from '../../src/config';
import { payloadKeys } from '../../src/temporal/data-converter';
import { waitFor } from './wait';

const root = path.resolve(__dirname, '../..');

export type WorkerProcess = {
  child: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far. */
  output: () => string;
  /** SIGTERM, then waits for the process to exit. */
  stop: () => Promise<void>;
};

/**
 * `npm run worker -- <args>` as production runs it (a child process), against `config`'s
 * database, Temporal and task queues, with `env` added; resolves once it says it is running. It
 * shares the payload and webhook keys of `config`, so that the test's API and it read each other.
 */
export async function startWorkerProcess(
  config: Config,
  options: { dataDir: string; env?: Record<string, string>; args?: string[] },
): Promise<WorkerProcess> {
  const args = ['--import', 'tsx', 'src/worker/main.ts', ...(options.args ?? [])];
  const child = spawn(process.execPath, args, {
    cwd: root,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DATA_DIR: options.dataDir,
      TEMPORAL_PAYLOAD_KEYS: formatPayloadKeys(payloadKeys(config)),
      WEBHOOK_PRIVATE_ALLOWLIST: config.webhooks.privateAllowlist.join(','),
      ...(config.webhooks.secretKey
        ? { WEBHOOK_SECRET_KEY: config.webhooks.secretKey.toString('base64') }
        : {}),
      HOST: '127.0.0.1',
      DATABASE_URL: config.database.url,
      TEMPORAL_ADDRESS: config.temporal.address,
      TEMPORAL_TASK_QUEUE: config.temporal.taskQueue,
      TEMPORAL_WEBHOOK_TASK_QUEUE: config.temporal.webhookTaskQueue,
      TEMPORAL_MAINTENANCE_TASK_QUEUE: config.temporal.maintenanceTaskQueue,
      ...(process.env.TEST_WORKFLOW_BUNDLE
        ? { TEMPORAL_WORKFLOW_BUNDLE: process.env.TEST_WORKFLOW_BUNDLE }
        : {}),
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  };
  const up = await waitFor(
    () => output.includes('worker running') || child.exitCode !== null,
    90_000,
  );
  if (!up || child.exitCode !== null) {
    await stop();
    throw new Error(`the worker did not come up:\n${output}`);
  }
  return { child, output: () => output, stop };
}
