-- Inbound notifications that heal themselves and scheduled reconciliation.
--
-- A provider notification is kept with what the engine read of it (the provider's payment
-- reference, our transaction id from its metadata, the status) and what became of it:
-- `matched` (handed to its payment's workflow), `unmatched` (no payment could take it yet: the
-- reconciliation retries it) or `ignored` (it can never apply: another mode's payment).
ALTER TABLE provider_notifications
  ADD COLUMN kind text,
  ADD COLUMN mode text CHECK (mode IN ('test', 'live')),
  ADD COLUMN reference text,
  ADD COLUMN outcome text NOT NULL DEFAULT 'matched'
    CHECK (outcome IN ('matched', 'unmatched', 'ignored')),
  ADD COLUMN attempts integer NOT NULL DEFAULT 1,
  ADD COLUMN last_attempt_at timestamptz NOT NULL DEFAULT now();
-- Rows written before this migration were acted on when they arrived (or could never be).
UPDATE provider_notifications SET outcome = 'ignored' WHERE transaction_id IS NULL;
CREATE INDEX provider_notifications_unmatched_idx
  ON provider_notifications (received_at) WHERE outcome = 'unmatched';

-- One row per run of the reconciliation workflow: what it looked at and what it changed.
CREATE TABLE reconciliation_runs (
  workflow_id text NOT NULL,
  run_id text PRIMARY KEY,
  started_at timestamptz NOT NULL,
  finished_at timestamptz NOT NULL DEFAULT now(),
  grace_seconds integer NOT NULL,
  payments_checked integer NOT NULL,
  payments_changed integer NOT NULL,
  notifications_retried integer NOT NULL,
  notifications_matched integer NOT NULL,
  -- [{transaction_id, transaction_type, from, to}] and [{transaction_id, error}]
  changes jsonb NOT NULL,
  errors jsonb NOT NULL
);
CREATE INDEX reconciliation_runs_finished_idx ON reconciliation_runs (finished_at DESC);
