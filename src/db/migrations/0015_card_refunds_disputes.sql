-- Card refunds and disputes (docs/api.md, Refunds and Disputes): three payment types,
-- the application's dispute reserve account, the disputes themselves and the sandbox's refunds.
ALTER TABLE transactions DROP CONSTRAINT transactions_transaction_type_check;
ALTER TABLE transactions ADD CONSTRAINT transactions_transaction_type_check CHECK (transaction_type IN (
  'mobile_money_deposit', 'card_deposit', 'transfer', 'escrow_hold', 'escrow_release',
  'escrow_refund', 'card_payout', 'mobile_money_cashout', 'fee',
  'card_refund', 'dispute_reserve', 'dispute_release'
));

ALTER TABLE ledger_accounts DROP CONSTRAINT ledger_accounts_kind_check;
ALTER TABLE ledger_accounts ADD CONSTRAINT ledger_accounts_kind_check CHECK (kind IN (
  'user_wallet', 'escrow', 'application_fees', 'provider_clearing_mobile_money',
  'provider_clearing_card', 'payouts', 'fx', 'dispute_reserve'
));

-- A refund's and a dispute record's deposit is their parent: what is refundable sums them.
CREATE INDEX transactions_parent_idx ON transactions (parent_id) WHERE parent_id IS NOT NULL;

-- A card deposit the payer contests. `amount` is disputed; `reserved_amount` left the wallet
-- for the dispute reserve; `uncovered_amount` is what the wallet lacked (owed by the application).
CREATE TABLE disputes (
  id uuid PRIMARY KEY,
  application_id uuid NOT NULL REFERENCES applications (id),
  mode text NOT NULL CHECK (mode IN ('test', 'live')),
  transaction_id uuid NOT NULL REFERENCES transactions (id),
  wallet_id uuid NOT NULL REFERENCES ledger_accounts (id),
  currency text NOT NULL CHECK (currency IN ('USD', 'SLE')),
  amount bigint NOT NULL CHECK (amount > 0),
  reserved_amount bigint NOT NULL DEFAULT 0 CHECK (reserved_amount >= 0),
  uncovered_amount bigint NOT NULL DEFAULT 0 CHECK (uncovered_amount >= 0),
  reason text NOT NULL,
  status text NOT NULL CHECK (status IN ('needs_response', 'under_review', 'won', 'lost')),
  evidence text CHECK (evidence IS NULL OR length(evidence) BETWEEN 1 AND 20000),
  evidence_due_by timestamptz NOT NULL,
  provider_reference text,
  workflow_id text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT disputes_covered CHECK (reserved_amount + uncovered_amount = amount)
);
CREATE INDEX disputes_scope_idx ON disputes (application_id, mode, created_at DESC, id);
CREATE INDEX disputes_transaction_idx ON disputes (transaction_id);
CREATE UNIQUE INDEX disputes_provider_ref_unique ON disputes (application_id, mode, provider_reference)
  WHERE provider_reference IS NOT NULL;

-- The sandbox card provider's refunds (Test Mode), kept like its payments: the unique key makes
-- a retried refund return the first one; `fails_at` is when an accepted refund reads failed.
CREATE TABLE sandbox_card_refunds (
  id text PRIMARY KEY,
  payment_id text NOT NULL REFERENCES sandbox_card_payments (id),
  idempotency_key text NOT NULL UNIQUE,
  reference text NOT NULL,
  amount bigint NOT NULL CHECK (amount > 0),
  currency text NOT NULL CHECK (currency IN ('USD', 'SLE')),
  status text NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
  fails_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sandbox_card_refunds_payment_idx ON sandbox_card_refunds (payment_id);
