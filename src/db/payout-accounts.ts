import { randomUUID } from 'node:crypto';
import { sql, type CommonQueryMethods } from 'slonik';
import type { DatabasePool } from './pool';
import { z } from 'zod';
import type { Mode } from '../domain/types';
import type { OnboardingResult } from '../domain/payout-accounts';

/** What the provider still wants before payouts are enabled, as it said it last. */
export const payoutRequirements = z.object({
  currently_due: z.array(z.string()),
  pending_verification: z.array(z.string()),
  disabled_reason: z.string().nullable(),
});
export type PayoutRequirements = z.infer<typeof payoutRequirements>;

/** A wallet owner's connected payout account at the card provider, as the engine knows it. */
export const payoutAccountRow = z.object({
  wallet_id: z.string(),
  application_id: z.string(),
  mode: z.enum(['test', 'live']),
  provider: z.string(),
  account_id: z.string(),
  payouts_enabled: z.boolean(),
  external_account_id: z.string().nullable(),
  external_account_added: z.boolean(),
  external_account_last4: z.string().nullable(),
  requirements: payoutRequirements,
  tos_ip: z.string(),
  tos_accepted_at: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type PayoutAccountRow = z.infer<typeof payoutAccountRow>;

const columns = sql.fragment`wallet_id, application_id, mode, provider, account_id,
  payouts_enabled, external_account_id, external_account_added, external_account_last4,
  requirements, host(tos_ip) AS tos_ip, tos_accepted_at, created_at, updated_at`;

/** The scope a lookup is made in: another application's or mode's account is never found. */
export type PayoutScope = { applicationId: string; mode: Mode };

/** A wallet's payout account in the caller's scope, or null (none yet, or not the caller's). */
export async function findPayoutAccount(
  db: CommonQueryMethods,
  scope: PayoutScope,
  walletId: string,
): Promise<PayoutAccountRow | null> {
  return db.maybeOne(sql.type(payoutAccountRow)`
    SELECT ${columns} FROM payout_accounts
    WHERE wallet_id = ${walletId} AND application_id = ${scope.applicationId}
      AND mode = ${scope.mode}`);
}

/**
 * The connected accounts of the scope, by id: where the card provider books their payouts, which
 * the provider reconciliation reads (src/providers/stripe-books.ts).
 */
export async function payoutAccountIds(
  db: CommonQueryMethods,
  scope: PayoutScope,
): Promise<string[]> {
  const rows = await db.anyFirst(sql.type(z.object({ account_id: z.string() }))`
    SELECT account_id FROM payout_accounts
    WHERE application_id = ${scope.applicationId} AND mode = ${scope.mode}
    ORDER BY account_id`);
  return [...rows];
}

/** docs/api.md, Test Mode sandbox: no verified payout account with a payout card. */
export const PAYOUTS_NOT_ENABLED = 'Payouts are not enabled for this wallet';

/**
 * Whether a card payout may go to this account (docs/api.md, Test Mode sandbox): payouts enabled by the
 * provider and a payout card attached. A card-payout saga refuses otherwise (400).
 */
export const canReceivePayouts = (row: PayoutAccountRow | null): row is PayoutAccountRow =>
  row !== null && row.payouts_enabled && row.external_account_added;

/** The onboarding result a row records (the workflow's answer, the API's GET). */
export function onboardingResultOf(row: PayoutAccountRow): OnboardingResult {
  return {
    status: 'done',
    accountId: row.account_id,
    payoutsEnabled: row.payouts_enabled,
    externalAccountAdded: row.external_account_added,
    currentlyDue: row.requirements.currently_due,
    pendingVerification: row.requirements.pending_verification,
    disabledReason: row.requirements.disabled_reason,
  };
}

/** What the provider says of the account now; written after every call to it. */
export type PayoutAccountState = {
  payoutsEnabled: boolean;
  externalAccountId: string | null;
  externalAccountLast4: string | null;
  requirements: PayoutRequirements;
};

/**
 * Records the account once per wallet (a retried activity, or a racing one, keeps the first),
 * with the terms acceptance of this submission; answers the stored row.
 */
export async function insertPayoutAccount(
  db: CommonQueryMethods,
  p: PayoutScope & {
    walletId: string;
    provider: string;
    accountId: string;
    state: PayoutAccountState;
    tos: { ip: string; acceptedAt: string };
  },
): Promise<PayoutAccountRow> {
  await db.query(sql.unsafe`
    INSERT INTO payout_accounts (wallet_id, application_id, mode, provider, account_id,
      payouts_enabled, external_account_id, external_account_added, external_account_last4,
      requirements, tos_ip, tos_accepted_at)
    VALUES (${p.walletId}, ${p.applicationId}, ${p.mode}, ${p.provider}, ${p.accountId},
      ${p.state.payoutsEnabled}, ${p.state.externalAccountId}, ${p.state.externalAccountId !== null},
      ${p.state.externalAccountLast4}, ${sql.jsonb(p.state.requirements)}, ${p.tos.ip},
      ${p.tos.acceptedAt})
    ON CONFLICT (wallet_id) DO NOTHING`);
  return (await findPayoutAccount(db, p, p.walletId))!;
}

/** The provider's latest word on the account; the terms acceptance too on a new submission. */
export async function updatePayoutAccount(
  db: CommonQueryMethods,
  walletId: string,
  state: PayoutAccountState,
  tos?: { ip: string; acceptedAt: string },
): Promise<PayoutAccountRow> {
  return db.one(sql.type(payoutAccountRow)`
    UPDATE payout_accounts SET
      payouts_enabled = ${state.payoutsEnabled},
      external_account_id = ${state.externalAccountId},
      external_account_added = ${state.externalAccountId !== null},
      external_account_last4 = ${state.externalAccountLast4},
      requirements = ${sql.jsonb(state.requirements)},
      tos_ip = coalesce(${tos?.ip ?? null}::inet, tos_ip),
      tos_accepted_at = coalesce(${tos?.acceptedAt ?? null}::timestamptz, tos_accepted_at),
      updated_at = now()
    WHERE wallet_id = ${walletId}
    RETURNING ${columns}`);
}

export const DOCUMENT_CONTENT_TYPES = ['image/jpeg', 'image/png', 'application/pdf'] as const;
export type DocumentContentType = (typeof DOCUMENT_CONTENT_TYPES)[number];

export const payoutDocumentRow = z.object({
  id: z.string(),
  wallet_id: z.string(),
  purpose: z.literal('identity_document'),
  content_type: z.enum(DOCUMENT_CONTENT_TYPES),
  size: z.number(),
  provider_file_id: z.string().nullable(),
});
export type PayoutDocumentRow = z.infer<typeof payoutDocumentRow>;

const documentColumns = sql.fragment`id, wallet_id, purpose, content_type, size, provider_file_id`;

/** Stores a checked identity document (its type and size were checked before). */
/**
 * Stores a document unless the wallet would then keep more than `quota` allows (null, nothing
 * stored). The payout account's row is locked first, so concurrent uploads are counted in turn.
 */
export async function insertPayoutDocument(
  pool: DatabasePool,
  p: { walletId: string; contentType: DocumentContentType; content: Buffer },
  quota: { documents: number; bytes: number },
): Promise<PayoutDocumentRow | null> {
  return pool.transaction(async (trx) => {
    await trx.query(sql.unsafe`
      SELECT 1 FROM payout_accounts WHERE wallet_id = ${p.walletId} FOR NO KEY UPDATE`);
    return trx.maybeOne(sql.type(payoutDocumentRow)`
      INSERT INTO payout_documents (id, wallet_id, purpose, content_type, size, content)
      SELECT ${randomUUID()}, ${p.walletId}, 'identity_document', ${p.contentType},
        ${p.content.length}, ${sql.binary(p.content)}
      FROM (SELECT count(*) AS n, coalesce(sum(size), 0) AS bytes
            FROM payout_documents WHERE wallet_id = ${p.walletId}) used
      WHERE used.n < ${quota.documents} AND used.bytes + ${p.content.length} <= ${quota.bytes}
      RETURNING ${documentColumns}`);
  });
}

/** A stored document with its bytes, for the upload to the provider. */
export async function findPayoutDocument(
  db: CommonQueryMethods,
  id: string,
): Promise<(PayoutDocumentRow & { content: Buffer }) | null> {
  return db.maybeOne(sql.type(payoutDocumentRow.extend({ content: z.instanceof(Buffer) }))`
    SELECT ${documentColumns}, content FROM payout_documents WHERE id = ${id}`);
}

/** The provider has the document: a retried upload then only attaches it. */
export async function setPayoutDocumentFile(
  db: CommonQueryMethods,
  id: string,
  providerFileId: string,
): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE payout_documents SET provider_file_id = ${providerFileId} WHERE id = ${id}`);
}

/** How many documents a wallet's onboarding holds (tests check that a refused one is not kept). */
export async function countPayoutDocuments(
  db: CommonQueryMethods,
  walletId: string,
): Promise<number> {
  return db.oneFirst(sql.type(z.object({ count: z.number() }))`
    SELECT count(*)::int AS count FROM payout_documents WHERE wallet_id = ${walletId}`);
}
