import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import { writeWorkflowBundle } from '../../tools/harness/temporal';
import { payloadKeys } from '../../src/temporal/data-converter';

/**
 * Once per run of the `tooling` Jest project: the workflow bundle that the engines these tests
 * start (`npm start`, the chaos test's) load instead of bundling at every start. When the
 * `engine` project's global setup ran first, its bundle serves.
 */
export default async function toolingSetup(): Promise<void> {
  // The payload key of the data directory, made once here rather than raced for by two files.
  payloadKeys(loadConfig());
  if (process.env.TEST_WORKFLOW_BUNDLE) return;
  const dir = await mkdtemp(path.join(os.tmpdir(), 'wallet-tooling-'));
  process.env.TEST_WORKFLOW_BUNDLE = await writeWorkflowBundle(dir);
  (globalThis as { __walletToolingDir?: string }).__walletToolingDir = dir;
}
