-- Team access (docs/dashboard.md, Team): each dashboard account has one role, an owner invites
-- with a one-time link, and an account may add a second step (TOTP) to its sign-in.

-- Accounts made before roles existed ran everything: they become owners.
ALTER TABLE dashboard_users
  ADD COLUMN role text NOT NULL DEFAULT 'owner'
    CHECK (role IN ('owner', 'developer', 'operator', 'viewer')),
  -- The TOTP secret, sealed (it must be read to check a code), on only once a code matched.
  ADD COLUMN totp_secret_sealed text,
  ADD COLUMN totp_enabled_at timestamptz,
  -- A secret shown for enrolment, waiting for its first valid code.
  ADD COLUMN totp_pending_sealed text,
  -- The last time step a code was accepted at: a code is never accepted twice.
  ADD COLUMN totp_last_step bigint,
  ADD CONSTRAINT dashboard_users_totp_enabled CHECK (
    (totp_enabled_at IS NULL) = (totp_secret_sealed IS NULL));
ALTER TABLE dashboard_users ALTER COLUMN role DROP DEFAULT;
CREATE INDEX dashboard_users_owners_idx ON dashboard_users (application_id) WHERE role = 'owner';

-- One-time recovery codes, stored as SHA-256 (each has enough random bits for one hash).
CREATE TABLE dashboard_recovery_codes (
  id uuid PRIMARY KEY,
  dashboard_user_id uuid NOT NULL REFERENCES dashboard_users (id) ON DELETE CASCADE,
  code_hash bytea NOT NULL,
  used_at timestamptz,
  UNIQUE (dashboard_user_id, code_hash)
);

-- `needs`: what a session waits for before it may do anything but finish signing in.
-- `confirmed_at`: when the password or a code was last given, for actions that want it fresh.
ALTER TABLE dashboard_sessions
  ADD COLUMN needs text CHECK (needs IN ('code', 'enrolment')),
  ADD COLUMN confirmed_at timestamptz NOT NULL DEFAULT now();

-- An owner's switch: every member must sign in with two steps.
ALTER TABLE applications
  ADD COLUMN dashboard_two_step_required boolean NOT NULL DEFAULT false;

-- An invitation is a one-time link; only the SHA-256 of its token is kept.
CREATE TABLE dashboard_invitations (
  id uuid PRIMARY KEY,
  application_id uuid NOT NULL REFERENCES applications (id) ON DELETE CASCADE,
  email text NOT NULL CHECK (length(email) BETWEEN 3 AND 254),
  role text NOT NULL CHECK (role IN ('owner', 'developer', 'operator', 'viewer')),
  token_hash bytea NOT NULL UNIQUE,
  invited_by uuid REFERENCES dashboard_users (id) ON DELETE SET NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  accepted_at timestamptz,
  revoked_at timestamptz
);
CREATE INDEX dashboard_invitations_application_idx
  ON dashboard_invitations (application_id, created_at DESC);
