-- The sandbox card provider (Test Mode) keeps its payments here, so that it behaves the same
-- across restarts and across workers; the unique idempotency key makes a retried createPayment
-- return the payment the first call created instead of charging again.
CREATE TABLE sandbox_card_payments (
  id text PRIMARY KEY,
  idempotency_key text NOT NULL UNIQUE,
  reference text NOT NULL,
  amount bigint NOT NULL CHECK (amount > 0),
  currency text NOT NULL CHECK (currency IN ('USD', 'SLE')),
  payment_method_id text NOT NULL,
  status text NOT NULL CHECK (status IN ('succeeded', 'requires_action', 'processing', 'failed')),
  decline_message text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sandbox_card_payments_reference_idx ON sandbox_card_payments (reference);
