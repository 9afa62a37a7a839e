-- Reconciliation against the providers' books (docs/operations.md, Reconcile with a provider):
-- the provider's records of a window are loaded, matched to the engine's payments on the
-- provider reference, and every disagreement is kept as an exception an operator resolves.

-- A settlement file an application uploaded; the same file twice is the first import.
CREATE TABLE recon_imports (
  id uuid PRIMARY KEY,
  application_id uuid NOT NULL REFERENCES applications (id),
  mode text NOT NULL CHECK (mode IN ('test', 'live')),
  provider text NOT NULL CHECK (provider IN ('mobile_money', 'card')),
  sha256 text NOT NULL,
  rows integer NOT NULL CHECK (rows >= 0),
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (application_id, mode, sha256)
);
CREATE INDEX recon_imports_scope_idx ON recon_imports (application_id, mode, created_at DESC, id);

-- The rows of an imported file, amounts in minor units of their currency.
CREATE TABLE recon_import_records (
  import_id uuid NOT NULL REFERENCES recon_imports (id) ON DELETE CASCADE,
  row_number integer NOT NULL,
  provider_reference text NOT NULL,
  booked_at timestamptz NOT NULL,
  amount bigint NOT NULL CHECK (amount >= 0),
  currency text NOT NULL,
  fee bigint NOT NULL CHECK (fee >= 0),
  direction text NOT NULL CHECK (direction IN ('in', 'out')),
  status text NOT NULL CHECK (status IN ('succeeded', 'failed', 'reversed')),
  PRIMARY KEY (import_id, row_number)
);

-- One run over one provider's records of the window [window_from, window_to).
CREATE TABLE recon_runs (
  id uuid PRIMARY KEY,
  application_id uuid NOT NULL REFERENCES applications (id),
  mode text NOT NULL CHECK (mode IN ('test', 'live')),
  provider text NOT NULL CHECK (provider IN ('mobile_money', 'card')),
  window_from timestamptz NOT NULL,
  window_to timestamptz NOT NULL CHECK (window_to > window_from),
  import_id uuid REFERENCES recon_imports (id),
  -- Who asked: the API (on demand) or the daily schedule.
  origin text NOT NULL DEFAULT 'api' CHECK (origin IN ('api', 'schedule')),
  status text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'completed', 'failed')),
  matched integer NOT NULL DEFAULT 0,
  missing_internal integer NOT NULL DEFAULT 0,
  missing_external integer NOT NULL DEFAULT 0,
  amount_mismatch integer NOT NULL DEFAULT 0,
  status_mismatch integer NOT NULL DEFAULT 0,
  duplicate integer NOT NULL DEFAULT 0,
  failure text,
  created_at timestamptz NOT NULL DEFAULT now(),
  completed_at timestamptz
);
CREATE INDEX recon_runs_scope_idx ON recon_runs (application_id, mode, created_at DESC, id);
-- The schedule's run of a day is started once, whichever worker's schedule fires.
CREATE UNIQUE INDEX recon_runs_scheduled_unique
  ON recon_runs (application_id, mode, provider, window_from) WHERE origin = 'schedule';

-- The provider's records a run loaded (staging); `seq` is the record's place in the source, so
-- a chunk loaded again after a crash writes nothing twice. Deleted when the run ends.
CREATE TABLE recon_run_records (
  run_id uuid NOT NULL REFERENCES recon_runs (id) ON DELETE CASCADE,
  seq bigint NOT NULL,
  provider_reference text NOT NULL,
  booked_at timestamptz NOT NULL,
  amount bigint NOT NULL CHECK (amount >= 0),
  currency text NOT NULL,
  fee bigint NOT NULL DEFAULT 0 CHECK (fee >= 0),
  direction text NOT NULL CHECK (direction IN ('in', 'out')),
  status text NOT NULL CHECK (status IN ('succeeded', 'failed', 'reversed')),
  PRIMARY KEY (run_id, seq)
);
CREATE INDEX recon_run_records_reference_idx ON recon_run_records (run_id, provider_reference);

-- One disagreement between the ledger and a provider. `identity` names the disagreement (its
-- kind and the provider reference, or the payment when the provider has none): a later run that
-- finds it again updates this row instead of adding one.
CREATE TABLE recon_exceptions (
  id uuid PRIMARY KEY,
  application_id uuid NOT NULL REFERENCES applications (id),
  mode text NOT NULL CHECK (mode IN ('test', 'live')),
  provider text NOT NULL CHECK (provider IN ('mobile_money', 'card')),
  identity text NOT NULL,
  -- The run that found it last; null when the engine found it itself (a contradiction).
  run_id uuid REFERENCES recon_runs (id),
  kind text NOT NULL CHECK (kind IN (
    'missing_internal', 'missing_external', 'amount_mismatch', 'status_mismatch', 'duplicate')),
  transaction_id uuid REFERENCES transactions (id),
  provider_reference text,
  -- {amount, status} as the engine has it, {amount, status, booked_at} as the provider has it.
  ours jsonb,
  theirs jsonb,
  status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'resolved')),
  resolution text CHECK (resolution IN ('accept', 'adjust')),
  note text,
  resolved_by text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  resolved_at timestamptz,
  UNIQUE (application_id, mode, provider, identity),
  CHECK ((status = 'resolved') = (resolution IS NOT NULL AND resolved_at IS NOT NULL))
);
CREATE INDEX recon_exceptions_scope_idx ON recon_exceptions (application_id, mode, created_at DESC, id);
CREATE INDEX recon_exceptions_open_idx ON recon_exceptions (application_id, mode, kind)
  WHERE status = 'open';
CREATE INDEX recon_exceptions_transaction_idx ON recon_exceptions (transaction_id)
  WHERE transaction_id IS NOT NULL;
CREATE INDEX recon_exceptions_run_idx ON recon_exceptions (run_id);

-- The ledger transaction an `adjust` resolution wrote, once per exception.
CREATE TABLE recon_adjustments (
  id uuid PRIMARY KEY,
  exception_id uuid NOT NULL UNIQUE REFERENCES recon_exceptions (id),
  ledger_transaction_id uuid NOT NULL REFERENCES ledger_transactions (id),
  wallet_id uuid NOT NULL REFERENCES ledger_accounts (id),
  -- Signed: positive credits the wallet, negative debits it.
  amount bigint NOT NULL CHECK (amount <> 0),
  currency text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
