-- Bulk payments (docs/api.md, Bulk payments): a batch of transfers, cashouts or card payouts,
-- its items and their outcomes. The counts live here, so that reading a batch never asks Temporal.

CREATE TABLE batches (
  id uuid PRIMARY KEY,
  application_id uuid NOT NULL REFERENCES applications (id),
  mode text NOT NULL CHECK (mode IN ('test', 'live')),
  -- Whose rate limits the items count against as the batch starts them; gone with its credential.
  credential_id uuid REFERENCES credentials (id) ON DELETE SET NULL,
  kind text NOT NULL CHECK (kind IN ('transfer', 'mobile_money_cashout', 'card_payout')),
  atomic boolean NOT NULL DEFAULT false,
  status text NOT NULL DEFAULT 'processing'
    CHECK (status IN ('processing', 'completed', 'partially_failed', 'failed', 'canceled')),
  total integer NOT NULL CHECK (total BETWEEN 1 AND 10000),
  succeeded integer NOT NULL DEFAULT 0 CHECK (succeeded >= 0),
  failed integer NOT NULL DEFAULT 0 CHECK (failed >= 0),
  canceled integer NOT NULL DEFAULT 0 CHECK (canceled >= 0),
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  idempotency_key text,
  -- Asked to cancel the items not started yet.
  cancel_requested boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  completed_at timestamptz,
  CHECK (NOT atomic OR (kind = 'transfer' AND total <= 1000)),
  CHECK (succeeded + failed + canceled <= total),
  CHECK ((status = 'processing') = (completed_at IS NULL))
);
CREATE INDEX batches_scope_idx ON batches (application_id, mode, created_at DESC, id);

-- One item: the body its single endpoint takes, validated (amounts in minor units), and the id
-- its payment has (derived as the single endpoint derives it), whether or not that was written.
CREATE TABLE batch_items (
  batch_id uuid NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
  item_index integer NOT NULL CHECK (item_index >= 0),
  reference text CHECK (length(reference) BETWEEN 1 AND 100),
  status text NOT NULL DEFAULT 'pending'
    CHECK (status IN ('pending', 'succeeded', 'failed', 'canceled')),
  transaction_id uuid NOT NULL,
  -- A failed item's decline: its error code (the API's status comes from it) and detail.
  error_code text,
  error_detail text,
  body jsonb NOT NULL,
  PRIMARY KEY (batch_id, item_index),
  UNIQUE (batch_id, reference),
  CHECK ((status = 'failed') = (error_code IS NOT NULL))
);
CREATE INDEX batch_items_status_idx ON batch_items (batch_id, status, item_index);
