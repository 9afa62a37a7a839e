-- The sandbox mobile-money provider (Test Mode) keeps its state here, so that it behaves the
-- same across restarts and across workers.
CREATE TABLE sandbox_payment_codes (
  id text PRIMARY KEY,
  idempotency_key text NOT NULL UNIQUE,
  reference text NOT NULL,
  name text NOT NULL,
  amount bigint NOT NULL CHECK (amount > 0),
  deposit_amount bigint NOT NULL CHECK (deposit_amount > 0),
  currency text NOT NULL DEFAULT 'SLE' CHECK (currency = 'SLE'),
  code text NOT NULL,
  instructions text NOT NULL,
  status text NOT NULL CHECK (status IN ('pending', 'completed', 'failed', 'expired')),
  expires_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sandbox_payment_codes_reference_idx ON sandbox_payment_codes (reference);

-- Inbound provider notifications, recorded before they are acted on.
CREATE TABLE provider_notifications (
  id uuid PRIMARY KEY,
  provider text NOT NULL,
  payment_reference text NOT NULL,
  status text NOT NULL,
  transaction_id uuid,
  body jsonb NOT NULL,
  received_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX provider_notifications_reference_idx ON provider_notifications (payment_reference);
CREATE INDEX transactions_pending_idx ON transactions (status, created_at) WHERE status = 'pending';
