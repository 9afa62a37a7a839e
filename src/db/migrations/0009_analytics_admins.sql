-- Analytics and platform admins.
--
-- analytics_daily: per application, mode, UTC day of creation, currency and type, how many
-- payments there are, how many completed, their volume and the fees collected on them. A
-- trigger on transactions keeps it in the same database transaction as every money step, so
-- the dashboard reads a few hundred rows instead of summing millions, and is never stale.
CREATE TABLE analytics_daily (
  application_id uuid NOT NULL REFERENCES applications (id),
  mode text NOT NULL CHECK (mode IN ('test', 'live')),
  day date NOT NULL,
  currency text NOT NULL CHECK (currency IN ('USD', 'SLE')),
  transaction_type text NOT NULL,
  total_count bigint NOT NULL DEFAULT 0,
  completed_count bigint NOT NULL DEFAULT 0,
  completed_volume bigint NOT NULL DEFAULT 0,
  fees bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (application_id, mode, day, currency, transaction_type)
);
CREATE INDEX analytics_daily_day_idx ON analytics_daily (day);

-- Adds (sign 1) or takes away (sign -1) one payment row's share of its day.
CREATE FUNCTION analytics_daily_add(t transactions, sign integer) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  done boolean := t.status = 'completed';
BEGIN
  INSERT INTO analytics_daily AS d (application_id, mode, day, currency, transaction_type,
    total_count, completed_count, completed_volume, fees)
  VALUES (t.application_id, t.mode, (t.created_at AT TIME ZONE 'UTC')::date, t.currency,
    t.transaction_type, sign,
    CASE WHEN done THEN sign ELSE 0 END,
    CASE WHEN done THEN sign * t.amount ELSE 0 END,
    CASE WHEN done THEN sign * coalesce(t.application_fee, 0) ELSE 0 END)
  ON CONFLICT (application_id, mode, day, currency, transaction_type) DO UPDATE SET
    total_count = d.total_count + EXCLUDED.total_count,
    completed_count = d.completed_count + EXCLUDED.completed_count,
    completed_volume = d.completed_volume + EXCLUDED.completed_volume,
    fees = d.fees + EXCLUDED.fees;
END $$;

CREATE FUNCTION analytics_daily_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    PERFORM analytics_daily_add(OLD, -1);
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    PERFORM analytics_daily_add(NEW, 1);
  END IF;
  RETURN NULL;
END $$;
-- Deferred to the commit: the day's row is locked only while the money step's transaction
-- commits, so that concurrent payments of one application queue on it for that instant only.
CREATE CONSTRAINT TRIGGER analytics_daily_insert AFTER INSERT OR DELETE ON transactions
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION analytics_daily_apply();
-- Only a change that moves a figure touches the rollup (not a shrinking hold or new metadata).
CREATE CONSTRAINT TRIGGER analytics_daily_update AFTER UPDATE ON transactions
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW WHEN (
    OLD.status IS DISTINCT FROM NEW.status OR OLD.amount IS DISTINCT FROM NEW.amount
    OR OLD.application_fee IS DISTINCT FROM NEW.application_fee
    OR OLD.currency IS DISTINCT FROM NEW.currency OR OLD.created_at IS DISTINCT FROM NEW.created_at
    OR OLD.transaction_type IS DISTINCT FROM NEW.transaction_type
    OR OLD.application_id IS DISTINCT FROM NEW.application_id OR OLD.mode IS DISTINCT FROM NEW.mode)
  EXECUTE FUNCTION analytics_daily_apply();

-- Recomputes the rollup from the payment records: here for the records already written, and
-- after a bulk load that bypassed the triggers (the benchmark's seed).
CREATE FUNCTION analytics_daily_rebuild() RETURNS void LANGUAGE sql AS $$
  DELETE FROM analytics_daily;
  INSERT INTO analytics_daily (application_id, mode, day, currency, transaction_type, total_count,
    completed_count, completed_volume, fees)
  SELECT application_id, mode, (created_at AT TIME ZONE 'UTC')::date, currency, transaction_type,
    count(*),
    count(*) FILTER (WHERE status = 'completed'),
    coalesce(sum(amount) FILTER (WHERE status = 'completed'), 0),
    coalesce(sum(application_fee) FILTER (WHERE status = 'completed'), 0)
  FROM transactions
  GROUP BY 1, 2, 3, 4, 5;
$$;
SELECT analytics_daily_rebuild();

-- Wallet counts and balances per scope without walking every account.
CREATE INDEX wallets_scope_active_idx ON wallets (application_id, mode, is_active);
CREATE INDEX users_scope_active_idx ON users (application_id, mode, is_active);

-- Platform admins: the operators, not applications. One credential each, hashed like the
-- applications' (SHA-256 of random values); revoking it ends the admin's access.
CREATE TABLE admins (
  id uuid PRIMARY KEY,
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  api_key_hash bytea NOT NULL UNIQUE CHECK (length(api_key_hash) = 32),
  api_key_hint text NOT NULL,
  secret_hash bytea NOT NULL CHECK (length(secret_hash) = 32),
  revoked_at timestamptz,
  last_used timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE admin_rate_limit_counters (
  admin_id uuid NOT NULL REFERENCES admins (id) ON DELETE CASCADE,
  category text NOT NULL,
  window_start timestamptz NOT NULL,
  count integer NOT NULL,
  PRIMARY KEY (admin_id, category, window_start)
);

-- Failed authentications per scope (admin API, dashboard sign-in) and client address, shared
-- by every API process: enough of them in a window locks the address out for a while.
CREATE TABLE auth_failures (
  scope text NOT NULL CHECK (length(scope) BETWEEN 1 AND 100),
  address text NOT NULL CHECK (length(address) BETWEEN 1 AND 100),
  failed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX auth_failures_lookup_idx ON auth_failures (scope, address, failed_at DESC);

CREATE TABLE auth_lockouts (
  scope text NOT NULL,
  address text NOT NULL,
  locked_until timestamptz NOT NULL,
  PRIMARY KEY (scope, address)
);
