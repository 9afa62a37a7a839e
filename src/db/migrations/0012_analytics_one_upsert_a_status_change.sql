-- A payment row updated within its own rollup row (a status change: a hold released or refunded,
-- a deposit or payout settled) moves that row's figures in one upsert instead of taking its old
-- share away and adding its new one in two, and touches nothing when no figure moves (a hold
-- refunded: held and reversed both count as not completed). The figures come out as before:
-- analytics_daily_rebuild() gives the same rows (test/e2e/analytics.test.ts).

-- One rollup row moved by the given amounts: the upsert that every change of the rollup makes.
CREATE FUNCTION analytics_daily_bump(t transactions, total bigint, completed bigint,
  volume bigint, fee bigint) RETURNS void LANGUAGE sql AS $$
  INSERT INTO analytics_daily AS d (application_id, mode, day, currency, transaction_type,
    total_count, completed_count, completed_volume, fees)
  VALUES (t.application_id, t.mode, (t.created_at AT TIME ZONE 'UTC')::date, t.currency,
    t.transaction_type, total, completed, volume, fee)
  ON CONFLICT (application_id, mode, day, currency, transaction_type) DO UPDATE SET
    total_count = d.total_count + EXCLUDED.total_count,
    completed_count = d.completed_count + EXCLUDED.completed_count,
    completed_volume = d.completed_volume + EXCLUDED.completed_volume,
    fees = d.fees + EXCLUDED.fees;
$$;

-- Adds (sign 1) or takes away (sign -1) one payment row's share of its day, as before.
CREATE OR REPLACE FUNCTION analytics_daily_add(t transactions, sign integer) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  done boolean := t.status = 'completed';
BEGIN
  PERFORM analytics_daily_bump(t, sign,
    CASE WHEN done THEN sign ELSE 0 END,
    CASE WHEN done THEN sign * t.amount ELSE 0 END,
    CASE WHEN done THEN sign * coalesce(t.application_fee, 0) ELSE 0 END);
END $$;

-- A row's status, amount or fee changed within its rollup row: the difference, or nothing.
CREATE FUNCTION analytics_daily_move(o transactions, n transactions) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  was boolean := o.status = 'completed';
  now_done boolean := n.status = 'completed';
  completed bigint := (CASE WHEN now_done THEN 1 ELSE 0 END) - (CASE WHEN was THEN 1 ELSE 0 END);
  volume bigint := (CASE WHEN now_done THEN n.amount ELSE 0 END)
    - (CASE WHEN was THEN o.amount ELSE 0 END);
  fee bigint := (CASE WHEN now_done THEN coalesce(n.application_fee, 0) ELSE 0 END)
    - (CASE WHEN was THEN coalesce(o.application_fee, 0) ELSE 0 END);
BEGIN
  IF completed <> 0 OR volume <> 0 OR fee <> 0 THEN
    PERFORM analytics_daily_bump(n, 0, completed, volume, fee);
  END IF;
END $$;

CREATE OR REPLACE FUNCTION analytics_daily_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE'
    AND OLD.application_id = NEW.application_id AND OLD.mode = NEW.mode
    AND OLD.currency = NEW.currency AND OLD.transaction_type = NEW.transaction_type
    AND (OLD.created_at AT TIME ZONE 'UTC')::date = (NEW.created_at AT TIME ZONE 'UTC')::date
  THEN
    PERFORM analytics_daily_move(OLD, NEW);
    RETURN NULL;
  END IF;
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    PERFORM analytics_daily_add(OLD, -1);
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    PERFORM analytics_daily_add(NEW, 1);
  END IF;
  RETURN NULL;
END $$;
