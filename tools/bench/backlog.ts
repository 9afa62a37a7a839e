/**
 * Row (3q)'s backlog: webhook deliveries to a loopback endpoint that accepts and never answers,
 * so that each attempt holds its slot until its timeout, the way a dead merchant endpoint does.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { sql } from 'slonik';
import { z } from 'zod';
import { startWebhookDelivery } from '../../src/temporal/webhook-deliveries';
import { progress, type Engine, type Fixture } from './engine';
import { failure, type HttpClient } from './senders';

/** The event type the backlog's subscription selects, and only it: transfers' events stay out. */
const BACKLOG_EVENT = 'escrow.held';

export type SilentEndpoint = { url: string; close: () => Promise<void> };

/** A TCP server on loopback that accepts every connection and never writes a byte. */
export async function silentEndpoint(): Promise<SilentEndpoint> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/never`,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Delivery workflows started at once, as the relay starts them. */
const START_CONCURRENCY = 16;

/**
 * Subscribes `url` and writes `count` events it selects, already relayed, then starts their
 * delivery workflows as the relay does: a relay starved by the backlog cannot slow the setup.
 */
export async function backUpDeliveries(options: {
  engine: Engine;
  fixture: Fixture;
  api: HttpClient;
  url: string;
  count: number;
}): Promise<void> {
  const { engine, fixture, count } = options;
  const subscription = await options.api.post('/api/v1/webhooks/subscriptions', {
    url: options.url,
    events: [BACKLOG_EVENT],
  });
  if (subscription.status !== 201) throw failure('subscribe', subscription);
  const subscriptionId = (subscription.body as { id: string }).id;
  const eventIds = await engine.pool.anyFirst(sql.type(z.object({ id: z.string() }))`
    WITH written AS (
      INSERT INTO events (id, application_id, mode, type, data, relayed_at)
      SELECT gen_random_uuid(), ${fixture.applicationId}, 'test', ${BACKLOG_EVENT}, '{}'::jsonb,
             now()
      FROM generate_series(1, ${count})
      RETURNING id)
    INSERT INTO webhook_deliveries (event_id, subscription_id)
    SELECT id, ${subscriptionId} FROM written
    RETURNING event_id AS id`);
  progress(`   starting ${count} deliveries to an endpoint that never answers`);
  const taskQueue = engine.config.temporal.webhookTaskQueue;
  for (let i = 0; i < eventIds.length; i += START_CONCURRENCY) {
    await Promise.all(
      eventIds
        .slice(i, i + START_CONCURRENCY)
        .map((eventId) =>
          startWebhookDelivery(engine.client, taskQueue, { eventId, subscriptionId }),
        ),
    );
  }
  await backedUp(engine, subscriptionId, count);
}

/** How long the backlog may take to be in place before the row gives up. */
const SETTLE_LIMIT_MS = 15 * 60_000;

/**
 * Waits until every delivery has been tried or put back in the queue once (it has a next
 * attempt time): the backlog is then backed up, each delivery waiting on its endpoint.
 */
async function backedUp(engine: Engine, subscriptionId: string, count: number): Promise<void> {
  const started = performance.now();
  for (let seen = -1; ;) {
    const waiting = await engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM webhook_deliveries
      WHERE subscription_id = ${subscriptionId}
        AND (attempts > 0 OR next_attempt_at IS NOT NULL)`);
    const seconds = (performance.now() - started) / 1000;
    if (waiting !== seen && (waiting === count || Math.floor(seconds) % 15 === 0)) {
      progress(
        `   ${waiting} of ${count} deliveries tried or queued after ${seconds.toFixed(0)} s`,
      );
      seen = waiting;
    }
    if (waiting >= count) return;
    if (performance.now() - started > SETTLE_LIMIT_MS) {
      throw new Error(`3q: ${waiting} of ${count} deliveries backed up after ${seconds} s`);
    }
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}
