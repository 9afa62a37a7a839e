-- Payout-account onboarding. One connected payout account at the card provider per
-- wallet: the owner's identity lives at the provider, not here; this row keeps what the engine
-- decides on (payouts enabled, a payout card) and the evidence of terms acceptance (the end
-- customer's address and the time). Deleting the user deletes the wallet and, with it, these.
CREATE TABLE payout_accounts (
  wallet_id uuid PRIMARY KEY REFERENCES wallets (id) ON DELETE CASCADE,
  application_id uuid NOT NULL REFERENCES applications (id),
  mode text NOT NULL CHECK (mode IN ('test', 'live')),
  provider text NOT NULL,
  account_id text NOT NULL UNIQUE,
  payouts_enabled boolean NOT NULL DEFAULT false,
  external_account_id text,
  external_account_added boolean NOT NULL DEFAULT false,
  external_account_last4 text,
  -- {currently_due: [], pending_verification: [], disabled_reason: null}, as the provider said.
  requirements jsonb NOT NULL,
  tos_ip inet NOT NULL,
  tos_accepted_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX payout_accounts_scope_idx ON payout_accounts (application_id, mode);

-- Identity documents uploaded for verification: kept here (never in a log), checked for type and
-- size before they are stored, then sent to the provider (provider_file_id once it has them).
CREATE TABLE payout_documents (
  id uuid PRIMARY KEY,
  wallet_id uuid NOT NULL REFERENCES payout_accounts (wallet_id) ON DELETE CASCADE,
  purpose text NOT NULL CHECK (purpose IN ('identity_document')),
  content_type text NOT NULL CHECK (content_type IN ('image/jpeg', 'image/png', 'application/pdf')),
  size integer NOT NULL CHECK (size BETWEEN 1 AND 10485760),
  content bytea NOT NULL,
  provider_file_id text,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX payout_documents_wallet_idx ON payout_documents (wallet_id, created_at);

-- The sandbox card provider's connected accounts (Test Mode), so that it behaves the same across
-- restarts and workers. `verification`: the identity is verified, a document is due, or one was
-- received and is checked at the next look (the provider's asynchronous verification).
CREATE TABLE sandbox_connect_accounts (
  id text PRIMARY KEY,
  idempotency_key text NOT NULL UNIQUE,
  verification text NOT NULL CHECK (verification IN ('verified', 'document_due', 'document_pending')),
  external_account_id text,
  external_account_token text,
  external_account_last4 text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- The sandbox's payouts to connected accounts' debit cards, one per idempotency key.
CREATE TABLE sandbox_connect_payouts (
  id text PRIMARY KEY,
  idempotency_key text NOT NULL UNIQUE,
  account_id text NOT NULL REFERENCES sandbox_connect_accounts (id),
  reference text NOT NULL,
  amount bigint NOT NULL CHECK (amount > 0),
  currency text NOT NULL CHECK (currency IN ('USD', 'SLE')),
  -- An accepted payout that fails later (the sandbox's 40.40) reads `failed` at the next look.
  status text NOT NULL CHECK (status IN ('paid', 'pending', 'failed')),
  fails_later boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now()
);
