-- Money out: the sandbox mobile-money provider's payouts (Test Mode cashouts). The
-- unique idempotency key makes a retried payout call return the payout the first call created,
-- so a cashout never pays out twice; `calls` counts the calls per key (tests read it).
CREATE TABLE sandbox_mobile_money_payouts (
  id text PRIMARY KEY,
  idempotency_key text NOT NULL UNIQUE,
  reference text NOT NULL,
  amount bigint NOT NULL CHECK (amount > 0),
  currency text NOT NULL DEFAULT 'SLE' CHECK (currency = 'SLE'),
  phone_number text NOT NULL,
  status text NOT NULL CHECK (status IN ('pending', 'completed', 'failed')),
  calls integer NOT NULL DEFAULT 1 CHECK (calls >= 1),
  expires_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sandbox_mobile_money_payouts_reference_idx ON sandbox_mobile_money_payouts (reference);
