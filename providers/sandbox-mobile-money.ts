import { randomBytes, randomInt } from 'node:crypto';
import type { DatabasePool } from '../db/pool';
import {
  findSandboxPaymentCode,
  insertSandboxPaymentCode,
  settleSandboxPaymentCode,
  type SandboxCodeRow,
} from '../db/sandbox-payment-codes';
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

function toPaymentCode(row: SandboxCodeRow): PaymentCode {
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
    return toPaymentCode(
      await insertSandboxPaymentCode(this.pool, {
        id,
        idempotencyKey: request.idempotencyKey,
        reference: request.reference,
        name: request.name,
        amount: request.amount,
        depositAmount: request.depositAmount,
        code,
        instructions,
        expiresInSeconds: request.expiresInSeconds,
      }),
    );
  }

  async getPaymentCode(id: string): Promise<PaymentCode> {
    const row = await findSandboxPaymentCode(this.pool, id);
    if (!row) throw new ProviderRefusedError(`No payment code ${id}`);
    return toPaymentCode(row);
  }

  /** The payer paid, or the payment failed (the simulate-webhook endpoint). */
  async settle(
    id: string,
    status: Extract<PaymentCodeStatus, 'completed' | 'failed'>,
  ): Promise<PaymentCode> {
    await settleSandboxPaymentCode(this.pool, id, status);
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
