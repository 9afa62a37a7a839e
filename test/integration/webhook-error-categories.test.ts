import { randomUUID } from 'node:crypto';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { migrate } from '../../src/db/migrate';
import { createCaller, createTestDatabase } from '../support/database';

/**
 * Migration 0026: webhook attempts stored before errors became categories kept the socket's or
 * TLS library's own message; they read as the categories new attempts record.
 */

const MIGRATION = '0026_webhook_error_categories.sql';

let db: { url: string; pool: DatabasePool };
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.pool.end();
});

/** Each stored text and what it reads as once migrated. */
const stored: [string | null, string | null][] = [
  ['HTTP 503', 'http_status'],
  ['HTTP 307: redirects are not followed', 'http_status'],
  ['No answer within 10 seconds', 'timeout'],
  ['ECONNREFUSED: connect ECONNREFUSED 10.0.0.5:8443', 'connection_refused'],
  ['ETIMEDOUT: connect ETIMEDOUT 10.0.0.5:22', 'timeout'],
  ['ENOTFOUND: getaddrinfo ENOTFOUND intranet.corp', 'dns_error'],
  ['EPROTO: write EPROTO 00A8:error:0A00010B:SSL routines', 'tls_error'],
  ['DEPTH_ZERO_SELF_SIGNED_CERT: self-signed certificate', 'tls_error'],
  ['ERR_TLS_CERT_ALTNAME_INVALID: Hostname/IP does not match', 'tls_error'],
  ['ECONNRESET: socket hang up', 'connection_error'],
  ['Refused: the URL points to a private or internal address', null],
  ['Subscription disabled', null],
  [null, null],
];

it('rewrites stored raw network errors to their categories and keeps every other text', async () => {
  const caller = await createCaller(db.pool, 'webhook-errors');
  const eventId = randomUUID();
  await db.pool.query(sql.unsafe`
    INSERT INTO events (id, application_id, mode, type, data)
    VALUES (${eventId}, ${caller.applicationId}, 'test', 'transfer.completed', '{}')`);
  const subscriptions = stored.map(() => randomUUID());
  for (const [i, [error]] of stored.entries()) {
    await db.pool.query(sql.unsafe`
      INSERT INTO webhook_deliveries (event_id, subscription_id, attempts, last_error)
      VALUES (${eventId}, ${subscriptions[i]!}, 1, ${error})`);
    await db.pool.query(sql.unsafe`
      INSERT INTO webhook_delivery_attempts
        (event_id, subscription_id, attempt, url, status_code, error, duration_ms)
      VALUES (${eventId}, ${subscriptions[i]!}, 1, 'https://hooks.example/x', NULL, ${error}, 5)`);
  }
  // Applied again on rows as they were before it: what an existing database gets.
  await db.pool.query(sql.unsafe`DELETE FROM schema_migrations WHERE name = ${MIGRATION}`);
  expect((await migrate(db.url)).applied).toEqual([MIGRATION]);

  const row = z.object({ subscription_id: z.string(), error: z.string().nullable() });
  const attempts = await db.pool.any(sql.type(row)`
    SELECT subscription_id, error FROM webhook_delivery_attempts WHERE event_id = ${eventId}`);
  const deliveries = await db.pool.any(sql.type(row)`
    SELECT subscription_id, last_error AS error FROM webhook_deliveries WHERE event_id = ${eventId}`);
  for (const rows of [attempts, deliveries]) {
    const read = new Map(rows.map((r) => [r.subscription_id, r.error]));
    expect(subscriptions.map((id) => read.get(id))).toEqual(
      stored.map(([before, after]) => after ?? before),
    );
  }
});
