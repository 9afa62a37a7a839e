/**
 * The dev server's visibility schema, for `--profile`: one server as `npm start` runs it, one with
 * the CLI's whole schema, bursts alternating between them so that the machine's drift falls on
 * both alike; each server's CPU is read from its own /proc entry.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { createEngineWorker } from '../../src/worker/engine-worker';
import { freePort } from '../../src/worker/ports';
import { startTemporalDevServer, type DevServer } from '../harness/temporal';
import { processCpuMs } from './cpu';
import { progress, transferAttributes, type Engine } from './engine';
import { closedLoop } from './load';

const BURST_S = 3;
const ROUNDS = 6;
const CONCURRENCY = 32;

type Variant = {
  name: string;
  server: DevServer;
  client: Client;
  taskQueue: string;
  stop: () => Promise<void>;
};

export type VisibilityCost = {
  shape: string;
  /** Per variant: workflows a second over its bursts, and its server's CPU ms per workflow. */
  variants: { name: string; rate: number; serverMs: number }[];
};

/** `all`: the CLI's whole schema; otherwise the file as `npm start` runs it. */
async function startVariant(engine: Engine, dir: string, all: boolean): Promise<Variant> {
  const server = await startTemporalDevServer({
    port: await freePort(),
    dbFile: path.join(dir, `${all ? 'all' : 'dropped'}.sqlite`),
    ...(all ? { visibilityIndexes: 'all' as const } : {}),
  });
  const connection = await NativeConnection.connect({ address: server.address });
  const taskQueue = `bench-visibility-${randomUUID()}`;
  const worker = await createEngineWorker({
    connection,
    taskQueue,
    workflowBundle: { code: engine.benchBundle },
    activities: { noop: () => Promise.resolve() },
    dataConverter: engine.dataConverter,
  });
  const running = worker.run();
  const client = new Client({ connection, dataConverter: engine.dataConverter });
  return {
    name: all ? "the CLI's whole schema" : 'as npm start runs it',
    server,
    client,
    taskQueue,
    stop: async () => {
      worker.shutdown();
      await running;
      await connection.close();
      await server.stop();
    },
  };
}

/**
 * Empty workflows, and workflows of the transfer's shape with the payment search attributes,
 * against both servers: the rate each sustains and what each workflow costs its server.
 */
export async function visibilitySchemaCost(
  engine: Engine,
  signal?: AbortSignal,
): Promise<VisibilityCost[]> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-visibility-'));
  const variants: Variant[] = [];
  try {
    progress('profile: two dev servers on files, with and without the unused visibility indexes');
    variants.push(await startVariant(engine, dir, false));
    variants.push(await startVariant(engine, dir, true));
    const attributes = transferAttributes();
    const shapes = [
      ['empty workflow', 'emptyWorkflow', false],
      ['transfer-shaped, with the payment search attributes', 'transferShapedWorkflow', true],
    ] as const;
    const costs: VisibilityCost[] = [];
    for (const [shape, workflowType, withAttributes] of shapes) {
      progress(`profile: visibility schema, ${shape}`);
      const totals = variants.map(() => ({ ok: 0, seconds: 0, cpuMs: 0 }));
      const burst = async (i: number, counted: boolean) => {
        const { client, server, taskQueue } = variants[i]!;
        const before = processCpuMs(server.pid);
        const began = performance.now();
        const result = await closedLoop({
          concurrency: CONCURRENCY,
          durationS: counted ? BURST_S : 1,
          ...(signal ? { signal } : {}),
          send: async () => {
            await client.workflow.execute(workflowType, {
              taskQueue,
              workflowId: `bench-visibility-${randomUUID()}`,
              ...(withAttributes ? { typedSearchAttributes: attributes } : {}),
            });
          },
        });
        if (!counted) return;
        totals[i]!.ok += result.ok;
        totals[i]!.seconds += (performance.now() - began) / 1000;
        totals[i]!.cpuMs += processCpuMs(server.pid) - before;
      };
      for (const i of variants.keys()) await burst(i, false);
      for (let round = 0; round < ROUNDS; round += 1) {
        const order = round % 2 ? [1, 0] : [0, 1];
        for (const i of order) await burst(i, true);
      }
      costs.push({
        shape,
        variants: variants.map((v, i) => ({
          name: v.name,
          rate: totals[i]!.ok / totals[i]!.seconds,
          serverMs: totals[i]!.cpuMs / Math.max(1, totals[i]!.ok),
        })),
      });
    }
    return costs;
  } finally {
    for (const v of variants) await v.stop().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  }
}

export function renderVisibilityCost(costs: readonly VisibilityCost[]): string[] {
  const lines = [
    `  The dev server's visibility schema: two servers on files, bursts of ${BURST_S}s, ` +
      `${CONCURRENCY} in flight, alternating, ${ROUNDS} each (workflows/s, server CPU per workflow)`,
  ];
  for (const cost of costs) {
    lines.push(
      `    ${cost.shape.padEnd(56)} ` +
        cost.variants
          .map((v) => `${v.name}: ${v.rate.toFixed(1)}/s, ${v.serverMs.toFixed(2)} ms`)
          .join('; '),
    );
  }
  return lines;
}
