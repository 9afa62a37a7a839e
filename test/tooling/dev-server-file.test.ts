import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Client, Connection } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import { freePort } from '../../src/worker/ports';
import { testDataConverter } from '../support/time-skipping';
import { listWorkflowIds } from '../support/wait';
import {
  startTemporalDevServer,
  UNUSED_VISIBILITY_INDEXES,
  visibilityIndexesOf,
  type DevServer,
} from '../../tools/harness/temporal';
import { SearchAttributes } from '../../src/workflows/shared';

/** The dev server on a file, as `npm start` runs it: without the visibility indexes nothing queries. */

let dir: string;
let dbFile: string;
let port: number;
let server: DevServer | undefined;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'dev-server-file-'));
  dbFile = path.join(dir, 'temporal.sqlite');
  port = await freePort();
});
afterAll(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** The names of the visibility table's indexes in the file (read while no server writes it). */
function visibilityIndexes(file = dbFile): Set<string> {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    return visibilityIndexesOf(db);
  } finally {
    db.close();
  }
}

async function withClient<T>(run: (client: Client) => Promise<T>): Promise<T> {
  const connection = await Connection.connect({ address: server!.address });
  try {
    return await run(new Client({ connection, dataConverter: testDataConverter() }));
  } finally {
    await connection.close();
  }
}

describe('the dev server on a file', () => {
  const workflowId = `visibility-${randomUUID()}`;

  it('lays out a new file, drops only the unused visibility indexes, and still answers every List Filter', async () => {
    server = await startTemporalDevServer({ port, dbFile });
    await withClient(async (client) => {
      // No worker polls this queue: the workflow stays running, its visibility row written.
      await client.workflow.start('transferWorkflow', {
        taskQueue: `nobody-${randomUUID()}`,
        workflowId,
        args: [],
        typedSearchAttributes: new TypedSearchAttributes([
          { key: SearchAttributes.PaymentType, value: 'transfer' },
          { key: SearchAttributes.PaymentStatus, value: 'pending' },
        ]),
      });
      // A kept index (a Keyword slot), and a dropped one (root workflow id): both answer.
      expect(
        await listWorkflowIds(client, `PaymentType = "transfer" AND PaymentStatus = "pending"`),
      ).toEqual([workflowId]);
      expect(await listWorkflowIds(client, `RootWorkflowId = "${workflowId}"`)).toEqual([
        workflowId,
      ]);
    });
    await server.stop();
    server = undefined;

    const indexes = visibilityIndexes();
    for (const name of UNUSED_VISIBILITY_INDEXES) expect(indexes.has(name)).toBe(false);
    for (const kept of ['default_idx', 'by_workflow_id', 'by_workflow_type', 'by_status']) {
      expect(indexes.has(kept)).toBe(true);
    }
    for (let n = 1; n <= 10; n += 1) {
      expect(indexes.has(`by_keyword_${String(n).padStart(2, '0')}`)).toBe(true);
    }
  });

  it("names indexes the pinned CLI's schema has: a file left whole keeps every one of them", async () => {
    const whole = path.join(dir, 'whole.sqlite');
    server = await startTemporalDevServer({ port, dbFile: whole, visibilityIndexes: 'all' });
    await server.stop();
    server = undefined;
    const indexes = visibilityIndexes(whole);
    expect(UNUSED_VISIBILITY_INDEXES.filter((name) => !indexes.has(name))).toEqual([]);
    // And the engine's file differs from it by exactly those.
    expect(indexes.size - UNUSED_VISIBILITY_INDEXES.length).toBe(visibilityIndexes().size);
  });

  it('starts again on the same file with its workflows, and drops nothing more', async () => {
    const before = visibilityIndexes();
    const lines: string[] = [];
    server = await startTemporalDevServer({ port, dbFile, log: (line) => lines.push(line) });
    expect(lines.filter((l) => l.includes('unused visibility indexes'))).toEqual([]);
    await withClient(async (client) => {
      const description = await client.workflow.getHandle(workflowId).describe();
      expect(description.status.name).toBe('RUNNING');
      expect(await listWorkflowIds(client, `PaymentType = "transfer"`)).toEqual([workflowId]);
    });
    await server.stop();
    server = undefined;
    expect(visibilityIndexes()).toEqual(before);
  });
});
