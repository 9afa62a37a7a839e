import { randomBytes, randomInt } from 'node:crypto';
import type { DatabasePool } from '../db/pool';
import {
  findSandboxPaymentCode,
  insertSandboxPaymentCode,
  settleSandboxPaymentCode,
  type SandboxCodeRow,
  advanceSandboxPaymentCode,
} from '../db/sandbox-payment-codes';
import {
  findSandboxPayout,
  insertSandboxPayout,
  settleSandboxPayout,
  type SandboxPayoutRow,
} from '../db/sandbox-mobile-money-payouts';
import {
  ProviderRefusedError,
  type MobileMoneyNotification,
  type MobileMoneyProvider,
  type PaymentCode,
  type PaymentCodeRequest,
  type PaymentCodeStatus,
  type Payout,
  type PayoutNotification,
  type PayoutRequest,
} from './mobile-money';
import {
  monimeInstructions,
  readMonimeNotification,
  readMonimePayoutNotification,
  signMonimeNotification,
} from './monime';

/** docs/api.md, Test Mode sandbox: a deposit of exactly this many SLE cents makes the sandbox refuse. */
export const SANDBOX_REFUSED_AMOUNT = 4040n;
export const SANDBOX_SIGNATURE_HEADER = 'sandbox-signature';
/** docs/api.md, Test Mode sandbox: a cashout of exactly this many SLE cents is refused at once. */
export const SANDBOX_REFUSED_CASHOUT_AMOUNT = 4040n;
/** A sandbox payout nobody settles fails after this long (the provider gives up on it). */
export const SANDBOX_PAYOUT_TTL_SECONDS = 30 * 60;

function toPayout(row: SandboxPayoutRow): Payout {
  return {
    id: row.id,
    amount: row.amount,
    currency: 'SLE',
    status: row.status,
    reference: row.reference,
  };
}

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

  /** The sandbox cancels a code nobody has paid yet: paying it later fails. */
  async cancelPaymentCode(id: string): Promise<PaymentCode> {
    await settleSandboxPaymentCode(this.pool, id, 'failed');
    return this.getPaymentCode(id);
  }

  /** A test clock's advance of the deposit's clock: the code expires as much sooner. */
  async advance(id: string, seconds: number): Promise<void> {
    await advanceSandboxPaymentCode(this.pool, id, seconds);
  }

  /**
   * A payout to a mobile-money wallet: pending until the simulate-webhook endpoint settles it
   * (or it expires, failed). Once per idempotency key: a retry gets the first payout.
   */
  async createPayout(request: PayoutRequest): Promise<Payout> {
    if (request.amount === SANDBOX_REFUSED_CASHOUT_AMOUNT) {
      throw new ProviderRefusedError('Provider refused the cashout');
    }
    return toPayout(
      await insertSandboxPayout(this.pool, {
        id: `po_${randomBytes(12).toString('hex')}`,
        idempotencyKey: request.idempotencyKey,
        reference: request.reference,
        amount: request.amount,
        phoneNumber: request.phoneNumber,
        expiresInSeconds: SANDBOX_PAYOUT_TTL_SECONDS,
      }),
    );
  }

  async getPayout(id: string): Promise<Payout> {
    const row = await findSandboxPayout(this.pool, id);
    if (!row) throw new ProviderRefusedError(`No payout ${id}`);
    return toPayout(row);
  }

  /** The sandbox cancels a payout it has not paid yet: it reads failed from then on. */
  async cancelPayout(id: string): Promise<Payout> {
    await settleSandboxPayout(this.pool, id, 'failed');
    return this.getPayout(id);
  }

  /** The payout was paid, or it failed (the simulate-webhook endpoint). */
  async settlePayout(id: string, status: 'completed' | 'failed'): Promise<Payout> {
    await settleSandboxPayout(this.pool, id, status);
    return this.getPayout(id);
  }

  /** The notification the sandbox sends after a payout settles, signed like a live one. */
  payoutNotificationFor(
    payout: Payout,
    nowSeconds: number,
  ): { body: string; headers: Record<string, string> } {
    return this.signed(
      {
        event: `payout.${payout.status}`,
        data: { id: payout.id, status: payout.status, metadata: { reference: payout.reference } },
      },
      nowSeconds,
    );
  }

  parsePayoutNotification(
    rawBody: string,
    headers: Record<string, string | undefined>,
  ): PayoutNotification | null {
    return readMonimePayoutNotification(
      this.webhookSecret,
      rawBody,
      headers[SANDBOX_SIGNATURE_HEADER],
    );
  }

  private signed(
    message: unknown,
    nowSeconds: number,
  ): { body: string; headers: Record<string, string> } {
    const body = JSON.stringify(message);
    return {
      body,
      headers: {
        [SANDBOX_SIGNATURE_HEADER]: signMonimeNotification(this.webhookSecret, body, nowSeconds),
      },
    };
  }

  /** The notification the sandbox sends after a payment settles, signed like a live one. */
  notificationFor(
    code: PaymentCode,
    nowSeconds: number,
  ): { body: string; headers: Record<string, string> } {
    return this.signed(
      {
        event: `payment_code.${code.status}`,
        data: { id: code.id, status: code.status, metadata: { reference: code.reference } },
      },
      nowSeconds,
    );
  }

  parseNotification(
    rawBody: string,
    headers: Record<string, string | undefined>,
  ): MobileMoneyNotification | null {
    return readMonimeNotification(this.webhookSecret, rawBody, headers[SANDBOX_SIGNATURE_HEADER]);
  }
}
