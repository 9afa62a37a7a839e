import {
  FakeStripeServer,
  stripeError,
  type Answer,
  type FakeStripeRequest,
} from './fake-stripe-server';

/**
 * A fake Stripe API for the Connect endpoints the payout-account adapter calls (localstripe has no
 * Connect), in Stripe's wire format (fake-stripe-server.ts). It verifies like the sandbox: identity
 * number 000000000 at once, else a document is due, pending once named, verified at next retrieve.
 */

type Verification = 'verified' | 'document_due' | 'document_pending';

type FakeAccount = {
  id: string;
  verification: Verification;
  individual: Record<string, unknown>;
  business_profile: Record<string, unknown>;
  tos_acceptance: Record<string, unknown>;
  metadata: Record<string, unknown>;
  cards: Array<{ id: string; last4: string; funding: string; brand: string }>;
};

type FakePayout = {
  id: string;
  account: string;
  amount: number;
  currency: string;
  status: string;
  failsLater: boolean;
  metadata: Record<string, unknown>;
};

const TOKENS: Record<string, { funding: string; last4: string; brand: string }> = {
  tok_visa_debit: { funding: 'debit', last4: '5556', brand: 'Visa' },
  tok_mastercard_debit: { funding: 'debit', last4: '8210', brand: 'MasterCard' },
  tok_visa: { funding: 'credit', last4: '4242', brand: 'Visa' },
  /** A credit card Stripe would accept as an external account (the adapter must remove it). */
  tok_prepaid_quirk: { funding: 'prepaid', last4: '5100', brand: 'MasterCard' },
};

/** `a[b][c]=v` pairs into nested objects, as Stripe reads them. */
const error = stripeError;

export class FakeStripeConnect extends FakeStripeServer {
  readonly accounts = new Map<string, FakeAccount>();
  readonly payouts = new Map<string, FakePayout>();
  readonly transfers: Array<{ id: string; amount: number; destination: string }> = [];
  readonly files: Array<{ id: string; account: string; content: Buffer; purpose: string }> = [];
  readonly secretKey = 'sk_test_fake_connect';

  static start(): Promise<FakeStripeConnect> {
    return FakeStripeServer.listen(new FakeStripeConnect());
  }

  /** The bank returns a payout (Stripe then reports it failed, even one reported paid). */
  failPayout(payoutId: string): void {
    const payout = this.payouts.get(payoutId);
    if (!payout) throw new Error(`no payout ${payoutId}`);
    payout.status = 'failed';
  }

  /**
   * The body of the event Stripe sends a Connect endpoint about a payout as it stands now
   * (`payout.paid` or `payout.failed`), with the connected account; to be signed by the test.
   */
  payoutEventBody(payoutId: string): string {
    const payout = this.payouts.get(payoutId);
    if (!payout) throw new Error(`no payout ${payoutId}`);
    return JSON.stringify({
      id: this.nextId('evt'),
      object: 'event',
      type: `payout.${payout.status === 'failed' ? 'failed' : 'paid'}`,
      account: payout.account,
      livemode: false,
      data: { object: this.payoutObject(payout) },
    });
  }

  protected route(request: FakeStripeRequest): Answer {
    const { method, path, form } = request;
    const connected = request.headers['stripe-account'];
    let match: RegExpMatchArray | null;
    if (method === 'POST' && path === '/v1/accounts') return this.createAccount(form);
    if ((match = path.match(/^\/v1\/accounts\/([^/]+)$/))) {
      const account = this.accounts.get(match[1]!);
      if (!account)
        return error(404, 'invalid_request_error', 'No such account', 'resource_missing');
      if (method === 'POST') this.updateAccount(account, form);
      // A document named is checked by the next look at the account: accepted.
      else if (account.verification === 'document_pending') account.verification = 'verified';
      return { status: 200, body: this.accountObject(account) };
    }
    if ((match = path.match(/^\/v1\/accounts\/([^/]+)\/external_accounts(?:\/([^/]+))?$/))) {
      const account = this.accounts.get(match[1]!);
      if (!account)
        return error(404, 'invalid_request_error', 'No such account', 'resource_missing');
      if (method === 'DELETE') {
        account.cards = account.cards.filter((c) => c.id !== match![2]);
        return { status: 200, body: { id: match[2], object: 'card', deleted: true } };
      }
      return this.addExternalAccount(account, String(form.external_account));
    }
    if (method === 'POST' && path === '/v1/files') {
      if (typeof connected !== 'string' || !this.accounts.has(connected)) {
        return error(
          400,
          'invalid_request_error',
          'Files for a connected account need Stripe-Account',
        );
      }
      const id = this.nextId('file');
      this.files.push({
        id,
        account: connected,
        content: request.file?.content ?? Buffer.alloc(0),
        purpose: String(form.purpose),
      });
      return {
        status: 200,
        body: { id, object: 'file', purpose: form.purpose, size: request.file?.content.length },
      };
    }
    if (method === 'POST' && path === '/v1/transfers') {
      const destination = String(form.destination);
      if (!this.accounts.has(destination)) {
        return error(400, 'invalid_request_error', 'No such destination', 'resource_missing');
      }
      const transfer = { id: this.nextId('tr'), amount: Number(form.amount), destination };
      this.transfers.push(transfer);
      return { status: 200, body: { ...transfer, object: 'transfer', currency: form.currency } };
    }
    if (method === 'POST' && path === '/v1/payouts') {
      const account = typeof connected === 'string' ? this.accounts.get(connected) : undefined;
      if (!account || account.cards.length === 0) {
        return error(400, 'invalid_request_error', 'The account has no external account');
      }
      const amount = Number(form.amount);
      const payout: FakePayout = {
        id: this.nextId('po'),
        account: account.id,
        amount,
        currency: String(form.currency),
        // 4040: in transit, then failed; 4141: pending until canceled.
        status: amount === 4040 ? 'in_transit' : amount === 4141 ? 'pending' : 'paid',
        failsLater: amount === 4040,
        metadata: (form.metadata as Record<string, unknown>) ?? {},
      };
      this.payouts.set(payout.id, payout);
      return { status: 200, body: this.payoutObject(payout) };
    }
    if ((match = path.match(/^\/v1\/payouts\/([^/]+)\/cancel$/)) && method === 'POST') {
      const payout = this.payouts.get(match[1]!);
      if (!payout || payout.account !== connected) {
        return error(404, 'invalid_request_error', 'No such payout', 'resource_missing');
      }
      if (payout.status !== 'pending') {
        return error(400, 'invalid_request_error', 'Payouts can only be canceled while pending');
      }
      payout.status = 'canceled';
      return { status: 200, body: this.payoutObject(payout) };
    }
    if ((match = path.match(/^\/v1\/payouts\/([^/]+)$/)) && method === 'GET') {
      const payout = this.payouts.get(match[1]!);
      if (!payout || payout.account !== connected) {
        return error(404, 'invalid_request_error', 'No such payout', 'resource_missing');
      }
      if (payout.failsLater) payout.status = 'failed';
      return { status: 200, body: this.payoutObject(payout) };
    }
    return error(404, 'invalid_request_error', `Unrecognized request URL (${method}: ${path})`);
  }

  private createAccount(form: Record<string, unknown>): Answer {
    if (form.type !== 'custom') return error(400, 'invalid_request_error', 'type must be custom');
    const account: FakeAccount = {
      id: this.nextId('acct'),
      verification: 'document_due',
      individual: {},
      business_profile: {},
      tos_acceptance: {},
      metadata: (form.metadata as Record<string, unknown>) ?? {},
      cards: [],
    };
    this.updateAccount(account, form);
    this.accounts.set(account.id, account);
    return { status: 200, body: this.accountObject(account) };
  }

  private updateAccount(account: FakeAccount, form: Record<string, unknown>): void {
    const individual = (form.individual ?? {}) as Record<string, any>;
    account.individual = { ...account.individual, ...individual };
    if (form.business_profile) account.business_profile = form.business_profile as any;
    if (form.tos_acceptance) account.tos_acceptance = form.tos_acceptance as any;
    if (individual.id_number === '000000000') account.verification = 'verified';
    if (individual.verification?.document?.front && account.verification === 'document_due') {
      account.verification = 'document_pending';
    }
  }

  private addExternalAccount(account: FakeAccount, token: string): Answer {
    const card = TOKENS[token];
    if (!card) {
      return error(404, 'invalid_request_error', `No such token: '${token}'`, 'resource_missing');
    }
    if (card.funding === 'credit') {
      return error(
        400,
        'invalid_request_error',
        'This card doesn’t appear to be a debit card.',
        'invalid_card_type',
      );
    }
    const added = { id: this.nextId('card'), ...card };
    account.cards.push(added);
    return { status: 200, body: this.cardObject(account, added) };
  }

  private cardObject(account: FakeAccount, card: FakeAccount['cards'][number]) {
    return { ...card, object: 'card', account: account.id, country: 'US', currency: 'usd' };
  }

  private accountObject(account: FakeAccount) {
    const due = account.verification === 'document_due';
    const pending = account.verification === 'document_pending';
    return {
      id: account.id,
      object: 'account',
      type: 'custom',
      business_type: 'individual',
      payouts_enabled: account.verification === 'verified',
      charges_enabled: false,
      business_profile: account.business_profile,
      individual: { ...account.individual, id_number: undefined, id_number_provided: true },
      metadata: account.metadata,
      tos_acceptance: account.tos_acceptance,
      requirements: {
        currently_due: due ? ['individual.verification.document'] : [],
        eventually_due: due ? ['individual.verification.document'] : [],
        past_due: due ? ['individual.verification.document'] : [],
        pending_verification: pending ? ['individual.verification.document'] : [],
        disabled_reason: due
          ? 'requirements.past_due'
          : pending
            ? 'requirements.pending_verification'
            : null,
        errors: [],
      },
      external_accounts: {
        object: 'list',
        data: account.cards.map((card) => this.cardObject(account, card)),
        has_more: false,
        url: `/v1/accounts/${account.id}/external_accounts`,
      },
    };
  }

  private payoutObject(payout: FakePayout) {
    return {
      id: payout.id,
      object: 'payout',
      amount: payout.amount,
      currency: payout.currency,
      status: payout.status,
      metadata: payout.metadata,
      failure_code: payout.status === 'failed' ? 'could_not_process' : null,
      failure_message:
        payout.status === 'failed' ? 'The bank could not process this payout.' : null,
    };
  }
}
