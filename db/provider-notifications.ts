import { randomUUID } from 'node:crypto';
import { sql, type CommonQueryMethods } from 'slonik';

/** Keeps a provider's notification as it came, verified, whatever the engine makes of it. */
export async function insertProviderNotification(
  db: CommonQueryMethods,
  n: {
    provider: string;
    paymentReference: string;
    status: string;
    transactionId: string | null;
    body: unknown;
  },
): Promise<void> {
  await db.query(sql.unsafe`
    INSERT INTO provider_notifications (id, provider, payment_reference, status, transaction_id, body)
    VALUES (${randomUUID()}, ${n.provider}, ${n.paymentReference}, ${n.status},
      ${n.transactionId}, ${sql.jsonb(n.body as never)})`);
}
