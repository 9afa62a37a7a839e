-- Dashboard accounts and sessions. An account belongs to one application and is
-- created from the command line; its password is kept as a scrypt hash with its own salt
-- (src/db/dashboard-accounts.ts). A session is a random token in an HttpOnly cookie; only its
-- SHA-256 is stored, so a copy of this table signs no one in.
CREATE TABLE dashboard_users (
  id uuid PRIMARY KEY,
  application_id uuid NOT NULL REFERENCES applications (id) ON DELETE CASCADE,
  email text NOT NULL CHECK (length(email) BETWEEN 3 AND 254),
  password_hash text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX dashboard_users_email_unique ON dashboard_users (lower(email));
CREATE INDEX dashboard_users_application_idx ON dashboard_users (application_id);

CREATE TABLE dashboard_sessions (
  id uuid PRIMARY KEY,
  dashboard_user_id uuid NOT NULL REFERENCES dashboard_users (id) ON DELETE CASCADE,
  token_hash bytea NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz
);
CREATE INDEX dashboard_sessions_user_idx ON dashboard_sessions (dashboard_user_id);

