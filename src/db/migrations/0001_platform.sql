-- The platform: applications, credentials, users, wallets, the double-entry ledger,
-- payment records, idempotency keys, rate-limit counters and the events outbox.
-- Money is always bigint minor units. The database enforces what must never break.

CREATE TABLE applications (
  id uuid PRIMARY KEY,
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  base_currency text NOT NULL CHECK (base_currency IN ('USD', 'SLE')),
  escrow_fee_bps integer NOT NULL DEFAULT 0 CHECK (escrow_fee_bps BETWEEN 0 AND 10000),
  escrow_fee_fixed bigint NOT NULL DEFAULT 0 CHECK (escrow_fee_fixed >= 0),
  -- application fee per payment method, in basis points: {"mobile_money": 150, ...}
  fee_bps jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(fee_bps) = 'object'),
  -- per-minute rate limits that override the defaults: {"transfers": 100, ...}
  rate_limits jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(rate_limits) = 'object'),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE credentials (
  id uuid PRIMARY KEY,
  application_id uuid NOT NULL REFERENCES applications (id) ON DELETE CASCADE,
  mode text NOT NULL CHECK (mode IN ('test', 'live')),
  -- SHA-256 of the API key (lookup) and of the secret key (constant-time comparison).
  api_key_hash bytea NOT NULL UNIQUE CHECK (length(api_key_hash) = 32),
  api_key_hint text NOT NULL,
  secret_hash bytea NOT NULL CHECK (length(secret_hash) = 32),
  revoked_at timestamptz,
  expires_at timestamptz,
  last_used timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX credentials_application_idx ON credentials (application_id);

CREATE TABLE users (
  id uuid PRIMARY KEY,
  application_id uuid NOT NULL REFERENCES applications (id),
  mode text NOT NULL CHECK (mode IN ('test', 'live')),
  app_user_id text NOT NULL CHECK (length(app_user_id) BETWEEN 1 AND 255),
  name text NOT NULL,
  phone_number text NOT NULL,
  email text,
  username text,
  is_active boolean NOT NULL DEFAULT true,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_email_unique ON users (application_id, mode, lower(email))
  WHERE email IS NOT NULL;
CREATE INDEX users_scope_idx ON users (application_id, mode, created_at, id);

-- Every account of the ledger: user wallets and the system accounts of an application.
CREATE TABLE ledger_accounts (
  id uuid PRIMARY KEY,
  application_id uuid NOT NULL REFERENCES applications (id),
  mode text NOT NULL CHECK (mode IN ('test', 'live')),
  kind text NOT NULL CHECK (kind IN (
    'user_wallet', 'escrow', 'application_fees', 'provider_clearing_mobile_money',
    'provider_clearing_card', 'payouts', 'fx'
  )),
  currency text NOT NULL CHECK (currency IN ('USD', 'SLE')),
  balance bigint NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT user_wallet_not_negative CHECK (kind <> 'user_wallet' OR balance >= 0)
);
-- One system account per application, mode, kind and currency.
CREATE UNIQUE INDEX ledger_accounts_system_unique ON ledger_accounts (application_id, mode, kind, currency)
  WHERE kind <> 'user_wallet';

-- A wallet is a user's ledger account; the row carries what the API shows beyond the balance.
CREATE TABLE wallets (
  id uuid PRIMARY KEY REFERENCES ledger_accounts (id),
  user_id uuid NOT NULL UNIQUE REFERENCES users (id) ON DELETE CASCADE,
  application_id uuid NOT NULL REFERENCES applications (id),
  mode text NOT NULL CHECK (mode IN ('test', 'live')),
  is_active boolean NOT NULL DEFAULT true,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX wallets_scope_idx ON wallets (application_id, mode, created_at, id);

-- Payment records: what the API calls a transaction.
CREATE TABLE transactions (
  id uuid PRIMARY KEY,
  application_id uuid NOT NULL REFERENCES applications (id),
  mode text NOT NULL CHECK (mode IN ('test', 'live')),
  transaction_type text NOT NULL CHECK (transaction_type IN (
    'mobile_money_deposit', 'card_deposit', 'transfer', 'escrow_hold', 'escrow_release',
    'escrow_refund', 'card_payout', 'mobile_money_cashout', 'fee'
  )),
  status text NOT NULL CHECK (status IN ('pending', 'held', 'completed', 'failed', 'expired', 'reversed')),
  wallet_id uuid REFERENCES ledger_accounts (id),
  recipient_wallet_id uuid REFERENCES ledger_accounts (id),
  escrow_wallet_id uuid REFERENCES ledger_accounts (id),
  application_wallet_id uuid REFERENCES ledger_accounts (id),
  currency text NOT NULL CHECK (currency IN ('USD', 'SLE')),
  amount bigint NOT NULL CHECK (amount >= 0),
  escrow_amount bigint NOT NULL DEFAULT 0 CHECK (escrow_amount >= 0),
  application_fee bigint CHECK (application_fee >= 0),
  description text NOT NULL DEFAULT '',
  parent_id uuid REFERENCES transactions (id),
  provider_reference text,
  workflow_id text,
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX transactions_scope_idx ON transactions (application_id, mode, created_at DESC, id);
CREATE INDEX transactions_wallet_idx ON transactions (wallet_id);
CREATE INDEX transactions_recipient_idx ON transactions (recipient_wallet_id);
CREATE UNIQUE INDEX transactions_provider_ref_unique ON transactions (application_id, mode, provider_reference)
  WHERE provider_reference IS NOT NULL;

CREATE TABLE ledger_transactions (
  id uuid PRIMARY KEY,
  application_id uuid NOT NULL REFERENCES applications (id),
  mode text NOT NULL CHECK (mode IN ('test', 'live')),
  transaction_id uuid REFERENCES transactions (id),
  kind text NOT NULL,
  description text NOT NULL DEFAULT '',
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ledger_transactions_payment_idx ON ledger_transactions (transaction_id);

CREATE TABLE ledger_entries (
  id bigserial PRIMARY KEY,
  ledger_transaction_id uuid NOT NULL REFERENCES ledger_transactions (id),
  account_id uuid NOT NULL REFERENCES ledger_accounts (id),
  currency text NOT NULL CHECK (currency IN ('USD', 'SLE')),
  amount bigint NOT NULL CHECK (amount <> 0),
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ledger_entries_account_idx ON ledger_entries (account_id);
CREATE INDEX ledger_entries_transaction_idx ON ledger_entries (ledger_transaction_id);

-- Entries are immutable: a correction is a new ledger transaction.
CREATE FUNCTION ledger_entries_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'ledger entries cannot be updated or deleted' USING ERRCODE = 'restrict_violation';
END $$;
CREATE TRIGGER ledger_entries_no_update BEFORE UPDATE OR DELETE ON ledger_entries
  FOR EACH ROW EXECUTE FUNCTION ledger_entries_immutable();
CREATE TRIGGER ledger_entries_no_truncate BEFORE TRUNCATE ON ledger_entries
  FOR EACH STATEMENT EXECUTE FUNCTION ledger_entries_immutable();

-- An entry's currency is its account's; the stored balance moves with the entry, in the
-- same statement, so that balance = sum of entries always holds.
CREATE FUNCTION ledger_entries_apply() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  account_currency text;
BEGIN
  UPDATE ledger_accounts SET balance = balance + NEW.amount WHERE id = NEW.account_id
    RETURNING currency INTO account_currency;
  IF account_currency IS DISTINCT FROM NEW.currency THEN
    RAISE EXCEPTION 'entry currency % does not match account currency %', NEW.currency, account_currency
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER ledger_entries_apply AFTER INSERT ON ledger_entries
  FOR EACH ROW EXECUTE FUNCTION ledger_entries_apply();

-- A balance changes only through an entry (the trigger above runs at depth 2).
CREATE FUNCTION ledger_accounts_guard_balance() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.balance IS DISTINCT FROM OLD.balance AND pg_trigger_depth() < 2 THEN
    RAISE EXCEPTION 'a balance changes only through ledger entries' USING ERRCODE = 'restrict_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER ledger_accounts_guard_balance BEFORE UPDATE ON ledger_accounts
  FOR EACH ROW EXECUTE FUNCTION ledger_accounts_guard_balance();
CREATE FUNCTION ledger_accounts_guard_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.balance <> 0 THEN
    RAISE EXCEPTION 'an account opens with a zero balance' USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER ledger_accounts_guard_insert BEFORE INSERT ON ledger_accounts
  FOR EACH ROW EXECUTE FUNCTION ledger_accounts_guard_insert();

-- Every ledger transaction balances per currency, checked when the database transaction commits.
CREATE FUNCTION ledger_transaction_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  unbalanced text;
BEGIN
  SELECT currency INTO unbalanced FROM ledger_entries
    WHERE ledger_transaction_id = NEW.ledger_transaction_id
    GROUP BY currency HAVING sum(amount) <> 0 LIMIT 1;
  IF unbalanced IS NOT NULL THEN
    RAISE EXCEPTION 'ledger transaction % does not balance in %', NEW.ledger_transaction_id, unbalanced
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER ledger_transaction_balanced AFTER INSERT ON ledger_entries
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ledger_transaction_balanced();

CREATE TABLE idempotency_keys (
  application_id uuid NOT NULL REFERENCES applications (id),
  mode text NOT NULL CHECK (mode IN ('test', 'live')),
  key text NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
  request_hash bytea NOT NULL,
  response_status integer,
  response_body jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  completed_at timestamptz,
  PRIMARY KEY (application_id, mode, key)
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);

CREATE TABLE rate_limit_counters (
  credential_id uuid NOT NULL REFERENCES credentials (id) ON DELETE CASCADE,
  category text NOT NULL,
  window_start timestamptz NOT NULL,
  count integer NOT NULL,
  PRIMARY KEY (credential_id, category, window_start)
);

-- Events written in the same database transaction as the money movement they describe.
CREATE TABLE events (
  id uuid PRIMARY KEY,
  application_id uuid NOT NULL REFERENCES applications (id),
  mode text NOT NULL CHECK (mode IN ('test', 'live')),
  type text NOT NULL,
  transaction_id uuid REFERENCES transactions (id),
  data jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_scope_idx ON events (application_id, mode, created_at);
CREATE UNIQUE INDEX events_once_per_transaction ON events (transaction_id, type)
  WHERE transaction_id IS NOT NULL;
