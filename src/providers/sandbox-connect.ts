import { createHash, randomUUID } from 'node:crypto';
import type { DatabasePool } from '../db/pool';
import {
  cancelSandboxConnectPayout,
  findSandboxConnectAccount,
  findSandboxConnectPayout,
  insertSandboxConnectAccount,
  insertSandboxConnectPayout,
  setSandboxExternalAccount,
  setSandboxVerification,
  type SandboxConnectAccountRow,
  type SandboxConnectPayoutRow,
} from '../db/sandbox-connect';
import {
  DebitCardRequiredError,
  UnknownCardTokenError,
  type CardPayout,
  type CardPayoutRequest,
  type IdentityDocument,
  type PayoutAccount,
  type PayoutAccountDetails,
  type PayoutAccountProvider,
} from './card';
import { ProviderRefusedError } from './mobile-money';

/** docs/api.md, Test Mode sandbox: this identity number is verified at once. */
export const SANDBOX_VERIFIED_ID_NUMBER = '000000000';

/** What the sandbox asks for until a document arrives (Stripe's requirement name). */
export const DOCUMENT_REQUIREMENT = 'individual.verification.document';

/** An amount (minor units) the sandbox accepts as a payout and then fails: 40.40. */
export const SANDBOX_PAYOUT_FAILS_LATER = 4040n;

export const SANDBOX_PAYOUT_FAILURE_MESSAGE = 'The card issuer could not process the payout.';

type SandboxPayoutCard = { funding: 'debit' | 'credit'; last4: string };

/** The card tokens the sandbox knows (Stripe's test tokens of the same names). */
export const SANDBOX_PAYOUT_TOKENS: Readonly<Record<string, SandboxPayoutCard>> = {
  tok_visa_debit: { funding: 'debit', last4: '5556' },
  tok_mastercard_debit: { funding: 'debit', last4: '8210' },
  tok_visa: { funding: 'credit', last4: '4242' },
  tok_mastercard: { funding: 'credit', last4: '4444' },
};

const sandboxId = (prefix: string) => `${prefix}_sandbox_${randomUUID().replace(/-/g, '')}`;

const verifiesAtOnce = (details: PayoutAccountDetails) =>
  details.individual.id_number === SANDBOX_VERIFIED_ID_NUMBER;

function toAccount(row: SandboxConnectAccountRow): PayoutAccount {
  const due = row.verification === 'document_due';
  const pending = row.verification === 'document_pending';
  return {
    id: row.id,
    payoutsEnabled: row.verification === 'verified',
    externalAccount: row.external_account_id
      ? { id: row.external_account_id, last4: row.external_account_last4 }
      : null,
    requirements: {
      currentlyDue: due ? [DOCUMENT_REQUIREMENT] : [],
      pendingVerification: pending ? [DOCUMENT_REQUIREMENT] : [],
      disabledReason: due
        ? 'requirements.past_due'
        : pending
          ? 'requirements.pending_verification'
          : null,
    },
  };
}

function toPayout(row: SandboxConnectPayoutRow): CardPayout {
  return {
    id: row.id,
    status: row.status,
    amount: row.amount,
    currency: row.currency,
    failureMessage: row.status === 'failed' ? SANDBOX_PAYOUT_FAILURE_MESSAGE : null,
  };
}

/**
 * Test Mode payout accounts in Postgres, as asynchronous as the provider's: identity `000000000`
 * verifies at once, others at the next look after a document; only debit tokens become the card;
 * a payout of 40.40 fails at the next look (docs/architecture.md, payout-account onboarding path).
 */
export class SandboxConnectProvider implements PayoutAccountProvider {
  readonly name = 'sandbox';

  constructor(private readonly pool: DatabasePool) {}

  private async account(accountId: string): Promise<SandboxConnectAccountRow> {
    const row = await findSandboxConnectAccount(this.pool, accountId);
    if (!row) throw new ProviderRefusedError(`No such account: ${accountId}`);
    return row;
  }

  async createAccount(request: {
    idempotencyKey: string;
    reference: string;
    details: PayoutAccountDetails;
  }): Promise<PayoutAccount> {
    return toAccount(
      await insertSandboxConnectAccount(this.pool, {
        id: sandboxId('acct'),
        idempotencyKey: request.idempotencyKey,
        verification: verifiesAtOnce(request.details) ? 'verified' : 'document_due',
      }),
    );
  }

  async updateAccount(accountId: string, details: PayoutAccountDetails): Promise<PayoutAccount> {
    await this.account(accountId);
    if (verifiesAtOnce(details)) {
      await setSandboxVerification(this.pool, accountId, 'verified', [
        'document_due',
        'document_pending',
      ]);
    }
    return toAccount(await this.account(accountId));
  }

  async addPayoutCard(request: {
    accountId: string;
    cardToken: string;
    idempotencyKey: string;
  }): Promise<PayoutAccount> {
    const card = Object.hasOwn(SANDBOX_PAYOUT_TOKENS, request.cardToken)
      ? SANDBOX_PAYOUT_TOKENS[request.cardToken]
      : undefined;
    if (!card) throw new UnknownCardTokenError(request.cardToken);
    if (card.funding !== 'debit') throw new DebitCardRequiredError();
    const row = await this.account(request.accountId);
    if (row.external_account_token !== request.cardToken) {
      await setSandboxExternalAccount(this.pool, row.id, {
        id: sandboxId('card'),
        token: request.cardToken,
        last4: card.last4,
      });
    }
    return toAccount(await this.account(request.accountId));
  }

  async uploadIdentityDocument(request: {
    accountId: string;
    document: IdentityDocument;
    idempotencyKey: string;
  }): Promise<string> {
    await this.account(request.accountId);
    // The sandbox keeps no second copy: the engine already holds the document.
    const digest = createHash('sha256').update(request.idempotencyKey).digest('hex');
    return `file_sandbox_${digest.slice(0, 24)}`;
  }

  async attachIdentityDocument(accountId: string, _fileId: string): Promise<PayoutAccount> {
    await setSandboxVerification(this.pool, accountId, 'document_pending', ['document_due']);
    return toAccount(await this.account(accountId));
  }

  async getAccount(accountId: string): Promise<PayoutAccount> {
    // The document received is checked by now: accepted.
    await setSandboxVerification(this.pool, accountId, 'verified', ['document_pending']);
    return toAccount(await this.account(accountId));
  }

  async createPayout(request: CardPayoutRequest): Promise<CardPayout> {
    const account = await this.account(request.accountId);
    if (request.amount <= 0n) throw new ProviderRefusedError('A payout must be positive');
    if (account.verification !== 'verified' || !account.external_account_id) {
      throw new ProviderRefusedError('Payouts are not enabled for this account');
    }
    const failsLater = request.amount === SANDBOX_PAYOUT_FAILS_LATER;
    return toPayout(
      await insertSandboxConnectPayout(this.pool, {
        id: sandboxId('po'),
        idempotencyKey: request.idempotencyKey,
        accountId: account.id,
        reference: request.reference,
        amount: request.amount,
        currency: request.currency,
        status: failsLater ? 'pending' : 'paid',
        failsLater,
      }),
    );
  }

  /** The sandbox cancels a payout it has not paid yet: it reads failed from then on. */
  async cancelPayout(accountId: string, payoutId: string): Promise<CardPayout> {
    const payout = await this.getPayout(accountId, payoutId);
    if (payout.status !== 'pending') return payout;
    await cancelSandboxConnectPayout(this.pool, payoutId);
    return this.getPayout(accountId, payoutId);
  }

  async getPayout(accountId: string, payoutId: string): Promise<CardPayout> {
    const row = await findSandboxConnectPayout(this.pool, payoutId);
    if (!row || row.account_id !== accountId) {
      throw new ProviderRefusedError(`No such payout: ${payoutId}`);
    }
    return toPayout(row);
  }
}
