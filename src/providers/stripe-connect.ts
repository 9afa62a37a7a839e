import Stripe from 'stripe';
import type { Config } from '../config';
import { CURRENCIES, type Currency } from '../domain/money';
import {
  DebitCardRequiredError,
  UnknownCardTokenError,
  type CardPayout,
  type CardPayoutEvent,
  type CardPayoutRequest,
  type CardPayoutStatus,
  type IdentityDocument,
  type PayoutAccount,
  type PayoutAccountDetails,
  type PayoutAccountProvider,
} from './card';
import {
  isMissing,
  refusalOrTransient,
  StripeResponseError,
  verifiedStripeEvent,
} from './stripe-card';

const PAYOUT_STATUS: Record<string, CardPayoutStatus> = {
  paid: 'paid',
  pending: 'pending',
  in_transit: 'pending',
  failed: 'failed',
  canceled: 'failed',
};

/** The payout events `parsePayoutEvent` reads (on the Connect webhook endpoint). */
const PAYOUT_EVENT_STATUS: Record<string, CardPayoutEvent['status']> = {
  'payout.paid': 'paid',
  'payout.failed': 'failed',
  'payout.canceled': 'failed',
};

/** Those events, for a webhook endpoint's subscription (docs/operations.md). */
export const STRIPE_PAYOUT_EVENT_TYPES: readonly string[] = Object.keys(PAYOUT_EVENT_STATUS);

export type StripeConnectOptions = {
  secretKey: string;
  /** Verifies `Stripe-Signature` of the payout events; without it none is read. */
  webhookSecret?: string;
  api?: { host: string; port: number; protocol: 'http' | 'https' };
  timeoutMs?: number;
  client?: Stripe;
};

/** Stripe's `individual` and `business_profile` parameters, from what the API validated. */
function accountParams(details: PayoutAccountDetails) {
  const { individual, businessProfile, tosAcceptance } = details;
  return {
    individual: {
      first_name: individual.first_name,
      last_name: individual.last_name,
      dob: individual.dob,
      address: individual.address,
      email: individual.email,
      ...(individual.phone !== undefined ? { phone: individual.phone } : {}),
      ...(individual.id_number !== undefined ? { id_number: individual.id_number } : {}),
    },
    business_profile: businessProfile,
    tos_acceptance: { ip: tosAcceptance.ip, date: tosAcceptance.date },
  } satisfies Stripe.AccountUpdateParams;
}

/**
 * Live Mode payout accounts on Stripe Connect Custom accounts, so that the engine collects identity
 * and terms acceptance itself. Every creating call carries an idempotency key derived from ours;
 * errors as in stripe-card.ts. A card Stripe refuses, or answers not debit: DebitCardRequiredError.
 */
export class StripeConnectProvider implements PayoutAccountProvider {
  readonly name = 'stripe';
  readonly client: Stripe;

  private readonly webhookSecret: string | null;

  constructor(options: StripeConnectOptions) {
    this.webhookSecret = options.webhookSecret ?? null;
    this.client =
      options.client ??
      new Stripe(options.secretKey, {
        maxNetworkRetries: 0,
        timeout: options.timeoutMs ?? 20_000,
        ...(options.api ?? {}),
      });
  }

  async createAccount(request: {
    idempotencyKey: string;
    reference: string;
    details: PayoutAccountDetails;
  }): Promise<PayoutAccount> {
    const { individual } = request.details;
    return toAccount(
      await call(() =>
        this.client.accounts.create(
          {
            type: 'custom',
            country: individual.address.country,
            email: individual.email,
            business_type: 'individual',
            capabilities: { transfers: { requested: true } },
            metadata: { wallet_id: request.reference },
            ...accountParams(request.details),
          },
          { idempotencyKey: request.idempotencyKey },
        ),
      ),
    );
  }

  async updateAccount(accountId: string, details: PayoutAccountDetails): Promise<PayoutAccount> {
    return toAccount(
      await call(() => this.client.accounts.update(accountId, accountParams(details))),
    );
  }

  async addPayoutCard(request: {
    accountId: string;
    cardToken: string;
    idempotencyKey: string;
  }): Promise<PayoutAccount> {
    let added: Stripe.ExternalAccount;
    try {
      added = await this.client.accounts.createExternalAccount(
        request.accountId,
        { external_account: request.cardToken, default_for_currency: true },
        { idempotencyKey: request.idempotencyKey },
      );
    } catch (error) {
      if (error instanceof Stripe.errors.StripeError && error.code === 'invalid_card_type') {
        throw new DebitCardRequiredError({ cause: error });
      }
      if (isMissing(error)) throw new UnknownCardTokenError(request.cardToken, { cause: error });
      throw refusalOrTransient(error);
    }
    if (added.object !== 'card' || added.funding !== 'debit') {
      await call(() => this.client.accounts.deleteExternalAccount(request.accountId, added.id));
      throw new DebitCardRequiredError();
    }
    return this.getAccount(request.accountId);
  }

  async uploadIdentityDocument(request: {
    accountId: string;
    document: IdentityDocument;
    idempotencyKey: string;
  }): Promise<string> {
    const file = await call(() =>
      this.client.files.create(
        {
          purpose: 'identity_document',
          file: {
            data: request.document.content,
            name: request.document.filename,
            type: 'application/octet-stream',
          },
        },
        { stripeAccount: request.accountId, idempotencyKey: request.idempotencyKey },
      ),
    );
    return file.id;
  }

  async attachIdentityDocument(accountId: string, fileId: string): Promise<PayoutAccount> {
    return toAccount(
      await call(() =>
        this.client.accounts.update(accountId, {
          individual: { verification: { document: { front: fileId } } },
        }),
      ),
    );
  }

  async getAccount(accountId: string): Promise<PayoutAccount> {
    return toAccount(await call(() => this.client.accounts.retrieve(accountId)));
  }

  async createPayout(request: CardPayoutRequest): Promise<CardPayout> {
    const amount = Number(request.amount);
    if (!Number.isSafeInteger(amount) || amount <= 0) {
      throw new StripeResponseError(`Cannot pay out ${request.amount} minor units`);
    }
    const currency = request.currency.toLowerCase();
    const metadata = { reference: request.reference };
    await call(() =>
      this.client.transfers.create(
        { amount, currency, destination: request.accountId, metadata },
        { idempotencyKey: `${request.idempotencyKey}-transfer` },
      ),
    );
    const payout = await call(() =>
      this.client.payouts.create(
        { amount, currency, metadata },
        { stripeAccount: request.accountId, idempotencyKey: `${request.idempotencyKey}-payout` },
      ),
    );
    return toPayout(payout);
  }

  async getPayout(accountId: string, payoutId: string): Promise<CardPayout> {
    return toPayout(
      await call(() => this.client.payouts.retrieve(payoutId, {}, { stripeAccount: accountId })),
    );
  }

  /**
   * Payouts.cancel on the connected account; a payout Stripe will not cancel any more (paid,
   * failed, in transit) is answered as it stands.
   */
  async cancelPayout(accountId: string, payoutId: string): Promise<CardPayout> {
    try {
      return toPayout(await this.client.payouts.cancel(payoutId, {}, { stripeAccount: accountId }));
    } catch (error) {
      if (!(error instanceof Stripe.errors.StripeInvalidRequestError))
        throw refusalOrTransient(error);
      return this.getPayout(accountId, payoutId);
    }
  }

  /**
   * A connected account's `payout.paid`, `payout.failed` or `payout.canceled` event, its
   * `Stripe-Signature` verified; null for any other event or a signature that does not match.
   */
  parsePayoutEvent(
    rawBody: string,
    headers: Record<string, string | undefined>,
  ): CardPayoutEvent | null {
    const event = verifiedStripeEvent(this.client, rawBody, headers, this.webhookSecret);
    if (!event) return null;
    const status = Object.hasOwn(PAYOUT_EVENT_STATUS, event.type)
      ? PAYOUT_EVENT_STATUS[event.type]
      : undefined;
    const payout = event.data.object as Partial<Stripe.Payout>;
    if (!status || payout.object !== 'payout' || typeof payout.id !== 'string') return null;
    const reference = payout.metadata?.reference;
    return {
      id: event.id,
      payoutId: payout.id,
      status,
      reference: typeof reference === 'string' ? reference : null,
    };
  }
}

/** A Stripe call with its refusals (4xx) made ProviderRefusedErrors, never retried. */
async function call<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw refusalOrTransient(error);
  }
}

function toAccount(account: Stripe.Account): PayoutAccount {
  const card = account.external_accounts?.data.find((external) => external.object === 'card');
  return {
    id: account.id,
    payoutsEnabled: account.payouts_enabled === true,
    externalAccount: card ? { id: card.id, last4: card.last4 || null } : null,
    requirements: {
      currentlyDue: account.requirements?.currently_due ?? [],
      pendingVerification: account.requirements?.pending_verification ?? [],
      disabledReason: account.requirements?.disabled_reason ?? null,
    },
  };
}

function toPayout(payout: Stripe.Payout): CardPayout {
  const status = PAYOUT_STATUS[payout.status];
  if (!status) throw new StripeResponseError(`Stripe answered a payout status "${payout.status}"`);
  const currency = payout.currency.toUpperCase() as Currency;
  if (!CURRENCIES.includes(currency)) {
    throw new StripeResponseError(`Stripe answered a payout in ${payout.currency}`);
  }
  return {
    id: payout.id,
    status,
    amount: BigInt(payout.amount),
    currency,
    failureMessage: status === 'failed' ? (payout.failure_message ?? 'The payout failed.') : null,
  };
}

/** The Live Mode payout-account provider, or null without the Stripe keys (503). */
export function stripeConnectFromConfig(config: Config): StripeConnectProvider | null {
  const { secretKey, webhookSecret, api, timeoutMs } = config.providers.stripe;
  if (!secretKey || !webhookSecret) return null;
  return new StripeConnectProvider({ secretKey, webhookSecret, api, timeoutMs });
}
