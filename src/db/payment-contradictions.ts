import { randomUUID } from 'node:crypto';
import { sql, type CommonQueryMethods } from 'slonik';
import type { Mode } from '../domain/types';

/**
 * Keeps a provider's answer that contradicts an ended payment, once per payment and provider
 * status; answers whether this call stored it (false: a repeat of one already kept).
 */
export async function insertPaymentContradiction(
  db: CommonQueryMethods,
  c: {
    transactionId: string;
    applicationId: string;
    mode: Mode;
    engineStatus: string;
    providerStatus: string;
    providerAmount: bigint | null;
    source: string;
  },
): Promise<boolean> {
  const stored = await db.query(sql.unsafe`
    INSERT INTO payment_contradictions (id, transaction_id, application_id, mode, engine_status,
      provider_status, provider_amount, source)
    VALUES (${randomUUID()}, ${c.transactionId}, ${c.applicationId}, ${c.mode}, ${c.engineStatus},
      ${c.providerStatus}, ${c.providerAmount?.toString() ?? null}, ${c.source})
    ON CONFLICT (transaction_id, provider_status) DO NOTHING`);
  return stored.rowCount === 1;
}
