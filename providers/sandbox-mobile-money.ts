import { randomBytes, randomInt } from 'node:crypto';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import {
  ProviderRefusedError,
  type MobileMoneyNotification,
  type MobileMoneyProvider,
  type PaymentCode,
  type PaymentCodeRequest,
  type PaymentCodeStatus,
} from './mobile-money';
import { monimeInstructions, readMonimeNotification, signMonimeNotification } from './monime';

/** decisions.md: a deposit of exactly this many SLE cents makes the sandbox refuse. */
export const SANDBOX_REFUSED_AMOUNT = 4040n;
export const SANDBOX_SIGNATURE_HEADER = 'sandbox-signature';

const codeRow = z.object({
  id: z.string(),
  reference: z.string(),
  amount: z.bigint(),
  code: z.string(),
  instructions: z.string(),
  status: z.enum(['pending', 'completed', 'failed', 'expired']),
  expires_at: z.string(),
});

const columns = sql.fragment`id, reference, amount, code, instructions,
  CASE WHEN status = 'pending' AND expires_at <= now() THEN 'expired' ELSE status END AS status, expires_at`;

function toPaymentCode(row: z.infer<typeof codeRow>): PaymentCode {
  return {
    id: row.id,
    code: row.code,
    amount: row.amount,
    currency: 'SLE',
    instructions: row.instructions,
    status: row.status,
    expiresAt: row.expires_at,
    reference: row.reference,
  };
}

/**
 * The Test Mode mobile-money provider: deterministic, state in Postgres, USSD-style codes that
 * expire, payments marked successful or failed by the simulate-webhook endpoint.
 */
export class SandboxMobileMoneyProvider implements MobileMoneyProvider {
  readonly name = 'sandbox';

  constructor(
    private readonly pool: DatabasePool,
    private readonly webhookSecret: string,
  ) {}

  async createPaymentCode(request: PaymentCodeRequest): Promise<PaymentCode> {
    if (request.depositAmount === SANDBOX_REFUSED_AMOUNT) {
      throw new ProviderRefusedError('Provider failed to create the payment code');
    }
    const id = `pmc_${randomBytes(12).toString('hex')}`;
    const code = `*715*${randomInt(100_000, 1_000_000)}#`;
    const instructions = monimeInstructions(code, request.amount, request.name);
    await this.pool.query(sql.unsafe`
      INSERT INTO sandbox_payment_codes (id, idempotency_key, reference, name, amount, deposit_amount,
        code, instructions, status, expires_at)
      VALUES (${id}, ${request.idempotencyKey}, ${request.reference}, ${request.name},
        ${request.amount.toString()}, ${request.depositAmount.toString()}, ${code}, ${instructions},
        'pending', now() + make_interval(secs => ${request.expiresInSeconds}))
      ON CONFLICT (idempotency_key) DO NOTHING`);
    // A retried call with the same idempotency key gets the code the first call created.
    return toPaymentCode(
      await this.pool.one(sql.type(codeRow)`
        SELECT ${columns} FROM sandbox_payment_codes WHERE idempotency_key = ${request.idempotencyKey}`),
    );
  }

  async getPaymentCode(id: string): Promise<PaymentCode> {
    const row = await this.pool.maybeOne(
      sql.type(codeRow)`SELECT ${columns} FROM sandbox_payment_codes WHERE id = ${id}`,
    );
    if (!row) throw new ProviderRefusedError(`No payment code ${id}`);
    return toPaymentCode(row);
  }

  /** The payer paid, or the payment failed (the simulate-webhook endpoint). */
  async settle(
    id: string,
    status: Extract<PaymentCodeStatus, 'completed' | 'failed'>,
  ): Promise<PaymentCode> {
    await this.pool.query(sql.unsafe`
      UPDATE sandbox_payment_codes SET status = ${status}, updated_at = now()
      WHERE id = ${id} AND status = 'pending' AND expires_at > now()`);
    return this.getPaymentCode(id);
  }

  /** The notification the sandbox sends after a payment settles, signed like a live one. */
  notificationFor(
    code: PaymentCode,
    nowSeconds: number,
  ): { body: string; headers: Record<string, string> } {
    const body = JSON.stringify({
      event: `payment_code.${code.status}`,
      data: { id: code.id, status: code.status, metadata: { reference: code.reference } },
    });
    return {
      body,
      headers: {
        [SANDBOX_SIGNATURE_HEADER]: signMonimeNotification(this.webhookSecret, body, nowSeconds),
      },
    };
  }

  parseNotification(
    rawBody: string,
    headers: Record<string, string | undefined>,
  ): MobileMoneyNotification | null {
    return readMonimeNotification(this.webhookSecret, rawBody, headers[SANDBOX_SIGNATURE_HEADER]);
  }
}
