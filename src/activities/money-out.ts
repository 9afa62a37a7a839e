import type { Config } from '../config';
import { findApplication, type ApplicationRow } from '../db/applications';
import { recordAudit } from '../db/audit-log';
import {
  lockAccounts,
  systemAccountsIn,
  type SystemAccountKind,
  type SystemAccountMemory,
} from '../db/ledger';
import { recordMoneyStep } from '../db/money-steps';
import {
  findMoneyOut,
  lockMoneyOut,
  setMoneyOutProvider,
  type MoneyOutMetadata,
  type MoneyOutRecord,
} from '../db/money-out';
import type { DatabasePool, DatabaseTransactionConnection } from '../db/pool';
import type { TransactionRow } from '../db/transactions';
import { walletStates } from '../db/wallets';
import {
  moneyOutGiveBackPostings,
  moneyOutReservePostings,
  moneyOutReversalPostings,
  moneyOutSettlementPostings,
} from '../domain/ledger';
import type { AuditEntry } from '../domain/audit';
import type { Currency } from '../domain/money';
import type { WalletFacts } from '../domain/money-rules';
import { minorToMajorNumber } from '../domain/money';
import type { Mode, TransactionType } from '../domain/types';
import type { Providers } from '../providers';
import type { PayoutStatus } from '../providers/mobile-money';
import { workflowIds } from '../workflows/ids';
import type { MoneyOutInput, MoneyOutKind } from '../workflows/money-out-shared';
import { decline } from './declines';
import { callProvider } from './deposit';
import { transactionEventData } from './events';
import { refuseUnless, refuseUnlessAll } from './money-rules';
import { moneyOutReserveRules } from '../domain/money-rules';

/** The provider's payout as the port reports it. */
export type ProviderPayout = { id: string; status: PayoutStatus };

/**
 * The one provider port a kind of money out plugs into the saga. `send` carries the idempotency
 * key (derived from the transaction id), so a retried call never pays out twice; a business
 * refusal is a ProviderRefusedError.
 */
export type MoneyOutPort = {
  send(request: {
    idempotencyKey: string;
    reference: string;
    record: MoneyOutRecord;
  }): Promise<ProviderPayout>;
  /** The payout as the provider reports it now (`record`: the payout's own, for its account). */
  check(payoutId: string, record: MoneyOutRecord): Promise<ProviderPayout>;
  /**
   * Cancels the payout where the provider allows it and answers it as it stands then: failed
   * means it will never pay; pending, that the provider would not cancel it.
   */
  cancel(payoutId: string, record: MoneyOutRecord): Promise<ProviderPayout>;
};

/** The figures of a money out, priced by its kind (meta fields without the provider). */
export type MoneyOutPrice = Omit<MoneyOutMetadata, 'kind' | 'destination' | 'provider'> & {
  currency: Currency;
};

/**
 * A kind that pays back another payment (a card refund: its deposit) decides its reserve over
 * that payment, under its lock, instead of `moneyOutReserveRules` (see `MoneyOutSpec.reserveCase`).
 */
export type MoneyOutCase = {
  /** The payment paid back: the record's parent. */
  parentId: string;
  /** What the port needs of it, added to the record's `destination`. */
  destination: Record<string, string>;
  /** Declines unless the kind's rules hold over the wallet, read under its lock (null: none). */
  decide(wallet: Partial<WalletFacts> | null): void;
};

/** What a kind of money out tells the saga: its record, its events, its fees, its provider. */
export type MoneyOutSpec = {
  type: Extract<TransactionType, 'mobile_money_cashout' | 'card_payout' | 'card_refund'>;
  description: string;
  events: { completed: string; failed: string };
  /** The detail of a refusal at once (400). */
  refusal: string;
  /** The system account that stands for the provider (its clearing account). */
  providerAccount: SystemAccountKind;
  /**
   * How long after the provider reported a payout paid it may still report it failed (a card
   * payout can fail days later); the saga then reverses the settlement. 0: paid is final.
   * A function when it depends on the mode's provider.
   */
  lateFailureWindowSeconds: number | ((mode: Mode) => number);
  /**
   * How long a payout the provider accepted waits for its outcome before the saga asks the
   * provider itself (and again each period while pending); `MONEY_OUT_PENDING_TTL_SECONDS`
   * when absent.
   */
  pendingTtlSeconds?: (mode: Mode, config: Config) => number;
  /** Null: the amount converts to less than a cent of the base currency. */
  price(app: ApplicationRow, input: MoneyOutInput, config: Config): MoneyOutPrice | null;
  port(providers: Providers, mode: 'test' | 'live'): MoneyOutPort;
  /**
   * Called first in the reserve's database transaction (before the accounts' locks) by a kind
   * that pays back another payment: takes that payment's lock and reads it, so that two
   * reserves racing for what is left of it decide one after the other.
   */
  reserveCase?(trx: DatabaseTransactionConnection, input: MoneyOutInput): Promise<MoneyOutCase>;
};

/** A money-out event: the payment as the API shows it, and its fees. */
export function moneyOutEventData(row: TransactionRow, meta: MoneyOutMetadata) {
  return {
    ...transactionEventData(row),
    provider_reference: row.provider_reference,
    ...(meta.kind === 'refund' && { source_transaction_id: meta.destination.deposit_id ?? null }),
    provider_fee: minorToMajorNumber(BigInt(meta.provider_fee)),
    application_fee: minorToMajorNumber(BigInt(meta.application_fee)),
    total_amount: minorToMajorNumber(BigInt(meta.total)),
  };
}

/**
 * The money-out saga's steps, for every kind in `specs`. Each money step is one database
 * transaction with one balanced ledger transaction; each checks the record's status first, so
 * that a retried step (a worker that died after its commit) changes nothing the second time.
 */
export function createMoneyOutActivities(
  deps: {
    pool: DatabasePool;
    providers: Providers;
    config: Config;
    /** System account ids seen committed (src/db/ledger.ts); none to start with when absent. */
    systemAccounts?: SystemAccountMemory;
  },
  specs: Record<MoneyOutKind, MoneyOutSpec | undefined>,
) {
  const { pool, providers, config } = deps;
  const systemAccount = systemAccountsIn(deps.systemAccounts);
  const specOf = (kind: MoneyOutKind): MoneyOutSpec => {
    const spec = specs[kind];
    if (!spec) throw new Error(`no money-out kind ${kind}`);
    return spec;
  };
  const specOfRecord = (r: MoneyOutRecord) => specOf(r.meta.kind);

  /**
   * Step 1: the pending record and the reserve (amount and every fee, wallet to the payouts
   * clearing account), in one database transaction. Insufficient funds or a disabled wallet is
   * a decline and writes nothing. Running it again finds the record and changes nothing.
   */
  async function reserveMoneyOut(
    input: MoneyOutInput,
  ): Promise<{ transactionId: string; pendingTtlMs: number; lateFailureMs: number }> {
    const spec = specOf(input.kind);
    const window = spec.lateFailureWindowSeconds;
    const done = {
      transactionId: input.transactionId,
      pendingTtlMs:
        (spec.pendingTtlSeconds?.(input.mode, config) ?? config.moneyOut.pendingTtlSeconds) * 1000,
      lateFailureMs: (typeof window === 'number' ? window : window(input.mode)) * 1000,
    };
    if (await findMoneyOut(pool, input.transactionId)) return done;
    const app = await findApplication(pool, input.applicationId);
    if (!app) throw new Error(`application ${input.applicationId} does not exist`);
    const price = spec.price(app, input, config);
    if (!price) {
      // Too small to convert: the reserve's rules say which decline comes first.
      const wallet = (await walletStates(pool, [input.walletId])).get(input.walletId) ?? null;
      const params = { ...input, converted: null, total: null };
      refuseUnless(moneyOutReserveRules, { subjects: { wallet }, params });
      throw new Error(`money out ${input.transactionId}: too small, yet its rules passed`);
    }
    const { currency, ...figures } = price;
    return pool.transaction(async (trx) => {
      const paidBack = await spec.reserveCase?.(trx, input);
      const meta: MoneyOutMetadata = {
        kind: input.kind,
        ...figures,
        destination: { ...input.destination, ...paidBack?.destination },
        provider: null,
      };
      const clearing = await systemAccount(trx, app.id, input.mode, 'payouts', currency);
      const locked = await lockAccounts(trx, [input.walletId, clearing]);
      if (await findMoneyOut(trx, input.transactionId)) return done;
      const wallet = (await walletStates(trx, [input.walletId])).get(input.walletId);
      const total = BigInt(meta.total);
      const balance = locked.get(input.walletId)?.balance;
      if (paidBack) {
        paidBack.decide(wallet ? { ...wallet, balance } : null);
      } else {
        refuseUnlessAll(moneyOutReserveRules, {
          subjects: { wallet: wallet ? { ...wallet, balance } : null },
          params: { ...input, converted: BigInt(meta.amount), total },
        });
      }
      await recordMoneyStep(trx, {
        transaction: {
          id: input.transactionId,
          applicationId: input.applicationId,
          mode: input.mode,
          type: spec.type,
          status: 'pending',
          currency,
          amount: BigInt(meta.amount),
          walletId: input.walletId,
          applicationFee: BigInt(meta.application_fee),
          description: spec.description,
          workflowId: workflowIds[input.kind](input.transactionId),
          parentId: paidBack?.parentId ?? null,
          metadata: meta,
          merchantMetadata: input.metadata,
        },
        ledger: {
          description: `${spec.description}: reserve`,
          metadata: { step: 'reserve', total: meta.total },
          postings: moneyOutReservePostings({
            walletId: input.walletId,
            clearingAccountId: clearing,
            currency,
            total,
          }),
        },
      });
      if (input.audit) await recordAudit(trx, input.audit);
      return done;
    });
  }

  /**
   * Step 2: asks the provider to pay, with the workflow id as its idempotency key (a retry after
   * a timeout gets the same payout, never a second one), and records its answer. A refusal is a
   * decline. Once the provider answered, running it again answers what it answered.
   */
  async function sendMoneyOut(input: { transactionId: string }): Promise<ProviderPayout> {
    const record = await findMoneyOut(pool, input.transactionId);
    if (!record) throw new Error(`payout ${input.transactionId} has no record`);
    if (record.meta.provider) return record.meta.provider;
    const spec = specOfRecord(record);
    const { row } = record;
    const payout = await callProvider(
      () =>
        spec.port(providers, row.mode).send({
          idempotencyKey: workflowIds[record.meta.kind](row.id),
          reference: row.id,
          record,
        }),
      spec.refusal,
    );
    await setMoneyOutProvider(pool, row.id, { id: payout.id, status: payout.status });
    return payout;
  }

  /** The provider's view of the payout now (recorded); a refusal is a decline. */
  async function checkMoneyOut(input: { transactionId: string }): Promise<ProviderPayout> {
    const record = await findMoneyOut(pool, input.transactionId);
    if (!record?.meta.provider) throw decline('not_found', 'The provider has no payout yet');
    const spec = specOfRecord(record);
    const payout = await callProvider(
      () => spec.port(providers, record.row.mode).check(record.meta.provider!.id, record),
      spec.refusal,
    );
    await setMoneyOutProvider(pool, record.row.id, { id: payout.id, status: payout.status });
    return payout;
  }

  /**
   * An operator's resolution asks the provider first: `failed` cancels the payout there,
   * `completed` looks at it; the answer is recorded and the workflow decides on it.
   */
  async function askMoneyOutForResolution(input: {
    transactionId: string;
    outcome: 'completed' | 'failed';
  }): Promise<ProviderPayout> {
    const record = await findMoneyOut(pool, input.transactionId);
    if (!record?.meta.provider) throw decline('not_found', 'The provider has no payout yet');
    const spec = specOfRecord(record);
    const port = spec.port(providers, record.row.mode);
    const payoutId = record.meta.provider.id;
    const payout = await callProvider(
      () =>
        input.outcome === 'failed' ? port.cancel(payoutId, record) : port.check(payoutId, record),
      spec.refusal,
    );
    await setMoneyOutProvider(pool, record.row.id, { id: payout.id, status: payout.status });
    return payout;
  }

  /**
   * Step 3a, the provider paid: the payouts clearing account gives what it reserved to the
   * provider's account and the application's fee account; the record completes with its event.
   */
  /**
   * The accounts and figures of a settlement (and of its reversal), the accounts locked with
   * `first` (the wallet or the payouts clearing account) in the fixed order.
   */
  async function settlementLegs(
    trx: Parameters<Parameters<DatabasePool['transaction']>[0]>[0],
    { row, meta }: MoneyOutRecord,
    first: string,
  ) {
    const spec = specOfRecord({ row, meta });
    const { application_id: app, mode, currency } = row;
    const fees = await systemAccount(trx, app, mode, 'application_fees', currency);
    const provider = await systemAccount(
      trx,
      app,
      mode,
      spec.providerAccount,
      meta.provider_currency,
    );
    const fx =
      meta.provider_currency === currency
        ? null
        : {
            fromAccountId: await systemAccount(trx, app, mode, 'fx', currency),
            toAccountId: await systemAccount(trx, app, mode, 'fx', meta.provider_currency),
            providerCurrency: meta.provider_currency,
            providerAmount: BigInt(meta.provider_amount) + BigInt(meta.provider_fee_provider),
          };
    await lockAccounts(trx, [
      first,
      fees,
      provider,
      ...(fx ? [fx.fromAccountId, fx.toAccountId] : []),
    ]);
    return {
      spec,
      legs: {
        feeAccountId: fees,
        providerAccountId: provider,
        currency,
        providerShare: BigInt(meta.amount) + BigInt(meta.provider_fee),
        applicationFee: BigInt(meta.application_fee),
        fx,
      },
    };
  }

  async function settleMoneyOut(input: {
    transactionId: string;
    audit?: AuditEntry;
  }): Promise<void> {
    await pool.transaction(async (trx) => {
      const { row, meta } = await lockMoneyOut(trx, input.transactionId);
      if (row.status !== 'pending') return;
      const { application_id: app, mode, currency } = row;
      const clearing = await systemAccount(trx, app, mode, 'payouts', currency);
      const { spec, legs } = await settlementLegs(trx, { row, meta }, clearing);
      await recordMoneyStep(trx, {
        transaction: { id: row.id, status: 'completed' },
        ledger: {
          description: `${spec.description}: settle`,
          metadata: {
            step: 'settle',
            provider_reference: row.provider_reference,
            fx_sle_per_usd: meta.fx_sle_per_usd,
          },
          postings: moneyOutSettlementPostings({ clearingAccountId: clearing, ...legs }),
        },
        event: { type: spec.events.completed, data: (done) => moneyOutEventData(done, meta) },
      });
      if (input.audit) await recordAudit(trx, input.audit);
    });
  }

  /**
   * Step 3b, the provider refused or failed: everything reserved goes back from the payouts
   * clearing account to the wallet; the record fails with its event.
   */
  async function giveBackMoneyOut(input: {
    transactionId: string;
    audit?: AuditEntry;
  }): Promise<void> {
    await pool.transaction(async (trx) => {
      const { row, meta } = await lockMoneyOut(trx, input.transactionId);
      if (row.status !== 'pending') return;
      const spec = specOfRecord({ row, meta });
      const clearing = await systemAccount(
        trx,
        row.application_id,
        row.mode,
        'payouts',
        row.currency,
      );
      const walletId = row.wallet_id!;
      await lockAccounts(trx, [walletId, clearing]);
      await recordMoneyStep(trx, {
        transaction: { id: row.id, status: 'failed' },
        ledger: {
          description: `${spec.description}: give back`,
          metadata: { step: 'give_back', provider_reference: row.provider_reference },
          postings: moneyOutGiveBackPostings({
            clearingAccountId: clearing,
            walletId,
            currency: row.currency,
            total: BigInt(meta.total),
          }),
        },
        event: { type: spec.events.failed, data: (failed) => moneyOutEventData(failed, meta) },
      });
      if (input.audit) await recordAudit(trx, input.audit);
    });
  }

  /**
   * After a settlement, the provider reported the payout failed: everything comes back to the
   * wallet (src/domain/ledger.ts `moneyOutReversalPostings`); the record fails with its event.
   * Runs once: a second run finds the record failed.
   */
  async function reverseMoneyOut(input: { transactionId: string }): Promise<void> {
    await pool.transaction(async (trx) => {
      const { row, meta } = await lockMoneyOut(trx, input.transactionId);
      if (row.status !== 'completed') return;
      const walletId = row.wallet_id!;
      const { spec, legs } = await settlementLegs(trx, { row, meta }, walletId);
      await recordMoneyStep(trx, {
        transaction: { id: row.id, status: 'failed' },
        ledger: {
          description: `${spec.description}: reverse`,
          metadata: { step: 'reverse', provider_reference: row.provider_reference },
          postings: moneyOutReversalPostings({ walletId, ...legs }),
        },
        event: { type: spec.events.failed, data: (failed) => moneyOutEventData(failed, meta) },
      });
    });
  }

  return {
    reserveMoneyOut,
    sendMoneyOut,
    checkMoneyOut,
    askMoneyOutForResolution,
    settleMoneyOut,
    giveBackMoneyOut,
    reverseMoneyOut,
  };
}
