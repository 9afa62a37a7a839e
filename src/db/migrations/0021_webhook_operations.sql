-- Webhook operations (docs/api.md, Webhooks): redeliveries, secret rotation with an
-- overlap, failing endpoints turned off.

-- A redelivery is a delivery of its own, numbered per (event, subscription): 0 is the relay's
-- delivery, 1 and up the redeliveries asked for, each with its own attempts.
ALTER TABLE webhook_delivery_attempts
  DROP CONSTRAINT webhook_delivery_attempts_event_id_subscription_id_fkey,
  DROP CONSTRAINT webhook_delivery_attempts_pkey;
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_pkey;
ALTER TABLE webhook_deliveries
  ADD COLUMN redelivery integer NOT NULL DEFAULT 0 CHECK (redelivery >= 0),
  ADD PRIMARY KEY (event_id, subscription_id, redelivery);
ALTER TABLE webhook_delivery_attempts
  ADD COLUMN redelivery integer NOT NULL DEFAULT 0,
  ADD PRIMARY KEY (event_id, subscription_id, redelivery, attempt),
  ADD FOREIGN KEY (event_id, subscription_id, redelivery)
    REFERENCES webhook_deliveries (event_id, subscription_id, redelivery) ON DELETE CASCADE;

-- The secret a rotation replaced, sealed like the current one, until it expires; both are
-- NULL together. `failing_since`: the first failed attempt since the last 2xx (or since the
-- subscription was turned on again); 72 hours of it turns the subscription off.
ALTER TABLE webhook_subscriptions
  ADD COLUMN previous_secret_sealed text,
  ADD COLUMN previous_secret_expires_at timestamptz,
  ADD COLUMN failing_since timestamptz,
  ADD COLUMN disabled_reason text CHECK (disabled_reason IN ('failing')),
  ADD CONSTRAINT webhook_subscriptions_previous_secret_whole
    CHECK ((previous_secret_sealed IS NULL) = (previous_secret_expires_at IS NULL));
CREATE INDEX webhook_subscriptions_previous_secret_expiry_idx
  ON webhook_subscriptions (previous_secret_expires_at) WHERE previous_secret_expires_at IS NOT NULL;
