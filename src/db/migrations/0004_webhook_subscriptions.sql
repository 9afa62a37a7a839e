-- Outbound webhook subscriptions, per application and mode. The secret signs every
-- delivery, so it is kept sealed (AES-256-GCM, src/crypto/secret-box.ts), never in clear.
CREATE TABLE webhook_subscriptions (
  id uuid PRIMARY KEY,
  application_id uuid NOT NULL REFERENCES applications (id) ON DELETE CASCADE,
  mode text NOT NULL CHECK (mode IN ('test', 'live')),
  url text NOT NULL CHECK (length(url) BETWEEN 1 AND 2048),
  events text[] NOT NULL,
  is_active boolean NOT NULL DEFAULT true,
  secret_sealed text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_subscriptions_owner_idx
  ON webhook_subscriptions (application_id, mode, created_at, id);
