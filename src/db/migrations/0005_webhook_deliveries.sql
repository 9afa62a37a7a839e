-- Webhook deliveries: the outbox relay marks each event once it has started the
-- event's deliveries; one delivery per (event, subscription), every attempt recorded.

-- NULL until the relay has started a delivery workflow for every matching subscription.
ALTER TABLE events ADD COLUMN relayed_at timestamptz;
CREATE INDEX events_unrelayed_idx ON events (created_at, id) WHERE relayed_at IS NULL;
CREATE INDEX events_scope_type_idx ON events (application_id, mode, type, created_at);

-- Wakes the relay (LISTEN webhook_events) when an event commits; NOTIFY is delivered at commit,
-- so the relay never sees an event before it can read it. A statement-level trigger sends one
-- notification per insert statement, and Postgres folds repeats within a transaction.
CREATE FUNCTION notify_webhook_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('webhook_events', '');
  RETURN NULL;
END;
$$;
CREATE TRIGGER events_notify_webhook_relay AFTER INSERT ON events
  FOR EACH STATEMENT EXECUTE FUNCTION notify_webhook_events();

-- No foreign key to the subscription: a deleted subscription's deliveries stay as history.
CREATE TABLE webhook_deliveries (
  event_id uuid NOT NULL REFERENCES events (id) ON DELETE CASCADE,
  subscription_id uuid NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  last_status_code integer,
  last_error text,
  next_attempt_at timestamptz,
  delivered_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (event_id, subscription_id)
);
CREATE INDEX webhook_deliveries_subscription_idx ON webhook_deliveries (subscription_id);

CREATE TABLE webhook_delivery_attempts (
  event_id uuid NOT NULL,
  subscription_id uuid NOT NULL,
  attempt integer NOT NULL CHECK (attempt >= 1),
  url text NOT NULL,
  status_code integer,
  error text,
  attempted_at timestamptz NOT NULL DEFAULT now(),
  duration_ms integer NOT NULL CHECK (duration_ms >= 0),
  PRIMARY KEY (event_id, subscription_id, attempt),
  FOREIGN KEY (event_id, subscription_id)
    REFERENCES webhook_deliveries (event_id, subscription_id) ON DELETE CASCADE
);
