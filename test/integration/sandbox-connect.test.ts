import { sql } from 'slonik';
import { z } from 'zod';
import type { DatabasePool } from '../../src/db/pool';
import {
  canReceivePayouts,
  findPayoutAccount,
  insertPayoutAccount,
} from '../../src/db/payout-accounts';
import { insertUser } from '../../src/db/users';
import { insertWallet } from '../../src/db/wallets';
import { createFixtureApplication } from '../../tools/harness/fixtures';
import { DebitCardRequiredError, UnknownCardTokenError } from '../../src/providers/card';
import type { PayoutAccountDetails } from '../../src/providers/card';
import { ProviderRefusedError } from '../../src/providers/mobile-money';
import {
  DOCUMENT_REQUIREMENT,
  SANDBOX_PAYOUT_FAILURE_MESSAGE,
  SandboxConnectProvider,
} from '../../src/providers/sandbox-connect';
import { createTestDatabase } from '../support/database';

/** The Test Mode connected payout accounts and payouts against the real test Postgres. */

let pool: DatabasePool;
let sandbox: SandboxConnectProvider;
let counter = 0;

beforeAll(async () => {
  ({ pool } = await createTestDatabase());
  sandbox = new SandboxConnectProvider(pool);
});
afterAll(async () => pool?.end());

const key = () => `onboarding-${(counter += 1)}`;

function details(idNumber: string): PayoutAccountDetails {
  return {
    individual: {
      first_name: 'Aminata',
      last_name: 'Kamara',
      dob: { day: 14, month: 3, year: 1990 },
      address: { country: 'SL' },
      email: 'aminata@example.com',
      id_number: idNumber,
    },
    businessProfile: { mcc: '5734', product_description: 'Handmade furniture' },
    tosAcceptance: { ip: '203.0.113.7', date: 1_790_000_000 },
  };
}

async function payableAccount(): Promise<string> {
  const account = await sandbox.createAccount({
    idempotencyKey: key(),
    reference: 'w',
    details: details('000000000'),
  });
  await sandbox.addPayoutCard({
    accountId: account.id,
    cardToken: 'tok_visa_debit',
    idempotencyKey: key(),
  });
  return account.id;
}

async function payoutRows(idempotencyKey: string): Promise<number> {
  return pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM sandbox_connect_payouts WHERE idempotency_key = ${idempotencyKey}`);
}

describe('SandboxConnectProvider', () => {
  it('creates one account per idempotency key, with a document due unless the identity number is 000000000', async () => {
    const idempotencyKey = key();
    const request = { idempotencyKey, reference: 'w', details: details('123456789') };
    const first = await sandbox.createAccount(request);
    expect(await sandbox.createAccount(request)).toEqual(first);
    expect(first.requirements).toEqual({
      currentlyDue: [DOCUMENT_REQUIREMENT],
      pendingVerification: [],
      disabledReason: 'requirements.past_due',
    });
    // Looking again changes nothing while no document arrived.
    expect(await sandbox.getAccount(first.id)).toEqual(first);
    const fileId = await sandbox.uploadIdentityDocument({
      accountId: first.id,
      document: {
        content: Buffer.from('%PDF-1.4'),
        contentType: 'application/pdf',
        filename: 'a.pdf',
      },
      idempotencyKey: 'document-1',
    });
    const pending = await sandbox.attachIdentityDocument(first.id, fileId);
    expect(pending).toMatchObject({
      payoutsEnabled: false,
      requirements: { currentlyDue: [], pendingVerification: [DOCUMENT_REQUIREMENT] },
    });
    expect(await sandbox.getAccount(first.id)).toMatchObject({ payoutsEnabled: true });
  });

  it('attaches debit cards only, and the same token once', async () => {
    const account = await sandbox.createAccount({
      idempotencyKey: key(),
      reference: 'w',
      details: details('000000000'),
    });
    const request = { accountId: account.id, cardToken: 'tok_visa_debit', idempotencyKey: key() };
    const added = await sandbox.addPayoutCard(request);
    expect(await sandbox.addPayoutCard(request)).toEqual(added);
    expect(added.externalAccount).toEqual({
      id: expect.stringMatching(/^card_sandbox_/),
      last4: '5556',
    });
    await expect(
      sandbox.addPayoutCard({ ...request, cardToken: 'tok_visa' }),
    ).rejects.toBeInstanceOf(DebitCardRequiredError);
    await expect(sandbox.addPayoutCard({ ...request, cardToken: 'tok_x' })).rejects.toBeInstanceOf(
      UnknownCardTokenError,
    );
    expect((await sandbox.getAccount(account.id)).externalAccount).toEqual(added.externalAccount);
  });

  it('pays out at once, once per idempotency key', async () => {
    const accountId = await payableAccount();
    const request = {
      idempotencyKey: 'payout-a',
      reference: 'txn-a',
      accountId,
      amount: 2_550n,
      currency: 'USD' as const,
    };
    const payout = await sandbox.createPayout(request);
    expect(await sandbox.createPayout(request)).toEqual(payout);
    expect(payout).toEqual({
      id: expect.stringMatching(/^po_sandbox_/),
      status: 'paid',
      amount: 2_550n,
      currency: 'USD',
      failureMessage: null,
    });
    expect(await payoutRows('payout-a')).toBe(1);
    expect(await sandbox.getPayout(accountId, payout.id)).toEqual(payout);
  });

  it('accepts 40.40 and fails it at the next look', async () => {
    const accountId = await payableAccount();
    const payout = await sandbox.createPayout({
      idempotencyKey: 'payout-b',
      reference: 'txn-b',
      accountId,
      amount: 4_040n,
      currency: 'USD',
    });
    expect(payout.status).toBe('pending');
    expect(await sandbox.getPayout(accountId, payout.id)).toMatchObject({
      status: 'failed',
      failureMessage: SANDBOX_PAYOUT_FAILURE_MESSAGE,
    });
    await expect(sandbox.getPayout('acct_other', payout.id)).rejects.toBeInstanceOf(
      ProviderRefusedError,
    );
  });

  it('refuses a payout to an account without payouts enabled or without a card', async () => {
    const unverified = await sandbox.createAccount({
      idempotencyKey: key(),
      reference: 'w',
      details: details('123456789'),
    });
    await expect(
      sandbox.createPayout({
        idempotencyKey: 'payout-c',
        reference: 'txn-c',
        accountId: unverified.id,
        amount: 100n,
        currency: 'USD',
      }),
    ).rejects.toBeInstanceOf(ProviderRefusedError);
    expect(await payoutRows('payout-c')).toBe(0);
  });
});

describe('findPayoutAccount', () => {
  it('finds a wallet’s account only in its application and mode, and tells whether it can receive payouts', async () => {
    const app = await createFixtureApplication(pool, { modes: ['test'] });
    const scope = { applicationId: app.id, mode: 'test' as const };
    const caller = { ...scope, credentialId: 'test' };
    const walletId = await pool.transaction(async (trx) => {
      const user = await insertUser(trx, caller, {
        app_user_id: 'owner-1',
        name: 'Aminata Kamara',
        phone_number: '+23276123456',
        email: null,
        username: null,
        is_active: true,
      });
      return (await insertWallet(trx, caller, user.id, 'SLE', true)).id;
    });
    expect(await findPayoutAccount(pool, scope, walletId)).toBeNull();
    const row = await insertPayoutAccount(pool, {
      ...scope,
      walletId,
      provider: 'sandbox',
      accountId: `acct_scope_${walletId}`,
      state: {
        payoutsEnabled: true,
        externalAccountId: null,
        externalAccountLast4: null,
        requirements: { currently_due: [], pending_verification: [], disabled_reason: null },
      },
      tos: { ip: '203.0.113.7', acceptedAt: '2026-11-22T10:00:00.000Z' },
    });
    expect(row).toMatchObject({
      payouts_enabled: true,
      external_account_added: false,
      tos_ip: '203.0.113.7',
      tos_accepted_at: '2026-11-22T10:00:00.000Z',
    });
    expect(canReceivePayouts(row)).toBe(false);
    expect(await findPayoutAccount(pool, { ...scope, mode: 'live' }, walletId)).toBeNull();
    expect(
      await findPayoutAccount(
        pool,
        { applicationId: '00000000-0000-4000-8000-000000000000', mode: 'test' },
        walletId,
      ),
    ).toBeNull();
  });
});
