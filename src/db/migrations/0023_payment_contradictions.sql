-- A provider's answer that contradicts a payment the engine has ended (paid after the engine
-- failed it, failed after it completed it), never dropped (docs/operations.md, Resolving a stuck
-- payment). One row per payment and provider status: a repeated notification finds the first.
CREATE TABLE payment_contradictions (
  id uuid PRIMARY KEY,
  transaction_id uuid NOT NULL REFERENCES transactions (id),
  application_id uuid NOT NULL REFERENCES applications (id),
  mode text NOT NULL CHECK (mode IN ('test', 'live')),
  engine_status text NOT NULL,
  provider_status text NOT NULL,
  -- In the provider's minor units, as its message said; null when it said no amount.
  provider_amount bigint,
  -- The provider whose message it was.
  source text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (transaction_id, provider_status)
);
CREATE INDEX payment_contradictions_scope_idx
  ON payment_contradictions (application_id, mode, created_at);
